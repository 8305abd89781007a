"""WRONG: a column-parallel linear + relu whose relu blocks are right, but whose returned output is
the blocks all-gathered along the wrong dim.  The spec checks only the inner relu."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, K, F = 4, 6, 8     # x [B, K] replicated; weight [F, K] sharded along F


class ColumnParallel(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size
        self.weight = nn.Parameter(torch.empty(F // world_size, K))

    def forward(self, x):
        h = torch.relu(x @ self.weight.t())          # [B, F / world_size]
        if self.ws == 1:
            return h.reshape(B * F)
        return funcol.all_gather_tensor(h, 0, dist.group.WORLD).reshape(B * F)    # BUG: gather dim 0


def build(rank, world_size):
    return ColumnParallel(world_size), {"x": torch.randn(B, K)}
