"""CORRECT: every rank holds the same x (replicated) and computes the same tanh(x); averaging the
replicas over the ranks (all-reduce, / world size) gives that value back."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

R, C = 3, 4


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, x):
        y = x.tanh()
        if self.ws == 1:
            return y
        return funcol.all_reduce(y, "sum", dist.group.WORLD) / self.ws


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(R, C)}
