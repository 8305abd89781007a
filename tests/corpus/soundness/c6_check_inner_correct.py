"""CORRECT twin of c6_check_inner_wrong: the relu blocks all-gathered along the feature dim, then
viewed as [B * F]."""
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
        g = funcol.all_gather_tensor(h, 1, dist.group.WORLD)
        return g.reshape(B * F)


def build(rank, world_size):
    return ColumnParallel(world_size), {"x": torch.randn(B, K)}
