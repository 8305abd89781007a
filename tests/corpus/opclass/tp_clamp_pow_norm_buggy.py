"""BUGGY twin of tp_clamp_pow_norm_correct.py: the clamp is applied to each rank's partial sum
before the all-reduce (a clamp does not commute with a sum).

A tensor-parallel MLP whose activations are clamped and raised to powers, with a norm and a
log-sum-exp of its output: fc1 column-parallel (each rank its hidden units), clamp and pow
elementwise on them, fc2 row-parallel (partial products all-reduced), then the bias, a clamp, the
output divided by its vector norm, and the log-sum-exp of the clamped output."""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

IN, HID, OUT, BATCH = 4, 8, 6, 3


class ClampNet(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.fc1 = nn.Linear(IN, HID // world_size)
        self.fc2_weight = nn.Parameter(torch.empty(OUT, HID // world_size))
        self.fc2_bias = nn.Parameter(torch.empty(OUT))

    def forward(self, x):
        h = torch.clamp(self.fc1(x), -0.5, 1.0)
        h = torch.pow(h, 2.0) + torch.pow(2.0, h)
        y = torch.clamp(F.linear(h, self.fc2_weight), min=-2.0, max=2.0)  # BUG: clamps each rank's partial sum
        if self.world_size > 1:
            dist.all_reduce(y)
        y = torch.clamp(y + self.fc2_bias, min=-2.0, max=2.0)
        norm = torch.linalg.vector_norm(y, dim=-1, keepdim=True)
        return y / norm, torch.logsumexp(y, dim=-1)


def build(rank, world_size):
    return ClampNet(world_size), {"x": torch.randn(BATCH, IN)}
