"""WRONG: a mask reused across copies.  The sequential program drops elements of cat([h, h], -1) (each
copy its own mask); each rank (h sharded along its rows, a stream of its own) drops elements
of its h once and concatenates the result twice: both copies share one mask."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _random_sizes import B, H, P, SEED


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, h):
        if self.ws == 1:
            return F.dropout(torch.cat([h, h], -1), P, training=True)
        d = F.dropout(h, P, training=True)
        return torch.cat([d, d], -1)                      # BUG: one mask for both copies


def build(rank, world_size):
    torch.manual_seed(SEED + rank)
    return M(world_size), {"h": torch.randn(B // world_size, H, requires_grad=True)}
