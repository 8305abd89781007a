"""Hugging Face LlamaRMSNorm with its hidden dim split over 4 tensor-parallel ranks.

The mean of squares over the whole hidden dim is the average of the ranks' means over their
equal slices: each rank's mean all-reduced (SUM) and divided by the world size.
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

BATCH, SEQ, HIDDEN = 2, 3, 8


class ShardedRMSNorm(nn.Module):
    def __init__(self, world_size, eps=1e-6):
        super().__init__()
        self.world_size = world_size
        self.weight = nn.Parameter(torch.ones(HIDDEN // world_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        if self.world_size > 1:
            variance = funcol.all_reduce(variance, "sum", dist.group.WORLD)  # BUG: the ranks' means summed, not averaged
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states


def build(rank, world_size):
    return ShardedRMSNorm(world_size), {"hidden_states": torch.randn(BATCH, SEQ, HIDDEN // world_size)}
