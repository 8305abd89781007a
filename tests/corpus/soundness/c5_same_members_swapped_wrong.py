"""WRONG: two process groups with the same members [0, 1]; rank 0 all-reduces x on g1 and y on g2,
rank 1 all-reduces x on g2 and y on g1.  Collectives pair by communicator, so rank 0's x is summed
with rank 1's y."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, N = 6, 10     # x, y [B, N]: partial sums over the ranks (seq = r0 + r1)


class M(nn.Module):
    def __init__(self, world_size, rank):
        super().__init__()
        self.ws = world_size
        self.rank = rank
        if world_size > 1:     # two communicators with the same members
            self.g1 = dist.new_group([0, 1])
            self.g2 = dist.new_group([0, 1])

    def forward(self, x, y):
        if self.ws == 1:
            return x * 2, y - 1
        if self.rank == 0:
            ax = funcol.all_reduce(x, "sum", self.g1)
            ay = funcol.all_reduce(y, "sum", self.g2)
        else:
            ax = funcol.all_reduce(x, "sum", self.g2)     # BUG: g1
            ay = funcol.all_reduce(y, "sum", self.g1)     # BUG: g2
        return ax * 2, ay - 1


def build(rank, world_size):
    return M(world_size, rank), {"x": torch.randn(B, N), "y": torch.randn(B, N)}
