"""CORRECT: uneven shards (4 and 2 rows); each rank divides its row sum by the global row count
before the all-reduce (the sequential mean's 1 / N carried into the ranks' sums)."""
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
        return funcol.all_reduce(x.sum(0) / sum(ROWS), "sum", dist.group.WORLD)


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(sum(ROWS) if world_size == 1 else ROWS[rank], F)}
