"""CORRECT twin of c6_state_write_wrong: both programs scale the weight in place after the forward
(the sequential program its whole weight, each rank its shard): the state keeps its relation."""
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
        self.weight.mul_(0.5)
        return y


def build(rank, world_size):
    return ColumnParallel(world_size), {"x": torch.randn(B, K)}
