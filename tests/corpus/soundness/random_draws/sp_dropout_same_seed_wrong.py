"""WRONG: sequence-parallel dropout with one seed on every rank (Megatron's known issue: the
sequence-parallel dropout not run under the forked model-parallel RNG).  Each rank drops elements
of its own rows of x with the same stream, so every shard gets the same mask: rows i and S/2 + i
are dropped alike, where the sequential mask's rows are independent."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _random_sizes import B, H, P, S, SEED


class M(nn.Module):
    def forward(self, x):
        return F.dropout(x, P, training=True)


def build(rank, world_size):
    torch.manual_seed(SEED)          # BUG: the same stream on every rank
    return M(), {"x": torch.randn(S // world_size, B, H, requires_grad=True)}
