"""WRONG: the batch enters at stage 0 ("input:x" = "r0.input:x"); rank 1 also takes an input of that
name and computes the last stage's output from it instead of rank 0's activation."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, K = 3, 4


class M(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.ws = rank, world_size

    def forward(self, x):
        if self.ws == 1:
            return x.tanh() * 3
        h = funcol.broadcast(x.tanh(), 0, dist.group.WORLD)
        return x.tanh() * 3 if self.rank == 1 else h        # BUG: rank 1 uses its own x, not h


def build(rank, world_size):
    return M(rank, world_size), {"x": torch.randn(B, K)}
