"""WRONG: each rank takes the MEAN of its row block, then the means are all-reduced (sum of means =
world_size x the mean); seq takes the mean over all rows."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, F = 6, 10     # x [B, F] sharded along B


class Mean(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, x):
        if self.ws == 1:
            return x.mean(dim=0)
        return funcol.all_reduce(x.mean(dim=0), "sum", dist.group.WORLD)    # BUG


def build(rank, world_size):
    return Mean(world_size), {"x": torch.randn(B // world_size, F)}
