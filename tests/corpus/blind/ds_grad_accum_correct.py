"""DeepSpeed-style data parallelism with gradient accumulation (the engine's design: the loss of
each micro-batch is scaled by 1 / gradient_accumulation_steps, gradients are all-reduced across
the data-parallel ranks).  The global batch is fixed: with W ranks each rank gets
global_batch / W samples, i.e. global_batch / (micro_batch * W) accumulation steps.  Each rank's
returned loss is its part of the global mean (its micro-batch means over the steps, divided by
the data-parallel size): the ranks' losses sum to the mean over the global batch.  Parameters
pass through an identity whose backward all-reduces their gradient (DeepSpeed's allreduce hook).
"""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

IN, OUT, GLOBAL_BATCH, MICRO_BATCH = 4, 3, 8, 2


class _AllReduceGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p):
        return p

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad)
        return grad


class Engine(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.dp_world_size = world_size
        self.gradient_accumulation_steps = GLOBAL_BATCH // (MICRO_BATCH * self.dp_world_size)
        self.linear = nn.Linear(IN, OUT)

    def params(self):
        w, b = self.linear.weight, self.linear.bias
        if self.world_size > 1:
            w, b = _AllReduceGrad.apply(w), _AllReduceGrad.apply(b)
        return w, b

    def forward(self, x, y):
        w, b = self.params()
        total = torch.zeros(())
        for xm, ym in zip(x.split(MICRO_BATCH), y.split(MICRO_BATCH)):
            loss = F.mse_loss(F.linear(xm, w, b), ym)
            total = total + loss / self.gradient_accumulation_steps
        return total / self.dp_world_size


def build(rank, world_size):
    x = torch.randn(GLOBAL_BATCH // world_size, IN)
    y = torch.randn(GLOBAL_BATCH // world_size, OUT)
    return Engine(world_size), {"x": x, "y": y}
