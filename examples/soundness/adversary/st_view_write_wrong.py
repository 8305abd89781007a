"""WRONG: the sequential program scales row 0 of its weight in place after the forward; each rank
scales row 0 of its own shard -- rows 0 and F/2 of the whole weight on 2 ranks."""
import torch
import torch.nn as nn

B, K, F = 4, 6, 8     # x [B, K] replicated; weight [F, K] sharded along F


class ColumnParallel(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(F // world_size, K))

    def forward(self, x):
        y = x @ self.weight.t()
        with torch.no_grad():
            self.weight[0].mul_(0.5)                 # BUG: on the ranks, row 0 of every shard
        return y


def build(rank, world_size):
    return ColumnParallel(world_size), {"x": torch.randn(B, K)}
