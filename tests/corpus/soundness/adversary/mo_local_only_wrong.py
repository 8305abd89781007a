"""WRONG: each rank returns the mean of its own rows, never averaged over the ranks (the
all-reduce is missing)."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, F = 24, 3     # x [B, F] split along B over the ranks


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, x):
        return x.mean(0)     # BUG: no all-reduce, no division


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B // world_size, F)}
