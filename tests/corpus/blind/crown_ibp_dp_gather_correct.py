"""Interval bounds for a batch of input boxes, data parallel over the boxes: each rank bounds
its own boxes through Linear -> ReLU -> Linear (IBP with lower/upper bound tensors and the
positive/negative parts of the weights), writes them into its rows of a zero buffer of the
whole batch, and the buffers are all-reduced so every rank holds every box's bounds (a gather
written as a sum, as verification tools do without all_gather).
"""
import torch
import torch.distributed as dist
from torch import nn

IN, HID, OUT, BOXES = 3, 5, 2, 8


def linear_bounds(lower, upper, weight, bias):
    w_pos, w_neg = weight.clamp(min=0), weight.clamp(max=0)
    new_lower = lower @ w_pos.t() + upper @ w_neg.t() + bias
    new_upper = upper @ w_pos.t() + lower @ w_neg.t() + bias
    return new_lower, new_upper


class BoxBounds(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.world_size = rank, world_size
        self.fc1 = nn.Linear(IN, HID)
        self.fc2 = nn.Linear(HID, OUT)

    def forward(self, x_lower, x_width):
        lower, upper = linear_bounds(x_lower, x_lower + x_width, self.fc1.weight, self.fc1.bias)
        lower, upper = lower.relu(), upper.relu()
        lower, upper = linear_bounds(lower, upper, self.fc2.weight, self.fc2.bias)
        local = torch.stack([lower, upper], dim=1)
        n = local.shape[0]
        bounds = torch.zeros(n * self.world_size, 2, OUT, dtype=local.dtype)
        bounds[self.rank * n:(self.rank + 1) * n] = local
        if self.world_size > 1:
            dist.all_reduce(bounds)
        return bounds


def build(rank, world_size):
    return BoxBounds(rank, world_size), {"x_lower": torch.randn(BOXES // world_size, IN),
                                         "x_width": torch.rand(BOXES // world_size, IN)}
