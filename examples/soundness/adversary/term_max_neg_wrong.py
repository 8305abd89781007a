"""WRONG: the input is an elementwise max over the ranks (max(r0.x, r1.x)); each rank negates its x
and the ranks all-reduce with max: max(-a, -b) = -min(a, b), not -max(a, b)."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

R, C = 3, 5


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, x):
        y = x * -1.5
        if self.ws == 1:
            return y
        return funcol.all_reduce(y, "max", dist.group.WORLD)     # BUG: max does not commute with * -1.5


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(R, C)}
