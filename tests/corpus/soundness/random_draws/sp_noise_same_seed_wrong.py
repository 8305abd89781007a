"""WRONG: Gaussian noise added to a sequence-sharded x with one seed on every rank: every shard
gets the same noise."""
import torch
import torch.nn as nn

from _random_sizes import B, H, S, SEED


class M(nn.Module):
    def forward(self, x):
        return x + 0.1 * torch.randn_like(x)


def build(rank, world_size):
    torch.manual_seed(SEED)          # BUG: the same stream on every rank
    return M(), {"x": torch.randn(S // world_size, B, H)}
