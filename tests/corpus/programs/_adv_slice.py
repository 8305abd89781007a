"""Adversarial slice relations: each rank stores its block of the column-parallel weight PADDED
to twice its rows (storage [2n, HIDDEN]); which half holds the real rows is the layout the spec
states with slices (rows no slice names are unconstrained: the gap).

* ``head``: real rows first; spec ``adv_slice_head.toml`` = concat(slice(r0.w, dim=0, end=n),
  slice(r1.w, dim=0, end=n)).  Bugs: ``pad`` reads the padding half w[n:]; ``off_by_one``
  reads w[1:n+1] (a bound one row off); ``rank1_pad``: rank 1 alone reads its padding.
* ``tail``: real rows last, spec with negative bounds (start=-n, dim=-2).  Bug ``head_read``:
  the rank reads w[:n] as if the real rows came first.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import copy_to, reduce_from

HIDDEN, FFN = 6, 8


class Padded(nn.Module):
    def __init__(self, rank, ws, kind, bug):
        super().__init__()
        self.rank, self.ws, self.kind, self.bug = rank, ws, kind, bug
        n = FFN // ws
        self.w_up = nn.Parameter(torch.empty(2 * n if ws > 1 else FFN, HIDDEN))
        self.w_down = nn.Parameter(torch.empty(HIDDEN, n))

    def forward(self, x):
        n = FFN // self.ws
        if self.ws == 1:
            w = self.w_up
        elif self.kind == "head":
            lo = {"pad": n, "off_by_one": 1, "rank1_pad": n if self.rank == 1 else 0}.get(self.bug, 0)  # BUG (head): rows read from the wrong place
            w = self.w_up[lo:lo + n]
        else:
            w = self.w_up[:n] if self.bug == "head_read" else self.w_up[-n:]  # BUG (tail): real rows are last, read first
        x = copy_to(x, self.ws)
        return reduce_from(F.linear(F.relu(F.linear(x, w)), self.w_down), self.ws)


def _part(first):
    def derive(seq_weight, rank, ws):
        n = FFN // ws
        real = seq_weight[rank * n:(rank + 1) * n]
        pad = torch.randn(n, seq_weight.shape[1], generator=torch.Generator().manual_seed(100 + rank),
                          dtype=seq_weight.dtype)
        return torch.cat([real, pad] if first else [pad, real])
    return derive


head_part, tail_part = _part(True), _part(False)


def make_build(kind, bug=None):
    def build(rank, world_size):
        return Padded(rank, world_size, kind, bug), {"x": torch.randn(5, HIDDEN)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_adv_slice.py:<name>`, and `entangle capture tests/corpus/programs/_adv_slice.py:<name>` captures one).  GLOO_*:
# how run_gloo.py runs it (a derived input, a late peer).
adv_slice_head_correct = make_build('head')
adv_slice_head_correct.GLOO_DERIVE = {"param:w_up": head_part}
adv_slice_head_off_by_one = make_build('head', bug='off_by_one')
adv_slice_head_off_by_one.GLOO_DERIVE = {"param:w_up": head_part}
adv_slice_head_pad = make_build('head', bug='pad')
adv_slice_head_pad.GLOO_DERIVE = {"param:w_up": head_part}
adv_slice_head_rank1_pad = make_build('head', bug='rank1_pad')
adv_slice_head_rank1_pad.GLOO_DERIVE = {"param:w_up": head_part}
adv_slice_tail_correct = make_build('tail')
adv_slice_tail_correct.GLOO_DERIVE = {"param:w_up": tail_part}
adv_slice_tail_head_read = make_build('tail', bug='head_read')
adv_slice_tail_head_read.GLOO_DERIVE = {"param:w_up": tail_part}
