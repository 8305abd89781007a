"""Data parallelism: the batch is sharded, the weight replicated; each rank computes the mean loss
of its rows.  The reported loss is the mean of the ranks' losses (all-reduce / W, forward) and,
in the joint graph, each rank back-propagates its own loss (identity backward) while the weight's
gradient is averaged over ranks (DDP's all-reduce / W, in-graph as an autograd.Function).

Bugs: ``loss_sum``: the reported loss is all-reduced but not divided by W (loss scaled by the
wrong factor); ``grad_sum``: gradients are summed, not averaged (DDP with ``gradient_as_bucket``
hooks that forget the 1/W division)."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn


class _AvgLoss(torch.autograd.Function):      # all-reduce / W forward, identity backward
    @staticmethod
    def forward(ctx, loss, ws, divide):
        s = funcol.all_reduce(loss, "sum", dist.group.WORLD)
        return s / ws if divide else s

    @staticmethod
    def backward(ctx, grad):
        return grad, None, None


class _DDPGrad(torch.autograd.Function):      # identity forward, all-reduce / W backward
    @staticmethod
    def forward(ctx, w, ws, divide):
        ctx.ws, ctx.divide = ws, divide
        return w

    @staticmethod
    def backward(ctx, grad):
        s = funcol.all_reduce(grad, "sum", dist.group.WORLD)
        return (s / ctx.ws if ctx.divide else s), None, None


class DP(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.weight = nn.Parameter(torch.empty(3, 5))

    def forward(self, x, t):
        w = self.weight
        if self.ws > 1:
            w = _DDPGrad.apply(w, self.ws, self.bug != "grad_sum")  # BUG (grad_sum): summed, not averaged
        loss = ((x @ w.t()).sum(-1) - t).pow(2).mean()
        if self.ws > 1:
            loss = _AvgLoss.apply(loss, self.ws, self.bug != "loss_sum")  # BUG (loss_sum): not divided by W
        return loss


def make_build(bug=None):
    def build(rank, world_size):
        return DP(world_size, bug), {"x": torch.randn(8 // world_size, 5), "t": torch.randn(8 // world_size)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_dp.py:<name>`, and `entangle capture tests/corpus/programs/_dp.py:<name>` captures one).
dp_avg_correct = make_build()
dp_grad_sum = make_build(bug='grad_sum')
dp_loss_sum = make_build(bug='loss_sum')
