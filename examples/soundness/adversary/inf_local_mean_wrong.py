"""WRONG (data parallelism): each rank returns the mean of its own rows of the batch, never averaged
across the ranks.  No spec relation for x: inferred from the shapes -- [8, K] against [4, K] is a
shard along dim 0; under --dynamic the sizes are symbols of each graph ([x_size0, K] in both),
which are not the same size."""
import torch
import torch.nn as nn

K = 4
DYNAMIC_DIMS = {"x": [0]}


class M(nn.Module):
    def forward(self, x):
        return x.mean(0)                         # BUG: the ranks' means are never averaged


def build(rank, world_size):
    return M(), {"x": torch.randn(8 // world_size, K)}
