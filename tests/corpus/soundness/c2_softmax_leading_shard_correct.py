"""CORRECT: x [B, T, H] sharded along its LEADING dim; softmax over dim -1 (not sharded)."""
import torch
import torch.nn as nn

B, T, H = 6, 10, 8


class M(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def build(rank, world_size):
    return M(), {"x": torch.randn(B // world_size, T, H)}
