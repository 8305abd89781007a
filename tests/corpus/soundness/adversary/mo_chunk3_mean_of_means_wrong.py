"""WRONG (3 ranks): 8 rows split as torch.chunk does (3, 3, 2); each rank's mean of its rows,
all-reduced, / 3: the last rank's rows weigh more."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, F = 8, 3


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, x):
        m = x.mean(0)
        if self.ws == 1:
            return m
        return funcol.all_reduce(m, "sum", dist.group.WORLD) / self.ws     # BUG: uneven chunks


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B, F).chunk(world_size)[rank].clone()}
