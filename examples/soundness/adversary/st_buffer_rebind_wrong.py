"""WRONG: each rank counts its calls in a buffer by rebinding it (self.calls = self.calls + 1, not
an in-place write); the sequential program does not count.  The state after the call differs."""
import torch
import torch.nn as nn

B, K, F = 4, 6, 8


class ColumnParallel(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size
        self.weight = nn.Parameter(torch.empty(F // world_size, K))
        self.register_buffer("calls", torch.zeros(K))

    def forward(self, x):
        y = x @ self.weight.t()
        if self.ws > 1:
            self.calls = self.calls + x[0]        # BUG: only the ranks update the buffer
        return y


def build(rank, world_size):
    return ColumnParallel(world_size), {"x": torch.randn(B, K)}
