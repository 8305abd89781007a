"""Interval bound propagation (auto_LiRPA's IBP: center/radius form) through
Linear -> ReLU -> Linear, tensor parallel: the first linear column-parallel (each rank bounds its
hidden units), ReLU's bounds clamped at zero, the second linear row-parallel: the bounds' center
and radius are partial products all-reduced, then the bias.  Output: lower and upper bounds.
"""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

IN, HID, OUT, BATCH = 4, 8, 3, 2


class IBPNet(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.fc1 = nn.Linear(IN, HID // world_size)
        self.fc2_weight = nn.Parameter(torch.empty(OUT, HID // world_size))
        self.fc2_bias = nn.Parameter(torch.empty(OUT))

    def forward(self, x, eps):
        lower, upper = x - eps, x + eps
        mid, diff = (upper + lower) / 2, (upper - lower) / 2
        center = self.fc1(mid)
        deviation = F.linear(diff, self.fc1.weight.abs())
        lower, upper = center - deviation, center + deviation
        lower, upper = torch.clamp(lower, min=0), torch.clamp(upper, min=0)
        mid, diff = (upper + lower) / 2, (upper - lower) / 2
        center = F.linear(mid, self.fc2_weight)
        deviation = F.linear(diff, self.fc2_weight.abs())
        if self.world_size > 1:
            dist.all_reduce(center)
            # dist.all_reduce(deviation)  # BUG
        center = center + self.fc2_bias
        return center - deviation, center + deviation


def build(rank, world_size):
    return IBPNet(world_size), {"x": torch.randn(BATCH, IN), "eps": torch.rand(BATCH, IN)}
