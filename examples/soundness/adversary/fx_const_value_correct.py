"""CORRECT twin of fx_const_value_wrong: every program scales x by a tensor constant of 2s.  Checked
as FX text dumps (import-fx), which do not carry a constant's value: undeclared, the constants are
free tensors; a [constants] entry applies to every graph with that port name."""
import torch
import torch.nn as nn

B, K = 3, 4


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.c = 2.0

    def forward(self, x):
        return x * torch.tensor([self.c] * K)


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B, K)}
