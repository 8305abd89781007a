"""WRONG: dropout on a replicated activation (a tensor-parallel region) with one seed on every rank,
but rank 1 draws a real (CPU) noise tensor in build before the forward: its stream is ahead, so
the replicas drop different elements."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _random_sizes import B, H, P, S, SEED


class M(nn.Module):
    def __init__(self, noise=None):
        super().__init__()
        self.noise = noise

    def forward(self, x):
        return F.dropout(x, P, training=True)


def build(rank, world_size):
    torch.manual_seed(SEED)
    noise = torch.rand(3, device="cpu") if rank == 1 else None    # BUG: rank 1's stream moves on
    return M(noise), {"x": torch.randn(S, B, H, requires_grad=True)}
