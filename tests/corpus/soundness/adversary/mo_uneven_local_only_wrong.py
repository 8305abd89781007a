"""WRONG: uneven shards (4 and 2 rows); each rank returns the mean of its own rows (no all-reduce).
Not even the mean of the ranks' outputs is the batch mean (rank 1's rows would weigh twice)."""
import torch
import torch.nn as nn

F = 3
ROWS = [4, 2]


class M(nn.Module):
    def forward(self, x):
        return x.mean(0)     # BUG: no all-reduce


def build(rank, world_size):
    return M(), {"x": torch.randn(sum(ROWS) if world_size == 1 else ROWS[rank], F)}
