"""CORRECT twin of sp_dropout_same_seed_wrong, offset-consistent: every rank draws the mask of the
whole sequence from the same stream (the same values on every rank) and keeps its own rows."""
import torch
import torch.nn as nn

from _random_sizes import B, H, P, S, SEED


class M(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.ws = rank, world_size

    def forward(self, x):
        keep = torch.rand(S, B, H) > P               # the whole sequence's mask
        rows = S // self.ws
        return x * keep[self.rank * rows:(self.rank + 1) * rows] / (1 - P)


def build(rank, world_size):
    torch.manual_seed(SEED)
    return M(rank, world_size), {"x": torch.randn(S // world_size, B, H, requires_grad=True)}
