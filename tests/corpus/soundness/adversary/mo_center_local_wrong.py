"""WRONG: each rank's rows centred by its own rows' mean (never averaged)."""
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
        return x - x.mean(0, keepdim=True)     # BUG: the local mean


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B // world_size, F)}
