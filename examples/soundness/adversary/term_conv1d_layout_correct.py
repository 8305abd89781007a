"""CORRECT: a column-parallel linear whose ranks hold their weight shard transposed ([K, F/2], the
Conv1D layout of GPT-2): each computes x @ w and the blocks are all-gathered along the features.
The relation says it: weight = concat(transpose(r0.w), transpose(r1.w), dim=0)."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, K, F = 3, 4, 8     # x [B, K] replicated; the sequential weight [F, K]; a rank's [K, F/2] (square at 2 ranks)


class Col(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size
        self.weight = nn.Parameter(torch.empty(F, K) if world_size == 1 else torch.empty(K, F // world_size))

    def forward(self, x):
        if self.ws == 1:
            return x @ self.weight.t()
        return funcol.all_gather_tensor(x @ self.weight, 1, dist.group.WORLD)


def build(rank, world_size):
    return Col(world_size), {"x": torch.randn(B, K)}
