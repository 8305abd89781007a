"""CORRECT: two dropouts in a row on a replicated activation, the same seed on every rank: each
rank's second mask is drawn after its first from one stream (independent of it), and equal to
the other ranks' second mask."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _random_sizes import B, H, P, SEED


class M(nn.Module):
    def forward(self, h):
        return F.dropout(F.dropout(h, P, training=True), P, training=True)


def build(rank, world_size):
    torch.manual_seed(SEED)
    return M(), {"h": torch.randn(B, H, requires_grad=True)}
