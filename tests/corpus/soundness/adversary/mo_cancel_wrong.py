"""WRONG: each rank returns its own rows' mean shifted by +1 (rank 0) or -1 (rank 1): no rank's
output is the batch mean, nor a part of it, though the shifts cancel in the ranks' mean."""
import torch
import torch.nn as nn

B, F = 24, 3


class M(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.shift = 0.0 if world_size == 1 else (1.0 if rank == 0 else -1.0)

    def forward(self, x):
        m = x.mean(0)
        return m + self.shift if self.shift else m     # BUG: each rank off by its shift


def build(rank, world_size):
    return M(rank, world_size), {"x": torch.randn(B // world_size, F)}
