"""WRONG: uneven shards (4 and 2 rows); each rank divides its row sum by its own row count times
the world size (8 on rank 0, 4 on rank 1) before the all-reduce, as if the shards were even."""
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
        if self.ws == 1:
            return x.mean(0)
        return funcol.all_reduce(x.sum(0) / (x.shape[0] * self.ws), "sum", dist.group.WORLD)   # BUG


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(sum(ROWS) if world_size == 1 else ROWS[rank], F)}
