"""WRONG: the distributed program uses the tanh approximation of gelu; seq uses exact gelu."""
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
            return F.gelu(a) * b
        return F.gelu(a, approximate="tanh") * b    # BUG


def build(rank, world_size):
    return M(world_size), {"a": torch.randn(B // world_size, N), "b": torch.randn(B // world_size, N)}
