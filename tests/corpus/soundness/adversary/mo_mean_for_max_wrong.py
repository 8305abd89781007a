"""WRONG: the column maxima over the batch computed as the ranks' maxima AVERAGED over the ranks
(all-reduce, / world size) instead of their maximum."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, F = 24, 3     # x [B, F] split along B over the ranks


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, x):
        m = x.amax(0)
        if self.ws == 1:
            return m
        return funcol.all_reduce(m, "sum", dist.group.WORLD) / self.ws     # BUG: mean, not max


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B // world_size, F)}
