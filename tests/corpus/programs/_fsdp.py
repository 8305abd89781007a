"""FSDP / ZeRO-3: the weight is sharded along dim 0 (each rank owns rows), the batch is sharded.
Forward all-gathers the weight; backward reduce-scatters its gradient and divides by W (the ranks'
losses are local means).  The reported loss is the mean of the ranks' losses.  Bug
``no_reduce_scatter``: the backward keeps the rank's slice of its OWN gradient (no reduction over
ranks)."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

from _dp import _AvgLoss


class _FSDPGather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, w, ws, rank, bug):
        ctx.ws, ctx.rank, ctx.bug, ctx.n = ws, rank, bug, w.shape[0]
        return funcol.all_gather_tensor(w, 0, dist.group.WORLD)

    @staticmethod
    def backward(ctx, grad):
        if ctx.bug == "no_reduce_scatter":
            g = grad[ctx.rank * ctx.n:(ctx.rank + 1) * ctx.n]  # BUG: the rank's own gradient rows, never reduced
        else:
            g = funcol.reduce_scatter_tensor(grad.contiguous(), "sum", 0, dist.group.WORLD)
        return g / ctx.ws, None, None, None


class FSDP(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        self.weight = nn.Parameter(torch.empty(6 // ws, 5))

    def forward(self, x):
        w = self.weight if self.ws == 1 else _FSDPGather.apply(self.weight, self.ws, self.rank, self.bug)
        loss = (x @ w.t()).tanh().pow(2).mean()
        return loss if self.ws == 1 else _AvgLoss.apply(loss, self.ws, True)


def make_build(bug=None):
    def build(rank, world_size):
        return FSDP(rank, world_size, bug), {"x": torch.randn(4 // world_size, 5)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_fsdp.py:<name>`, and `entangle capture tests/corpus/programs/_fsdp.py:<name>` captures one).
fsdp_correct = make_build()
fsdp_no_reduce_scatter = make_build(bug='no_reduce_scatter')
