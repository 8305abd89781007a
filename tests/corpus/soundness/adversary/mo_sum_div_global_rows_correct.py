"""CORRECT twin: the ranks' row sums all-reduced and divided by the global row count."""
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
        if self.ws == 1:
            return x.mean(0)
        return funcol.all_reduce(x.sum(0), "sum", dist.group.WORLD) / B


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B // world_size, F)}
