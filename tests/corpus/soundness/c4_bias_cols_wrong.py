"""WRONG: y = x + b with x [B, F] sharded along F and the bias [F] sharded along F; every rank adds
the FIRST half of the bias (gathered, then narrowed at offset 0): [F/2] broadcast against [B, F/2]
type-checks, but rank 1 adds the wrong half."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, F = 6, 10


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size
        self.bias = nn.Parameter(torch.empty(F // world_size))

    def forward(self, x):
        if self.ws == 1:
            return x + self.bias
        full = funcol.all_gather_tensor(self.bias, 0, dist.group.WORLD)
        return x + full.narrow(0, 0, x.shape[1])     # BUG: offset should be rank * F/2


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B, F // world_size)}
