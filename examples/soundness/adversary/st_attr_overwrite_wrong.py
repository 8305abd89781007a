"""WRONG: a cache kept in a plain tensor attribute (not a registered buffer) is overwritten in place
with the first row of the (replicated) input; rank 1 writes the second row instead.  The replicas'
state after the call differs (the next call reads it).  Capture names the attribute's port
``const:L[_self_].cache``."""
import torch
import torch.nn as nn

B, K = 4, 6     # x [B, K] replicated


class M(nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.row = 1 if rank == 1 else 0         # BUG: rank 1 caches another row
        self.cache = torch.zeros(K)              # a plain attribute, not a buffer

    def forward(self, x):
        self.cache.copy_(x[self.row])
        return x * 2


def build(rank, world_size):
    return M(rank), {"x": torch.randn(B, K)}
