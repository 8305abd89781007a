"""WRONG: sequence-parallel dropout whose ranks seed SEED + rank * 2**32: different seeds, but the
CPU generator (mt19937) keeps only the low 32 bits of a seed, so both ranks draw the same mask."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _random_sizes import B, H, P, S, SEED


class M(nn.Module):
    def forward(self, x):
        return F.dropout(x, P, training=True)


def build(rank, world_size):
    torch.manual_seed(SEED + rank * 2**32)     # BUG: the same mt19937 stream on every rank
    return M(), {"x": torch.randn(S // world_size, B, H, requires_grad=True)}
