"""Data parallelism with gradient accumulation over micro-batches of unequal token counts (a
padding mask).  The sequential loss is the mean over all valid tokens.  Correct: every micro-batch
sums its token losses and divides by the GLOBAL number of valid tokens (all-reduced); the ranks'
losses are then summed.  Bug ``per_microbatch_mean``: each micro-batch is normalised by its own
token count and the micro-batch means are averaged (the Hugging Face gradient-accumulation bug,
transformers#34191), then averaged over ranks."""
import torch
import torch.nn as nn

from _common import copy_to, reduce_from

MICRO = 2


class Accum(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.weight = nn.Parameter(torch.empty(1, 3))

    def forward(self, x, mask):
        w = copy_to(self.weight, self.ws)
        m = mask.to(x.dtype)
        total = reduce_from(m.sum(), self.ws)
        loss = 0.0
        for xb, mb in zip(x.chunk(MICRO), m.chunk(MICRO)):
            tok = (xb @ w.t()).squeeze(-1).pow(2) * mb
            if self.bug == "per_microbatch_mean":
                loss = loss + tok.sum() / mb.sum() / (MICRO * self.ws)  # BUG: normalised per micro-batch
            else:
                loss = loss + tok.sum() / total
        return reduce_from(loss, self.ws)


def make_build(bug=None):
    def build(rank, world_size):
        b = 4 // world_size
        lengths = torch.tensor([5, 2, 4, 1])[rank * b:(rank + 1) * b]
        mask = torch.arange(5)[None, :] < lengths[:, None]
        return Accum(world_size, bug), {"x": torch.randn(b, 5, 3), "mask": mask}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_grad_accum.py:<name>`, and `entangle capture tests/corpus/programs/_grad_accum.py:<name>` captures one).
grad_accum_correct = make_build()
grad_accum_per_microbatch_mean = make_build(bug='per_microbatch_mean')
