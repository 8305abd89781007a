"""WRONG: a row-parallel layer that returns its partial products (the [cut] tensor itself) without
the all-reduce.  The cut (mm = partial) is true; the output is expected replicated."""
import torch
import torch.nn as nn

B, K, F = 6, 8, 5     # x [B, K] and weight [F, K] sharded along K


class RowParallel(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(F, K // world_size))

    def forward(self, x):
        return torch.mm(x, self.weight.t())     # BUG: the partial sums are never reduced


def build(rank, world_size):
    return RowParallel(world_size), {"x": torch.randn(B, K // world_size)}
