"""WRONG: a replicated step counter kept in a buffer; the sequential program increments it, but on
the ranks only rank 0 does (the others keep a stale copy: replicas that diverge)."""
import torch
import torch.nn as nn

B, K = 4, 6     # x [B, K] replicated


class M(nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.rank = rank
        self.register_buffer("steps", torch.zeros(1))

    def forward(self, x):
        y = x * 3 + self.steps
        if self.rank == 0:                           # BUG: every rank should count
            with torch.no_grad():
                self.steps.add_(1)
        return y


def build(rank, world_size):
    return M(rank), {"x": torch.randn(B, K)}
