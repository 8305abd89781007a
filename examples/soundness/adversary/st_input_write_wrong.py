"""WRONG: the ranks scale their (replicated) input in place after using it; the sequential program
does not.  The caller's tensor is state too: it reads x again after the call."""
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
            x.mul_(2)                                # BUG: only the ranks write the caller's input
        return y


def build(rank, world_size):
    return ColumnParallel(world_size), {"x": torch.randn(B, K)}
