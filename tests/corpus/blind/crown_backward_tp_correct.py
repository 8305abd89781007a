"""CROWN backward bound propagation (auto_LiRPA / alpha-beta-CROWN's linear relaxation) of a
specification C through Linear -> ReLU -> Linear, with the hidden layer tensor parallel: fc1
column-parallel and fc2 row-parallel, so each rank holds its hidden units' columns of the bound
matrix A = C W2, their pre-activation bounds (lower, upper), and their ReLU relaxation (upper
line u / (u - l) (x - l) on unstable units, lower slope 1 where u > -l).  Each rank's part of
the input-space bound matrix and bias term is a partial sum; they are all-reduced, and the
result is concretised over the input box: lower bound = A+ x_L + A- x_U + bias.
"""
import torch
import torch.distributed as dist
from torch import nn

IN, HID, OUT, SPECS = 3, 6, 2, 2


def concretize(A, x_lower, x_upper):
    return A.clamp(min=0) @ x_lower + A.clamp(max=0) @ x_upper


class CrownLowerBound(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.w1 = nn.Parameter(torch.empty(HID // world_size, IN))
        self.b1 = nn.Parameter(torch.empty(HID // world_size))
        self.w2 = nn.Parameter(torch.empty(OUT, HID // world_size))
        self.b2 = nn.Parameter(torch.empty(OUT))

    def reduce(self, t):
        if self.world_size > 1:
            t = t.clone()
            dist.all_reduce(t)
        return t

    def forward(self, C, x_lower, x_width, pre_lower, pre_width):
        x_upper = x_lower + x_width
        l, u = pre_lower, pre_lower + pre_width
        A = C @ self.w2
        stable_on, stable_off = l >= 0, u <= 0
        unstable = ~(stable_on | stable_off)
        upper_slope = torch.where(unstable, u / (u - l), stable_on.to(u.dtype))
        upper_bias = torch.where(unstable, -upper_slope * l, torch.zeros_like(l))
        lower_slope = torch.where(unstable, (u > -l).to(u.dtype), stable_on.to(u.dtype))
        A_pos, A_neg = A.clamp(min=0), A.clamp(max=0)
        A_relu = A_pos * lower_slope + A_neg * upper_slope
        bias_part = A_neg @ upper_bias + A_relu @ self.b1
        A_in = A_relu @ self.w1
        bias = self.reduce(bias_part) + C @ self.b2
        return concretize(self.reduce(A_in), x_lower, x_upper) + bias


def build(rank, world_size):
    return CrownLowerBound(world_size), {
        "C": torch.randn(SPECS, OUT), "x_lower": torch.randn(IN), "x_width": torch.rand(IN),
        "pre_lower": torch.randn(HID // world_size), "pre_width": torch.rand(HID // world_size)}
