"""WRONG: uneven data-parallel shards (rank 0 holds 4 rows, rank 1 holds 2); each rank takes the
mean of its own rows, and the means are averaged over the ranks (all-reduce, / world size).  The
mean of the means weighs rank 1's rows twice: it is not the mean over the 6 rows."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

F = 3
ROWS = [4, 2]


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, x):
        m = x.mean(0)
        if self.ws == 1:
            return m
        return funcol.all_reduce(m, "sum", dist.group.WORLD) / self.ws     # BUG: uneven shards


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(sum(ROWS) if world_size == 1 else ROWS[rank], F)}
