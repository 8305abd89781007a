"""WRONG: x [B, T, H] sharded along dim -1; each rank returns x.sum(dim=-1) of its block (a partial
sum) where seq returns the full sum (claimed replicated)."""
import torch
import torch.nn as nn

B, T, H = 6, 10, 8


class M(nn.Module):
    def forward(self, x):
        return x.sum(dim=-1)     # BUG at world size > 1: missing all-reduce


def build(rank, world_size):
    return M(), {"x": torch.randn(B, T, H // world_size)}
