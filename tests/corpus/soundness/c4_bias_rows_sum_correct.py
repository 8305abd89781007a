"""CORRECT twin of c4_bias_rows_sum_wrong: the bias is broadcast over the local rows before the sum."""
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
        return funcol.all_reduce((x + self.bias).sum(0), "sum", dist.group.WORLD)


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B // world_size, F)}
