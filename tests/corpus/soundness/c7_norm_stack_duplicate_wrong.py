"""WRONG: like c7_norm_stack_duplicate_correct (the 2-norm of a stack of per-tensor norms, the squares
all-reduced, then the root), but every rank stacks the replicated tensor's norm: its square is
summed once per rank (twice on 2 ranks)."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

R, C = 6, 4     # x [R, C] sharded along R, z [C, R] along R (dim 1), y [C] replicated


class Reduce(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.ws = rank, world_size

    def forward(self, x, z, y):
        parts = [x, z, y]  # every rank counts the duplicate
        total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in parts])) ** 2
        if self.ws > 1:
            total = funcol.all_reduce(total, "sum", dist.group.WORLD)
        norm = total ** 0.5
        return norm, y / (norm + 1e-6)  # every rank reads y: the replicated tensor scaled (clipped)


def build(rank, world_size):
    return Reduce(rank, world_size), {"x": torch.randn(R // world_size, C), "z": torch.randn(C, R // world_size),
                                      "y": torch.randn(C)}
