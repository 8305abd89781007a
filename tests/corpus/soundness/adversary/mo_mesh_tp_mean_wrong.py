"""WRONG ([dp=2, tp=2] mesh): the ranks' means averaged over the TP group (the replicas of one dp
shard: the mean of equal values is the shard's own mean) instead of the dp group."""
import torch
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

from _adv_groups import mesh_groups

B, F = 8, 3
TP = 2


class M(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.ws = world_size
        self.dp, self.tp = mesh_groups(rank) if world_size == 4 else (None, None)

    def forward(self, x):
        m = x.mean(0)
        if self.ws == 1:
            return m
        return funcol.all_reduce(m, "sum", self.tp) / TP     # BUG: the tp group, not dp


def build(rank, world_size):
    return M(rank, world_size), {"x": torch.randn(B // 2 if world_size == 4 else B, F)}
