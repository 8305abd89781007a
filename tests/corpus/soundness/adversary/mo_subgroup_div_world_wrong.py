"""WRONG (4 ranks): the ranks' means summed over a subgroup of 2 and divided by the world size (4):
half the pair's mean, not the batch mean."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

from _adv_groups import group

B, F = 8, 3


class M(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.ws = world_size
        self.pair = [group([0, 1]), group([2, 3])][rank // 2] if world_size == 4 else None

    def forward(self, x):
        m = x.mean(0)
        if self.ws == 1:
            return m
        return funcol.all_reduce(m, "sum", self.pair) / self.ws     # BUG: summed over the pair only


def build(rank, world_size):
    return M(rank, world_size), {"x": torch.randn(B // world_size, F)}
