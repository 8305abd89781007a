"""WRONG: on a [dp, tp] mesh, x is a partial sum over dp (each dp rank its share, as micro-batch
gradients are) and replicated over tp; the ranks all-reduce over their tp group instead of dp."""
import torch
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

from _adv_groups import mesh_groups

R, C = 3, 4


class M(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.ws = world_size
        self.dp, self.tp = mesh_groups(rank) if world_size > 1 else (None, None)

    def forward(self, x):
        if self.ws == 1:
            return x.tanh()
        return funcol.all_reduce(x, "sum", self.tp).tanh()      # BUG: the sum is over dp


def build(rank, world_size):
    return M(rank, world_size), {"x": torch.randn(R, C)}
