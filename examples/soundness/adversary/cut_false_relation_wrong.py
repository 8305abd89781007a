"""WRONG: a row-parallel layer that never all-reduces its partial products: each rank returns its
own partial sum.  A spec that gives the partial product as [cut] "replicate" (false) must not let
the output refine."""
import torch
import torch.nn as nn

B, K, F = 6, 8, 5     # x [B, K] and weight [F, K] sharded along K


class RowParallel(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(F, K // world_size))

    def forward(self, x):
        y = torch.mm(x, self.weight.t())
        return torch.relu(y)                    # BUG: no all-reduce of the partial products


def build(rank, world_size):
    return RowParallel(world_size), {"x": torch.randn(B, K // world_size)}
