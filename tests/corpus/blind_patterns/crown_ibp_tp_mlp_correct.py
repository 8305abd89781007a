"""Interval bound propagation (auto_LiRPA's IBP, the bounds CROWN starts from) through a
tensor-parallel two-layer network, forward only: an L-inf ball around the input, the
column-parallel layer's interval (center and radius, |W| for the radius), the ReLU relaxation
as clamp(min=0) on both bounds, then the row-parallel layer, whose partial lower and upper
bounds are all-reduced before its bias is added."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

IN, HIDDEN, OUT, BATCH = 4, 6, 3, 2
EPS = 0.1


class BoundedTPNet(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.world_size = world_size
        self.fc1 = nn.Linear(IN, HIDDEN // world_size)             # column parallel
        self.fc2 = nn.Linear(HIDDEN // world_size, OUT, bias=False)  # row parallel
        self.fc2_bias = nn.Parameter(torch.empty(OUT))

    @staticmethod
    def interval_linear(lower, upper, weight, bias=None):
        mid = (upper + lower) / 2.0
        diff = (upper - lower) / 2.0
        center = F.linear(mid, weight, bias)
        deviation = diff.matmul(weight.abs().t())
        return center - deviation, center + deviation

    def forward(self, x):
        lower, upper = x - EPS, x + EPS
        lower, upper = self.interval_linear(lower, upper, self.fc1.weight, self.fc1.bias)
        lower, upper = torch.clamp(lower, min=0), torch.clamp(upper, min=0)   # BoundRelu (IBP)
        lower, upper = self.interval_linear(lower, upper, self.fc2.weight)
        if self.world_size > 1:
            lower = funcol.all_reduce(lower, "sum", dist.group.WORLD)
            upper = funcol.all_reduce(upper, "sum", dist.group.WORLD)
        return lower + self.fc2_bias, upper + self.fc2_bias


def build(rank, world_size):
    model = BoundedTPNet(rank, world_size)
    return model, {"x": torch.randn(BATCH, IN)}
