"""WRONG: the loss already divided by the world size on each rank (a gradient scaled by 1 / W),
then averaged again by DDP: scaled by 1 / W twice."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, F = 8, 3     # x [B, F], y [B] split along B; w [F] replicated


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size
        self.w = nn.Parameter(torch.randn(F))

    def forward(self, x, y):
        # the gradient of the mean squared error over this rank's rows, by hand: 2 x^T (x w - y) / rows
        g = 2 * (x.t() @ (x @ self.w - y)) / x.shape[0]
        if self.ws == 1:
            return g
        g = g / self.ws     # BUG: the loss pre-scaled for a sum, then averaged
        return funcol.all_reduce(g, "sum", dist.group.WORLD) / self.ws


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B // world_size, F), "y": torch.randn(B // world_size)}
