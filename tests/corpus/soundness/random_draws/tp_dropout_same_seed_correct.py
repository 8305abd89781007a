"""CORRECT: dropout on a replicated activation (a tensor-parallel region) with the same seed on
every rank: every rank draws the same mask, so the replicas stay equal, each the sequential output."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _random_sizes import B, H, P, SEED


class M(nn.Module):
    def forward(self, h):
        return F.dropout(h, P, training=True)


def build(rank, world_size):
    torch.manual_seed(SEED)
    return M(), {"h": torch.randn(B, H, requires_grad=True)}
