"""CORRECT: the ranks' means all-reduced, then multiplied by 1 / world size (0.5, 0.25: exact)."""
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
        m = x.mean(0)
        if self.ws == 1:
            return m
        return funcol.all_reduce(m, "sum", dist.group.WORLD) * (1.0 / self.ws)


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B // world_size, F)}
