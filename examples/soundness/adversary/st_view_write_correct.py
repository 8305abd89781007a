"""CORRECT twin of st_view_write_wrong: row 0 of the whole weight lives on rank 0, which alone
scales it."""
import torch
import torch.nn as nn

B, K, F = 4, 6, 8     # x [B, K] replicated; weight [F, K] sharded along F


class ColumnParallel(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.first = rank == 0
        self.weight = nn.Parameter(torch.empty(F // world_size, K))

    def forward(self, x):
        y = x @ self.weight.t()
        if self.first:
            with torch.no_grad():
                self.weight[0].mul_(0.5)
        return y


def build(rank, world_size):
    return ColumnParallel(rank, world_size), {"x": torch.randn(B, K)}
