"""CORRECT twin of rng_seed_high_bits_wrong: each rank seeds SEED + rank (the low 32 bits differ),
so the ranks' masks are independent: together, one mask of the whole sequence."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _random_sizes import B, H, P, S, SEED


class M(nn.Module):
    def forward(self, x):
        return F.dropout(x, P, training=True)


def build(rank, world_size):
    torch.manual_seed(SEED + rank + rank * 2**32)
    return M(), {"x": torch.randn(S // world_size, B, H, requires_grad=True)}
