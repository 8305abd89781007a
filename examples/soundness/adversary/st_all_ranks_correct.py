"""CORRECT twin of st_rank0_only_wrong: every rank increments its copy of the counter."""
import torch
import torch.nn as nn

B, K = 4, 6     # x [B, K] replicated


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.zeros(1))

    def forward(self, x):
        y = x * 3 + self.steps
        with torch.no_grad():
            self.steps.add_(1)
        return y


def build(rank, world_size):
    return M(), {"x": torch.randn(B, K)}
