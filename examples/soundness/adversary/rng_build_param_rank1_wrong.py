"""WRONG: dropout on a replicated activation with one seed on every rank, but rank 1 initialises
an extra parameter in build (a real run draws it before the forward): its stream is ahead, so the
replicas drop different elements."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _random_sizes import B, H, P, S, SEED


class M(nn.Module):
    def __init__(self, extra):
        super().__init__()
        self.extra = [nn.Linear(3, 3)] if extra else []    # BUG: only rank 1 draws its init (not a submodule)

    def forward(self, x):
        return F.dropout(x, P, training=True)


def build(rank, world_size):
    torch.manual_seed(SEED)
    return M(rank == 1), {"x": torch.randn(S, B, H, requires_grad=True)}
