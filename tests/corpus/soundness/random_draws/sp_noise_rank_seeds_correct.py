"""CORRECT twin of sp_noise_same_seed_wrong: a stream of its own per rank, independent noise per shard."""
import torch
import torch.nn as nn

from _random_sizes import B, H, S, SEED


class M(nn.Module):
    def forward(self, x):
        return x + 0.1 * torch.randn_like(x)


def build(rank, world_size):
    torch.manual_seed(SEED + rank)
    return M(), {"x": torch.randn(S // world_size, B, H)}
