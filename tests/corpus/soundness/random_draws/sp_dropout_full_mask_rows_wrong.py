"""WRONG twin of sp_dropout_full_mask_correct: every rank draws the whole sequence's mask but keeps
the first rows, whatever its rank: rank 1's rows get rank 0's mask."""
import torch
import torch.nn as nn

from _random_sizes import B, H, P, S, SEED


class M(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.ws = rank, world_size

    def forward(self, x):
        keep = torch.rand(S, B, H) > P
        rows = S // self.ws
        return x * keep[0:rows] / (1 - P)            # BUG: not this rank's rows


def build(rank, world_size):
    torch.manual_seed(SEED)
    return M(rank, world_size), {"x": torch.randn(S // world_size, B, H, requires_grad=True)}
