"""WRONG: the ranks' tensor named like the sequential inner one (``relu``) is the relu of something
else (the un-reduced partial product), and the returned output sums those relus.
Checking ``relu`` as well must neither lend its name to the output's certificate nor pass."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, K, F = 6, 8, 5     # x [B, K] and weight [F, K] sharded along K


class RowParallel(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size
        self.weight = nn.Parameter(torch.empty(F, K // world_size))

    def forward(self, x):
        y = torch.mm(x, self.weight.t())
        if self.ws == 1:
            return 2 * torch.relu(y)
        h = torch.relu(y)                                    # the relu of a partial sum
        return 2 * funcol.all_reduce(h, "sum", dist.group.WORLD)       # BUG: relu before the sum


def build(rank, world_size):
    return RowParallel(world_size), {"x": torch.randn(B, K // world_size)}
