"""WRONG twin of mo_hier_mean_correct: the second average is over the same pair again (the mean of
a pair's equal means is that pair's mean: the other pair's rows never enter)."""
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
        if world_size == 4:
            self.pair = [group([0, 1]), group([2, 3])][rank // 2]

    def forward(self, x):
        m = x.mean(0)
        if self.ws == 1:
            return m
        m = funcol.all_reduce(m, "sum", self.pair) / 2
        return funcol.all_reduce(m, "sum", self.pair) / 2     # BUG: the same group again


def build(rank, world_size):
    return M(rank, world_size), {"x": torch.randn(B // world_size, F)}
