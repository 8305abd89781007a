"""WRONG: row-parallel linear whose bias [F] (replicated) is added to the [B, F] partial product BEFORE
the all-reduce: the bias is summed world_size times."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, K, F = 6, 10, 8     # x [B, K] and weight [F, K] sharded along K


class RowParallel(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size
        self.weight = nn.Parameter(torch.empty(F, K // world_size))
        self.bias = nn.Parameter(torch.empty(F))

    def forward(self, x):
        if self.ws == 1:
            return x @ self.weight.t() + self.bias
        return funcol.all_reduce(x @ self.weight.t() + self.bias, "sum", dist.group.WORLD)    # BUG


def build(rank, world_size):
    return RowParallel(world_size), {"x": torch.randn(B, K // world_size)}
