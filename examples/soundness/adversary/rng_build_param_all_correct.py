"""CORRECT twin of rng_build_param_rank1_wrong: every rank initialises the extra parameter, so the
replicas' streams stay in step and they drop the same elements."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _random_sizes import B, H, P, S, SEED


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.extra = [nn.Linear(3, 3)]               # not a submodule: drawn, never read

    def forward(self, x):
        return F.dropout(x, P, training=True)


def build(rank, world_size):
    torch.manual_seed(SEED)
    return M(), {"x": torch.randn(S, B, H, requires_grad=True)}
