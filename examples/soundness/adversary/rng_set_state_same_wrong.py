"""WRONG: sequence-parallel dropout whose ranks seed SEED + rank and then restore one saved state
(torch.set_rng_state of a generator seeded with SEED): every rank draws the same mask."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _random_sizes import B, H, P, S, SEED


class M(nn.Module):
    def forward(self, x):
        return F.dropout(x, P, training=True)


def build(rank, world_size):
    g = torch.Generator().manual_seed(SEED)
    torch.manual_seed(SEED + rank)
    torch.set_rng_state(g.get_state())       # BUG: the same state on every rank
    return M(), {"x": torch.randn(S // world_size, B, H, requires_grad=True)}
