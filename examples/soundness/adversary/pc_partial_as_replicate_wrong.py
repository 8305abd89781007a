"""WRONG: the input is a partial sum over the ranks (each holds a share); each rank applies tanh to
its share and returns it, as if it held the whole input."""
import torch
import torch.nn as nn

R, C = 3, 4


class M(nn.Module):
    def forward(self, x):
        return x.tanh()                          # BUG: tanh of a share, not of the sum


def build(rank, world_size):
    return M(), {"x": torch.randn(R, C)}
