"""WRONG: y = w * x with the weight w [H] sharded along its only dim and x [R, H] sharded along its
ROWS (R = H = the world size, so every rank holds w[r] of shape [1] and x[r] of shape [1, H]).
[1] * [1, H] type-checks (w[r] broadcasts along the row), but rank r scales row r by w[r] where every
column j should be scaled by w[j].  Its parts line up with x's counted from the left (both one long
along dim 0); broadcasting aligns dims from the right, where w's dim is x's dim 1, not 0."""
import torch
import torch.nn as nn

H = 2


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.w = nn.Parameter(torch.empty(H // world_size))

    def forward(self, x):
        return self.w * x      # BUG: x's rows are sharded, w's entries scale its columns


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(H // world_size, H)}
