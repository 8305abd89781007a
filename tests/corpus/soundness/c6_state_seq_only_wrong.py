"""WRONG: the sequential program decays its weight in place after the forward; the ranks forget to
(a write only the sequential program makes: the ranks' state after the call is stale)."""
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
        if self.ws == 1:                             # BUG: the ranks should decay their shards too
            self.weight.mul_(0.5)
        return y


def build(rank, world_size):
    return ColumnParallel(world_size), {"x": torch.randn(B, K)}
