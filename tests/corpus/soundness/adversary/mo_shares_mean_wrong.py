"""WRONG: x is held as partial sums (the ranks' shares add up to it); the shares are AVERAGED over
the ranks (all-reduce, / world size): the mean of the shares is x / world size, not x."""
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
        if self.ws > 1:
            x = funcol.all_reduce(x, "sum", dist.group.WORLD) / self.ws     # BUG: shares, not replicas
        return x.tanh()


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(R, C)}
