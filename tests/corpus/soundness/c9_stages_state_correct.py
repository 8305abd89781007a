"""CORRECT: every rank holds the whole weight (replicated) and decays it in place after the forward,
as the sequential program does (the twin of c9_stages_state_wrong.py; tests/test_stages_adversary.py)."""
import torch
import torch.nn as nn

B, K, F = 4, 6, 8     # x [B, K] and weight [F, K] replicated


class Replicated(nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.rank = rank
        self.weight = nn.Parameter(torch.empty(F, K))

    def forward(self, x):
        y = x @ self.weight.t()
        with torch.no_grad():
            self.weight.mul_(0.5)
        return y


def build(rank, world_size):
    return Replicated(rank), {"x": torch.randn(B, K)}
