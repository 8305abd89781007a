"""WRONG: after a column-parallel forward, each rank scales its weight shard in place (a write the
sequential program does not make).  The output of this call is right; the state after it is not,
so the next call differs."""
import torch
import torch.nn as nn

B, K, F = 4, 6, 8     # x [B, K] replicated; weight [F, K] sharded along F


class ColumnParallel(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size
        self.weight = nn.Parameter(torch.empty(F // world_size, K))

    def forward(self, x):
        y = x @ self.weight.t()
        if self.ws > 1:
            self.weight.mul_(0.5)                    # BUG: only the distributed program writes
        return y


def build(rank, world_size):
    return ColumnParallel(world_size), {"x": torch.randn(B, K)}
