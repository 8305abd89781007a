"""WRONG: sequence-parallel dropout with one seed on every rank (the same mask on every shard),
checked under a spec that writes same_rng.  Capture recorded the ranks' streams: the evidence
(identical streams) decides, the assumption must not couple the masks as independent parts."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _random_sizes import B, H, P, S, SEED


class M(nn.Module):
    def forward(self, x):
        return F.dropout(x, P, training=True)


def build(rank, world_size):
    torch.manual_seed(SEED)                  # BUG: every rank draws the same mask
    return M(), {"x": torch.randn(S // world_size, B, H, requires_grad=True)}
