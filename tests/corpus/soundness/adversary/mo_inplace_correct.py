"""CORRECT: the ranks' means all-reduced in place (dist.all_reduce), then divided in place by the world size."""
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
        m = m.clone()
        dist.all_reduce(m)
        m.div_(self.ws)
        return m


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B // world_size, F)}
