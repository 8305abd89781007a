"""SwiGLU MLP, tensor parallel: silu(x W_g^T) * (x W_u^T), then the row-parallel down projection.

* ``unfused``: the gate and up weights are loaded whole on every rank (replicated) and each rank
  slices its own rows by rank; bug ``swapped_up_shard``: the up projection takes the OTHER rank's
  rows (a shard swapped between ranks, as in checkpoint-conversion bugs).
* ``fused``: one weight per rank holding [gate_r; up_r] (the Megatron/vLLM fused layout); the
  sequential weight is [gate; up], so the relation is an interleaving (slices in the spec).  Bug
  ``swapped_halves``: the rank splits its fused weight as [up; gate].
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import copy_to, reduce_from

HIDDEN, FFN = 6, 8


class Unfused(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        self.w_gate = nn.Parameter(torch.empty(FFN, HIDDEN))
        self.w_up = nn.Parameter(torch.empty(FFN, HIDDEN))
        self.w_down = nn.Parameter(torch.empty(HIDDEN, FFN // ws))

    def forward(self, x):
        n = FFN // self.ws
        g = self.w_gate[self.rank * n:(self.rank + 1) * n]
        other = self.ws - 1 - self.rank if self.bug == "swapped_up_shard" else self.rank
        u = self.w_up[other * n:(other + 1) * n]  # BUG (swapped_up_shard): the other rank's rows
        x = copy_to(x, self.ws)
        h = F.silu(F.linear(x, g)) * F.linear(x, u)
        return reduce_from(F.linear(h, self.w_down), self.ws)


class Fused(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.w_gate_up = nn.Parameter(torch.empty(2 * FFN // ws, HIDDEN))
        self.w_down = nn.Parameter(torch.empty(HIDDEN, FFN // ws))

    def forward(self, x):
        x = copy_to(x, self.ws)
        if self.bug == "swapped_halves" and self.ws > 1:
            u, g = F.linear(x, self.w_gate_up).chunk(2, dim=-1)  # BUG: [up; gate] read from a [gate; up] weight
        else:
            g, u = F.linear(x, self.w_gate_up).chunk(2, dim=-1)
        return reduce_from(F.linear(F.silu(g) * u, self.w_down), self.ws)


def _fused_part(seq_weight, rank, ws):
    """GLOO_DERIVE: rank r holds [gate_r; up_r] of the sequential [gate; up]."""
    n = FFN // ws
    return torch.cat([seq_weight[rank * n:(rank + 1) * n], seq_weight[FFN + rank * n:FFN + (rank + 1) * n]])


def make_build(kind, bug=None):
    def build(rank, world_size):
        x = torch.randn(4, 3, HIDDEN, requires_grad=True)
        return (Unfused(rank, world_size, bug) if kind == "unfused" else Fused(world_size, bug)), {"x": x}
    return build
