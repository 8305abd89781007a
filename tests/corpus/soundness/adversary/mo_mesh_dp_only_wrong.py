"""WRONG ([dp=2, tp=2] mesh, the batch split over both dims): the ranks' means averaged over the
dp group only; the tp ranks' results differ (each the mean of half the batch).  The spec expects
out = "replicate@dp" and names no tp placement: is the tp dim then left to a certificate?"""
import torch
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

from _adv_groups import mesh_groups

B, F = 8, 3


class M(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.ws = world_size
        self.dp, self.tp = mesh_groups(rank) if world_size == 4 else (None, None)

    def forward(self, x):
        m = x.mean(0)
        if self.ws == 1:
            return m
        return funcol.all_reduce(m, "sum", self.dp) / 2     # BUG: the tp group's halves never averaged


def build(rank, world_size):
    return M(rank, world_size), {"x": torch.randn(B // world_size, F)}
