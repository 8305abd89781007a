"""CORRECT twin of c4_weight_rows_wrong: x [R, H] sharded along its columns, the dim broadcasting
aligns with w's (a sharded RMSNorm's weight times its sharded hidden states): w[r] * x[:, r]."""
import torch
import torch.nn as nn

H = 2


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.w = nn.Parameter(torch.empty(H // world_size))

    def forward(self, x):
        return self.w * x


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(H, H // world_size)}
