"""WRONG twin of tp_dropout_same_seed_correct: each rank seeds a stream of its own, so the ranks
drop different elements of the same replicated activation: the replicas diverge."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _random_sizes import B, H, P, SEED


class M(nn.Module):
    def forward(self, h):
        return F.dropout(h, P, training=True)


def build(rank, world_size):
    torch.manual_seed(SEED + rank)   # BUG: a replicated activation needs the same stream on every rank
    return M(), {"h": torch.randn(B, H, requires_grad=True)}
