"""Per-channel variance and standard deviation over a sequence split across 2 ranks (sequence
parallel activation statistics, unbiased like torch.var): the mean from the all-reduced sum, then
the all-reduced sum of squared deviations over (seq - 1).
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

BATCH, SEQ, HIDDEN = 2, 8, 3


class SeqStats(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.local_seq = SEQ // world_size

    def forward(self, x):
        total = x.sum(dim=1, keepdim=True)
        if self.world_size > 1:
            total = funcol.all_reduce(total, "sum", dist.group.WORLD)
        mean = total / SEQ
        sq_dev = (x - mean).pow(2).sum(dim=1)
        if self.world_size > 1:
            sq_dev = funcol.all_reduce(sq_dev, "sum", dist.group.WORLD)
        var = sq_dev / (self.local_seq - 1)  # BUG: Bessel's correction with the rank's sequence length
        return var, var.sqrt()


def build(rank, world_size):
    return SeqStats(world_size), {"x": torch.randn(BATCH, SEQ // world_size, HIDDEN)}
