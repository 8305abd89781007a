"""CORRECT ([dp=2, tp=2] mesh, 4 ranks): the batch split over dp, replicated over tp.  The ranks'
means all-reduced over the whole world and divided by the world size: each dp shard's mean
counted twice (once per tp replica), over 4 -- the mean over the dp shards."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, F = 8, 3


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, x):
        m = x.mean(0)
        if self.ws == 1:
            return m
        return funcol.all_reduce(m, "sum", dist.group.WORLD) / self.ws


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B // 2 if world_size == 4 else B, F)}
