"""WRONG: a row-parallel layer whose all-reduced output is scaled by 0.25 before it is returned
(transposed).  A spec that gives the partial product as [cut] must not certify the output: the
returned tensor still has to be the sequential one."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, K, F = 6, 8, 5     # x [B, K] sharded along K, weight [F, K] sharded along K


class RowParallel(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size
        self.weight = nn.Parameter(torch.empty(F, K // world_size))

    def forward(self, x):
        y = torch.mm(x, self.weight.t())             # [B, F]: a partial sum on each rank
        if self.ws == 1:
            return y.t()
        return (0.25 * funcol.all_reduce(y, "sum", dist.group.WORLD)).t()    # BUG: scaled by 0.25


def build(rank, world_size):
    return RowParallel(world_size), {"x": torch.randn(B, K // world_size)}
