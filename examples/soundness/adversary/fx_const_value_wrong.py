"""WRONG: the ranks scale x by a tensor constant of 3s where the sequential program's is 2s.  Checked
as FX text dumps (import-fx), which do not carry a constant's value: undeclared, the constants are
free tensors; a [constants] entry applies to every graph with that port name."""
import torch
import torch.nn as nn

B, K = 3, 4


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.c = 2.0 if world_size == 1 else 3.0        # BUG: the ranks' constant differs

    def forward(self, x):
        return x * torch.tensor([self.c] * K)


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B, K)}
