"""SwiGLU MLP, tensor parallel: silu(x W_g^T) * (x W_u^T), then the row-parallel down projection.

* ``unfused``: the gate and up weights are loaded whole on every rank (replicated) and each rank
  slices its own rows by rank; bug ``swapped_up_shard``: the up projection takes the OTHER rank's
  rows (a shard swapped between ranks, as in checkpoint-conversion bugs).
* ``fused``: one weight per rank holding [gate_r; up_r] (the Megatron/vLLM fused layout); the
  sequential weight is [gate; up], so the relation is an interleaving (slices in the spec).  Bug
  ``swapped_halves``: the rank splits its fused weight as [up; gate]; bug ``rank1_swapped``: only
  rank 1 does (one rank's checkpoint shard converted with the other layout) -- a checker that
  related only rank 0's slices, or every rank's alike, would accept it.
* ``fused_t``: the same fused weight stored transposed, [HIDDEN, gate_r | up_r] and applied as
  ``x @ w`` (GPT-2's Conv1D layout), so the spec slices dim -1 with negative bounds.  Bug
  ``swapped_halves``: [up | gate] read from a [gate | up] weight.
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
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        self.w_gate_up = nn.Parameter(torch.empty(2 * FFN // ws, HIDDEN))
        self.w_down = nn.Parameter(torch.empty(HIDDEN, FFN // ws))

    def forward(self, x):
        x = copy_to(x, self.ws)
        if self.bug == "swapped_halves" and self.ws > 1:
            u, g = F.linear(x, self.w_gate_up).chunk(2, dim=-1)  # BUG: [up; gate] read from a [gate; up] weight
        elif self.bug == "rank1_swapped" and self.ws > 1 and self.rank == 1:
            u, g = F.linear(x, self.w_gate_up).chunk(2, dim=-1)  # BUG: rank 1 alone reads [up; gate]
        else:
            g, u = F.linear(x, self.w_gate_up).chunk(2, dim=-1)
        return reduce_from(F.linear(F.silu(g) * u, self.w_down), self.ws)


class FusedT(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.w_gate_up = nn.Parameter(torch.empty(HIDDEN, 2 * FFN // ws))
        self.w_down = nn.Parameter(torch.empty(HIDDEN, FFN // ws))

    def forward(self, x):
        x = copy_to(x, self.ws)
        h = x @ self.w_gate_up
        n = h.shape[-1] // 2
        if self.bug == "swapped_halves" and self.ws > 1:
            u, g = h[..., :n], h[..., n:]  # BUG: [up | gate] read from a [gate | up] Conv1D weight
        else:
            g, u = h[..., :n], h[..., n:]
        return reduce_from(F.linear(F.silu(g) * u, self.w_down), self.ws)


def _fused_t_part(seq_weight, rank, ws):
    """GLOO_DERIVE: rank r holds [gate_r | up_r] (columns) of the sequential [gate | up]."""
    return _fused_part(seq_weight.t(), rank, ws).t().contiguous()


def _fused_part(seq_weight, rank, ws):
    """GLOO_DERIVE: rank r holds [gate_r; up_r] of the sequential [gate; up]."""
    n = FFN // ws
    return torch.cat([seq_weight[rank * n:(rank + 1) * n], seq_weight[FFN + rank * n:FFN + (rank + 1) * n]])


def make_build(kind, bug=None):
    def build(rank, world_size):
        x = torch.randn(4, 3, HIDDEN, requires_grad=True)
        model = {"unfused": lambda: Unfused(rank, world_size, bug), "fused": lambda: Fused(rank, world_size, bug),
                 "fused_t": lambda: FusedT(world_size, bug)}[kind]()
        return model, {"x": x}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_swiglu.py:<name>`, and `entangle capture tests/corpus/programs/_swiglu.py:<name>` captures one).  GLOO_*:
# how run_gloo.py runs it (a derived input, a late peer).
swiglu_fused_correct = make_build('fused')
swiglu_fused_correct.GLOO_DERIVE = {"param:w_gate_up": _fused_part}
swiglu_fused_rank1_swapped = make_build('fused', bug='rank1_swapped')
swiglu_fused_rank1_swapped.GLOO_DERIVE = {"param:w_gate_up": _fused_part}
swiglu_fused_swapped_halves = make_build('fused', bug='swapped_halves')
swiglu_fused_swapped_halves.GLOO_DERIVE = {"param:w_gate_up": _fused_part}
swiglu_fused_t_correct = make_build('fused_t')
swiglu_fused_t_correct.GLOO_DERIVE = {"param:w_gate_up": _fused_t_part}
swiglu_fused_t_swapped_halves = make_build('fused_t', bug='swapped_halves')
swiglu_fused_t_swapped_halves.GLOO_DERIVE = {"param:w_gate_up": _fused_t_part}
swiglu_unfused_correct = make_build('unfused')
swiglu_unfused_swapped_shard = make_build('unfused', bug='swapped_up_shard')
