"""WRONG (against its spec): sequence-parallel rows doubled, each rank its own rows in rank order;
the spec expects the output as the ranks' blocks in the reverse order."""
import torch
import torch.nn as nn

S, H = 4, 3


class M(nn.Module):
    def forward(self, x):
        return x * 2


def build(rank, world_size):
    return M(), {"x": torch.randn(S // world_size, H)}
