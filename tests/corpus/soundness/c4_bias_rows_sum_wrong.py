"""WRONG: y = (x + b).sum(0) with x [B, F] sharded along B and the bias [F] replicated; each rank adds
the bias AFTER its local row sum and the results are all-reduced: the bias is counted world_size
times instead of B times."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, F = 6, 10


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size
        self.bias = nn.Parameter(torch.empty(F))

    def forward(self, x):
        if self.ws == 1:
            return (x + self.bias).sum(0)
        return funcol.all_reduce(x.sum(0) + self.bias, "sum", dist.group.WORLD)     # BUG


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B // world_size, F)}
