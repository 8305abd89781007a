"""WRONG: a row-parallel layer whose bias is added on every rank before the all-reduce (W copies of
it).  The [cut] gives the partial products (true: each rank's mm is a partial sum); the output
after the cut must still be proven."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, K, F = 6, 8, 5     # x [B, K] and weight [F, K] sharded along K; bias [F] replicated


class RowParallel(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size
        self.weight = nn.Parameter(torch.empty(F, K // world_size))
        self.bias = nn.Parameter(torch.empty(F))

    def forward(self, x):
        y = torch.mm(x, self.weight.t())
        if self.ws == 1:
            return y + self.bias
        return funcol.all_reduce(y + self.bias, "sum", dist.group.WORLD)    # BUG: bias on every rank


def build(rank, world_size):
    return RowParallel(world_size), {"x": torch.randn(B, K // world_size)}
