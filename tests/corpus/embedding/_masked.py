"""A vocab-parallel embedding written the way DTensor writes it (``_MaskPartial``): each rank holds
a block of the table's rows (``torch.chunk``: uneven when the vocabulary does not divide), sets the
ids it does not own to 0 with ``local[mask] = 0`` (index_put), looks up, zeroes the output rows of
those ids with ``out[mask] = 0.0`` and all-reduces.  Every id of the vocabulary occurs, the first
and last of every block included.  Bugs (each in one line):

* ``off_by_one``: the block's inclusive end compared with ``>=`` instead of ``>``: the last id of
  every block is masked on its own rank too (a zero row);
* ``unzeroed``: the output rows of foreign ids are not zeroed (they read row 0 of every rank);
* ``wrong_offset``: the offset of an even split (rank * (V // ws)) with the uneven blocks: ids are
  shifted by another block's start.

``form="clamp_mul"`` writes it as torchtitan does: the shifted ids clamped into the block's rows,
the looked-up rows multiplied by the owner mask (``~mask``) cast to float -- equal only for a
finite table (inf * 0 is nan), so its spec also states ``finite_values``.
"""
import torch
import torch.nn as nn
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn.functional as F

VOCAB, HIDDEN = 15, 4


def block(rank, ws):
    sizes = [len(c) for c in torch.arange(VOCAB).chunk(ws)]
    return sum(sizes[:rank]), sizes[rank]


class MaskedEmbedding(nn.Module):
    def __init__(self, rank, ws, bug, form):
        super().__init__()
        self.rank, self.ws, self.bug, self.form = rank, ws, bug, form
        self.weight = nn.Parameter(torch.empty(block(rank, ws)[1], HIDDEN))

    def forward(self, ids):
        if self.ws == 1:
            return F.embedding(ids, self.weight)
        lo, n = block(self.rank, self.ws)
        if self.bug == "wrong_offset":
            lo = self.rank * (VOCAB // self.ws)  # BUG: the start of an even split, not of the rank's block
        last = lo + n - 1
        if self.bug == "off_by_one":
            mask = (ids < lo) | (ids >= last)  # BUG: >= at the inclusive end masks the block's last id
        else:
            mask = (ids < lo) | (ids > last)
        if self.form == "clamp_mul":          # torchtitan's: ids clamped into the block, rows times the owner mask
            own = ~mask
            out = F.embedding((ids - lo).clamp(0, n - 1), self.weight)
            if self.bug == "unzeroed":
                out = out * torch.ones_like(own).unsqueeze(-1).float()  # BUG: the rows of foreign ids kept (times one)
            else:
                out = out * own.unsqueeze(-1).float()
            return funcol.all_reduce(out, "sum", dist.group.WORLD)
        local = ids - lo
        local[mask] = 0
        out = F.embedding(local, self.weight)
        if self.bug == "unzeroed":
            out = out * 1.0  # BUG: the rows of foreign ids are not zeroed (index_put form)
        else:
            out[mask] = 0.0
        return funcol.all_reduce(out, "sum", dist.group.WORLD)


def make_build(bug=None, form="index_put"):
    def build(rank, world_size):
        ids = (torch.arange(3 * VOCAB) * 7 % VOCAB).view(3, VOCAB)
        return MaskedEmbedding(rank, world_size, bug, form), {"ids": ids}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_masked.py:<name>`, and `entangle capture tests/corpus/embedding/_masked.py:<name>` captures one).
clamp_mul_correct = make_build(form='clamp_mul')
clamp_mul_off_by_one = make_build('off_by_one', form='clamp_mul')
clamp_mul_unzeroed = make_build('unzeroed', form='clamp_mul')
clamp_mul_wrong_offset = make_build('wrong_offset', form='clamp_mul')
masked_correct = make_build()
masked_off_by_one = make_build('off_by_one')
masked_unzeroed = make_build('unzeroed')
masked_wrong_offset = make_build('wrong_offset')
