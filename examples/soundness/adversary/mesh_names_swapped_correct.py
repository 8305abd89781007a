"""CORRECT twin of mesh_names_swapped_wrong: the partial products are all-reduced over the spec's tp
groups {0, 2} and {1, 3} (its mesh is [tp, dp]: tp the first, slower dim)."""
import torch
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

from _adv_groups import group

B, K, F = 3, 6, 5     # x [B, K] and weight [F, K] sharded along K over tp


class Row(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.ws = world_size
        gs = [group(r) for r in [[0, 2], [1, 3]]] if world_size > 1 else None    # made on every rank
        self.g = gs[rank % 2] if world_size > 1 else None
        self.weight = nn.Parameter(torch.empty(F, K // (2 if world_size > 1 else 1)))

    def forward(self, x):
        y = x @ self.weight.t()
        return y if self.ws == 1 else funcol.all_reduce(y, "sum", self.g)


def build(rank, world_size):
    return Row(rank, world_size), {"x": torch.randn(B, K // (2 if world_size > 1 else 1))}
