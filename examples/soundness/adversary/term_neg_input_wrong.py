"""WRONG: the ranks hold the sequential input negated (x = neg(r0.x)) but compute 2 * their x, as if
it were x itself: -2 * x."""
import torch
import torch.nn as nn

B, K = 3, 4


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, x):
        return x * 2                    # BUG: the ranks' x is the negated input


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B, K)}
