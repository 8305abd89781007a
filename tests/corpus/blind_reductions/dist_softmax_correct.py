"""Softmax over a vocab-sharded dim (2 ranks), as a vocab-parallel sampler computes its
probabilities: the row max all-reduced with MAX, the local sums of exp all-reduced with SUM, each
rank normalising its own slice.
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

ROWS, VOCAB = 4, 10


class DistributedSoftmax(nn.Module):
    def __init__(self, world_size, temperature=0.7):
        super().__init__()
        self.world_size = world_size
        self.temperature = temperature

    def forward(self, logits):
        logits = logits / self.temperature
        row_max = logits.amax(dim=-1, keepdim=True)
        if self.world_size > 1:
            row_max = funcol.all_reduce(row_max, "max", dist.group.WORLD)
        exp = torch.exp(logits - row_max)
        denom = exp.sum(dim=-1, keepdim=True)
        if self.world_size > 1:
            denom = funcol.all_reduce(denom, "sum", dist.group.WORLD)
        return exp / denom


def build(rank, world_size):
    return DistributedSoftmax(world_size), {"logits": torch.randn(ROWS, VOCAB // world_size)}
