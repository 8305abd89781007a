"""WRONG twin of tp_dropout_same_seed_correct: rank 0 makes a dropout whose result it never uses
before the one it returns.  Run eagerly, that draw advances rank 0's stream, so its returned mask
is not rank 1's: the replicas diverge.  (torch's trace drops the unused draw: the graphs alone
show both ranks drawing at the same position; capture's eager record of the draws does not.)"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _random_sizes import B, H, P, SEED


class M(nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.rank = rank

    def forward(self, h):
        if self.rank == 0:
            F.dropout(h, P, training=True)           # BUG: a draw only rank 0 makes
        return F.dropout(h, P, training=True)


def build(rank, world_size):
    torch.manual_seed(SEED)
    return M(rank), {"h": torch.randn(B, H, requires_grad=True)}
