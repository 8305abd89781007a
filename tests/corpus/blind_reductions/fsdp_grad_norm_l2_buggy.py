"""FSDP (flat parameter, by hand) gradient-norm clipping at world size 4.

Two parameters' gradients are flattened into one flat gradient, which FSDP shards evenly over the
ranks (each rank holds a contiguous chunk).  The L2 norm of the whole flat gradient is the square
root of the all-reduced sum of the ranks' local sums of squares.
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

NUMEL = 48
MAX_NORM = 2.0


class FlatClip(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size

    def forward(self, flat_grad_shard):
        local_sq = flat_grad_shard.pow(2).sum()
        if self.world_size > 1:
            local_sq = funcol.all_reduce(local_sq, "sum", dist.group.WORLD) / self.world_size  # BUG: averaged like a gradient
        total_norm = local_sq.sqrt()
        clip_coef = (MAX_NORM / (total_norm + 1e-6)).clamp(max=1.0)
        return total_norm, flat_grad_shard * clip_coef


def build(rank, world_size):
    return FlatClip(world_size), {"flat_grad_shard": torch.randn(NUMEL // world_size)}
