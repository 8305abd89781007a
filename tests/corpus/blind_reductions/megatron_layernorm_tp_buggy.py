"""A LayerNorm whose hidden dim is split across tensor-parallel ranks (2), as after a
column-parallel layer without a gather: the mean and the variance over the whole hidden dim come
from all-reduced sums (SUM) over the ranks' slices; weight and bias are split with the hidden dim.
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

TOKENS, HIDDEN = 4, 8
EPS = 1e-5


class ShardedLayerNorm(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.weight = nn.Parameter(torch.ones(HIDDEN // world_size))
        self.bias = nn.Parameter(torch.zeros(HIDDEN // world_size))

    def forward(self, x):
        local_sum = x.sum(dim=-1, keepdim=True)
        if self.world_size > 1:
            local_sum = funcol.all_reduce(local_sum, "sum", dist.group.WORLD)
        mean = local_sum / HIDDEN
        centered = x - mean
        sq_sum = centered.pow(2).sum(dim=-1, keepdim=True)
        if self.world_size > 1:
            sq_sum = funcol.all_reduce(sq_sum, "sum", dist.group.WORLD)
        var = sq_sum / (HIDDEN // self.world_size)  # BUG: divided by the local width
        return centered * torch.rsqrt(var + EPS) * self.weight + self.bias


def build(rank, world_size):
    return ShardedLayerNorm(world_size), {"x": torch.randn(TOKENS, HIDDEN // world_size)}
