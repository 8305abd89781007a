"""WRONG: the weight is rank 1's (a pipeline's last stage holds it; the spec says
"param:weight" = "r1.param:weight"), but rank 0 holds a tensor of that name too (a tied copy
nobody keeps in step) and computes the returned output from it."""
import torch
import torch.nn as nn

B, K, F = 3, 4, 5


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(F, K))

    def forward(self, x):
        return x @ self.weight.t()               # BUG: on rank 0, its own stale copy


def build(rank, world_size):
    return M(), {"x": torch.randn(B, K)}
