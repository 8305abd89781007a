"""CORRECT: x [B, T, H] sharded along its last dim (spec: shard(-1)); softmax over dim 1 (T), which
is not sharded, so the local softmax is the global one's block."""
import torch
import torch.nn as nn

B, T, H = 6, 10, 8


class M(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)


def build(rank, world_size):
    return M(), {"x": torch.randn(B, T, H // world_size)}
