"""WRONG: x [B, T, H] is sharded along its LAST dim (spec: shard(-1)) and each rank takes a local
softmax over dim -1: the normaliser only covers the rank's half of the row."""
import torch
import torch.nn as nn

B, T, H = 6, 10, 8


class M(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)     # BUG at world size > 1: dim -1 is the sharded one


def build(rank, world_size):
    return M(), {"x": torch.randn(B, T, H // world_size)}
