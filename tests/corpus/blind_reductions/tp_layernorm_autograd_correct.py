"""A LayerNorm over a hidden dim split across 2 tensor-parallel ranks, trained: the statistics'
all-reduces are autograd Functions (Megatron style).  Each rank's outputs read the global mean and
variance, and every rank's output slice differs, so the gradient of an all-reduced sum is the sum
of the ranks' gradients: the backward all-reduces too.
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

TOKENS, HIDDEN = 4, 8
EPS = 1e-5


class _AllReduceSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return funcol.all_reduce(x, "sum", dist.group.WORLD)

    @staticmethod
    def backward(ctx, grad):
        return funcol.all_reduce(grad, "sum", dist.group.WORLD)


def all_reduce_sum(x, world_size):
    return _AllReduceSum.apply(x) if world_size > 1 else x


class ShardedLayerNorm(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.weight = nn.Parameter(torch.ones(HIDDEN // world_size))
        self.bias = nn.Parameter(torch.zeros(HIDDEN // world_size))

    def forward(self, x):
        mean = all_reduce_sum(x.sum(dim=-1, keepdim=True), self.world_size) / HIDDEN
        centered = x - mean
        var = all_reduce_sum(centered.pow(2).sum(dim=-1, keepdim=True), self.world_size) / HIDDEN
        return centered * torch.rsqrt(var + EPS) * self.weight + self.bias


def build(rank, world_size):
    x = torch.randn(TOKENS, HIDDEN // world_size, requires_grad=True)
    return ShardedLayerNorm(world_size), {"x": x}
