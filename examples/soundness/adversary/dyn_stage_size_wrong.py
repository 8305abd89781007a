"""WRONG under --dynamic: the batch enters at stage 0 ("input:x" = "r0.input:x"); rank 1 holds its own
input of that name (unrelated, of its own size) and receives rank 0's activation into a buffer of
its own x's shape: right only when the two sizes agree, which nothing relates."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

N, C = 6, 3
DYNAMIC_DIMS = {"x": [0]}
GLOO_RANK_CONSTANTS = {1: {"N": 4}}    # the gloo label: rank 1's x of another size
GLOO_ALONE = True                      # gloo aborts on the broadcast of mismatched sizes


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, x):
        if self.ws == 1:
            return x * 2
        return funcol.broadcast(x * 2, 0, dist.group.WORLD)     # BUG: rank 1's buffer has its x's size


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(N, C)}
