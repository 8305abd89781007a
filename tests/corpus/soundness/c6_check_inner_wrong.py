"""WRONG: a column-parallel linear + relu whose [B, F/2] blocks are all-gathered along the batch dim
and viewed back to [B * F]: the entries come out in the wrong order.  Checking the inner relu as
well ([outputs] check = ["out", "relu"]) must not let the output be certified from the ranks' relu
blocks, which the program does not return."""
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
        g = funcol.all_gather_tensor(h, 0, dist.group.WORLD)      # BUG: gather_dim should be 1
        return g.reshape(B * F)


def build(rank, world_size):
    return ColumnParallel(world_size), {"x": torch.randn(B, K)}
