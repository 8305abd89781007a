"""CORRECT twin of mask_reuse_wrong: every rank drops elements of cat([h, h], -1) itself (a stream of
its own per rank), so each copy has its own mask, as in the sequential program."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _random_sizes import B, H, P, SEED


class M(nn.Module):
    def forward(self, h):
        return F.dropout(torch.cat([h, h], -1), P, training=True)


def build(rank, world_size):
    torch.manual_seed(SEED + rank)
    return M(), {"h": torch.randn(B // world_size, H, requires_grad=True)}
