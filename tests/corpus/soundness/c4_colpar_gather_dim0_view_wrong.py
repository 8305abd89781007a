"""WRONG: column-parallel linear with bias; the [B, F/2] blocks are all-gathered along dim 0 and
the [2B, F/2] result is reshaped to [B, F]: the shape matches seq, the layout does not."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, K, F = 6, 10, 8     # x [B, K] replicated; weight [F, K] and bias [F] sharded along F


class ColumnParallel(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size
        self.weight = nn.Parameter(torch.empty(F // world_size, K))
        self.bias = nn.Parameter(torch.empty(F // world_size))

    def forward(self, x):
        y = x @ self.weight.t() + self.bias          # [B, F / world_size]
        if self.ws == 1:
            return y
        return funcol.all_gather_tensor(y, 0, dist.group.WORLD).reshape(B, F)     # BUG


def build(rank, world_size):
    return ColumnParallel(world_size), {"x": torch.randn(B, K)}
