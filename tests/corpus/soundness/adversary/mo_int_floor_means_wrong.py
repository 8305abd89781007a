"""WRONG: integer counts split along the rows; each rank's FLOOR mean of its rows (an int), the
ranks' floor means all-reduced and floor-divided by the world size: the floor of floors is not
the floor mean over the batch."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, F = 8, 3


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size

    def forward(self, x):
        m = torch.div(x.sum(0), x.shape[0], rounding_mode="floor")
        if self.ws == 1:
            return m
        return torch.div(funcol.all_reduce(m, "sum", dist.group.WORLD), self.ws, rounding_mode="floor")   # BUG


def build(rank, world_size):
    g = torch.Generator().manual_seed(7)
    x = torch.randint(0, 10, (B, F), generator=g)
    return M(world_size), {"x": x if world_size == 1 else x.chunk(world_size)[rank].clone()}
