"""WRONG: x = partial(avg) (each rank holds a share; their MEAN is x), but the ranks sum the
shares (an all-reduce SUM, as for partial) before the tanh: W times x."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

R, C = 3, 4


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, x):
        return (x if self.ws == 1 else funcol.all_reduce(x, "sum", dist.group.WORLD)).tanh()   # BUG: sum, not avg


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(R, C)}
