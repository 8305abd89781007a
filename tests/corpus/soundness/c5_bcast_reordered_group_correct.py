"""CORRECT twin of c5_bcast_reordered_group_wrong: src=1 is the group rank of global rank 0, whose
block seq returns."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, N = 6, 10     # x [B, N] sharded along B; seq returns the first block of rows


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size
        if world_size > 1:
            self.g = dist.new_group([1, 0], sort_ranks=False)

    def forward(self, x):
        if self.ws == 1:
            return x[: x.shape[0] // 2]
        return funcol.broadcast(x, 1, self.g)


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B // world_size, N)}
