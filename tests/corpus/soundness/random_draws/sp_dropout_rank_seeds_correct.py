"""CORRECT twin of sp_dropout_same_seed_wrong: each rank seeds a stream of its own, so the ranks'
masks are independent: together, a mask of the whole sequence with independent elements."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _random_sizes import B, H, P, S, SEED


class M(nn.Module):
    def forward(self, x):
        return F.dropout(x, P, training=True)


def build(rank, world_size):
    torch.manual_seed(SEED + rank)
    return M(), {"x": torch.randn(S // world_size, B, H, requires_grad=True)}
