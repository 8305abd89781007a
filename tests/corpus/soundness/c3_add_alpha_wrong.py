"""WRONG: torch.add(a, b, alpha=2) in the distributed program, alpha=1 in seq."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B, N = 6, 10     # a, b [B, N] sharded along B


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, a, b):
        if self.ws == 1:
            return torch.add(a, b)
        return torch.add(a, b, alpha=2)    # BUG


def build(rank, world_size):
    return M(world_size), {"a": torch.randn(B // world_size, N), "b": torch.randn(B // world_size, N)}
