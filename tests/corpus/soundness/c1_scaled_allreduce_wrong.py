"""WRONG: row-parallel linear, correct all-reduce, but every rank returns the result scaled by 3."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, K, F = 6, 10, 8     # x [B, K] sharded along K; weight [F, K] sharded along K


class RowParallel(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size
        self.weight = nn.Parameter(torch.empty(F, K // world_size))

    def forward(self, x):
        y = x @ self.weight.t()
        if self.ws > 1:
            y = funcol.all_reduce(y, "sum", dist.group.WORLD)
            return y * 3            # BUG: seq returns y
        return y


def build(rank, world_size):
    return RowParallel(world_size), {"x": torch.randn(B, K // world_size)}
