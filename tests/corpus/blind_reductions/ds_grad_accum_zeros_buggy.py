"""DeepSpeed-style gradient accumulation written out (data parallel 2, 3 micro-batches).

A linear regressor's weight gradient is accumulated into a zeros buffer over the micro-batches
(each micro-batch's gradient of the global mean loss: 2 x^T (x w - y) / (micro * global batch)),
then all-reduced (SUM) at the accumulation boundary over the data-parallel ranks, which hold dim-1 (batch) shards of every
micro-batch.
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

MICRO, BATCH, IN, OUT = 3, 4, 5, 2


class GradAccum(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.weight = nn.Parameter(torch.randn(IN, OUT))

    def micro_grad(self, x, y):
        residual = x @ self.weight - y
        return 2.0 * x.t() @ residual / (MICRO * BATCH * OUT)

    def forward(self, xs, ys):
        grad_acc = torch.zeros_like(self.weight)
        for m in range(MICRO):
            grad_acc = grad_acc + self.micro_grad(xs[m], ys[m])
            reduce_now = m == MICRO - 1  # only at the gradient-accumulation boundary
            if self.world_size > 1:  # BUG: the accumulator is all-reduced at every micro-batch
                grad_acc = funcol.all_reduce(grad_acc, "sum", dist.group.WORLD)
        return grad_acc


def build(rank, world_size):
    return GradAccum(world_size), {"xs": torch.randn(MICRO, BATCH // world_size, IN),
                                   "ys": torch.randn(MICRO, BATCH // world_size, OUT)}
