"""CORRECT twin of st_attr_overwrite_wrong: every rank caches the first row of the input in the plain
tensor attribute, as the sequential program does."""
import torch
import torch.nn as nn

B, K = 4, 6     # x [B, K] replicated


class M(nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.row = 0
        self.cache = torch.zeros(K)              # a plain attribute, not a buffer

    def forward(self, x):
        self.cache.copy_(x[self.row])
        return x * 2


def build(rank, world_size):
    return M(rank), {"x": torch.randn(B, K)}
