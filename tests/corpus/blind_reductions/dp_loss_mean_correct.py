"""Data parallel (4 ranks): the global mean squared error of a linear regressor, reported the way
a training loop logs it: each rank's mean over its batch shard, divided by the world size, summed
over ranks (all-reduce SUM).  Weights are replicated; the batch is split along dim 0.
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

BATCH, IN, OUT = 8, 5, 3


class Regressor(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.proj = nn.Linear(IN, OUT)

    def forward(self, x, y):
        local_loss = (self.proj(x) - y).pow(2).mean()
        loss = local_loss / self.world_size
        if self.world_size > 1:
            loss = funcol.all_reduce(loss, "sum", dist.group.WORLD)
        return loss


def build(rank, world_size):
    return Regressor(world_size), {"x": torch.randn(BATCH // world_size, IN),
                                   "y": torch.randn(BATCH // world_size, OUT)}
