"""WRONG ([dp=2, tp=2] mesh): the ranks' means all-reduced over the whole world (4 ranks, each dp
shard's mean twice) but divided by the dp size (2): twice the batch mean."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, F = 8, 3
DP = 2


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, x):
        m = x.mean(0)
        if self.ws == 1:
            return m
        return funcol.all_reduce(m, "sum", dist.group.WORLD) / DP     # BUG: summed over tp replicas too


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B // DP if world_size == 4 else B, F)}
