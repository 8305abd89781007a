"""WRONG: the relation builds the sequential input from rank 0's tensor twice (x = [r0.x; r0.x]);
rank 1's x is unrelated, yet rank 1 computes its half of the output from it."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

R, C = 3, 4      # a rank's x [R, C]; the sequential [2R, C]


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, x):
        if self.ws == 1:
            return x.exp()
        return funcol.all_gather_tensor(x.exp(), 0, dist.group.WORLD)    # BUG: rank 1's x is not rank 0's


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(2 * R if world_size == 1 else R, C)}
