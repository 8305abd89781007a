"""WRONG: the input is held as an elementwise max over the ranks (partial(max)); each rank takes
its row maxima and the ranks all-reduce them with sum instead of max."""
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
        m = x.amax(-1)
        if self.ws == 1:
            return m
        return funcol.all_reduce(m, "sum", dist.group.WORLD)     # BUG: a max over ranks, not a sum


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(R, C)}
