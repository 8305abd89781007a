"""WRONG: x sharded along dim 0 over dp and then over tp (rank r holds chunk r); the ranks
all-gather the chunks and reorder them as if tp were the outer split (chunks 0, 2, 1, 3)."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

N, C = 8, 3


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, x):
        if self.ws == 1:
            return x * 2
        g = funcol.all_gather_tensor(x, 0, dist.group.WORLD)
        c = g.chunk(4, 0)
        return torch.cat([c[0], c[2], c[1], c[3]], 0) * 2        # BUG: the order is dp-major


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(N // world_size, C)}
