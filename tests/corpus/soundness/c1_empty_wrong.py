"""WRONG: the distributed program computes y = 2 * relu(x) but returns an uninitialised buffer of
its shape; seq returns y."""
import torch
import torch.nn as nn

B, F = 6, 10     # x [B, F] sharded along B


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, x):
        y = torch.relu(x) * 2
        if self.ws > 1:
            return torch.empty_like(y)     # BUG
        return y


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B // world_size, F)}
