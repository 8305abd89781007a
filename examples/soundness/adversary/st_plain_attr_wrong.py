"""WRONG: a running sum kept in a plain tensor attribute (not a registered buffer), updated in place
by the ranks only.  The state after the call differs (the next call reads it)."""
import torch
import torch.nn as nn

B, K, F = 4, 6, 8


class ColumnParallel(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size
        self.weight = nn.Parameter(torch.empty(F // world_size, K))
        self.acc = torch.zeros(K)            # a plain attribute, not a buffer

    def forward(self, x):
        y = x @ self.weight.t() + self.acc.sum()
        if self.ws > 1:
            self.acc.add_(x[0])                  # BUG: only the ranks accumulate
        return y


def build(rank, world_size):
    return ColumnParallel(world_size), {"x": torch.randn(B, K)}
