"""CORRECT: the ranks hold the sequential input negated (x = neg(r0.x), a sign convention); each
computes -2 * its x, which is 2 * x."""
import torch
import torch.nn as nn

B, K = 3, 4


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, x):
        return x * 2 if self.ws == 1 else x * -2


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B, K)}
