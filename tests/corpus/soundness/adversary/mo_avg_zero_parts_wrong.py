"""WRONG (4 ranks): only ranks 0 and 1 hold rows (4 each); ranks 2 and 3 contribute float zeros.
Each rank's row sum / 8, all-reduced with AVG, times 2 (the number of ranks with rows): the AVG
divides by the group's 4, so this is half the batch mean.  (The lowering drops a rank's zeros
from the sum: the sum over ranks has 2 parts, the divisor stays 4.)"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, F = 8, 3
SCALE = 2     # BUG: the AVG divided by 4, not 2


class M(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.ws = rank, world_size

    def forward(self, x):
        if self.ws == 1:
            return x.mean(0)
        part = x.sum(0) / B if self.rank < 2 else torch.zeros(F, dtype=x.dtype)
        return funcol.all_reduce(part, "avg", dist.group.WORLD) * SCALE


def build(rank, world_size):
    return M(rank, world_size), {"x": torch.randn(B if world_size == 1 else B // 2, F)}
