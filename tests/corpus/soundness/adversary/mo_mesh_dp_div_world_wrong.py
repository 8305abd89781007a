"""WRONG ([dp=2, tp=2] mesh): the ranks' means summed over the dp group and divided by the world
size (4) instead of the dp size: half the batch mean."""
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
        return funcol.all_reduce(m, "sum", self.dp) / self.ws     # BUG: the world size, not dp's


def build(rank, world_size):
    return M(rank, world_size), {"x": torch.randn(B // 2 if world_size == 4 else B, F)}
