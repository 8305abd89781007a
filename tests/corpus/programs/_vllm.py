"""A vLLM-style decoder MLP on vLLM's custom kernels (``torch.ops._C``), tensor parallel:
fused_add_rms_norm (residual), column-parallel gate and up, ``silu_and_mul`` over the
concatenated [gate; up], row-parallel down with an all-reduce.  The custom ops get their
meaning from entangle's plugin (entangle_py/plugins/vllm.py).  Bug ``swapped_halves``: the
rank concatenates [up; gate], so silu is applied to the up projection."""
import torch
import torch.nn as nn
import torch.nn.functional as F

import _vllm_ops  # noqa: F401  (registers torch.ops._C.*)
from _common import copy_to, reduce_from

HIDDEN, FFN, EPS = 6, 8, 1e-6


class VllmMLP(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.norm = nn.Parameter(torch.empty(HIDDEN))
        self.w_gate = nn.Parameter(torch.empty(FFN // ws, HIDDEN))
        self.w_up = nn.Parameter(torch.empty(FFN // ws, HIDDEN))
        self.w_down = nn.Parameter(torch.empty(HIDDEN, FFN // ws))

    def forward(self, x, residual):
        x, residual = x.clone(), residual.clone()
        torch.ops._C.fused_add_rms_norm(x, residual, self.norm, EPS)
        x = copy_to(x, self.ws)
        g, u = F.linear(x, self.w_gate), F.linear(x, self.w_up)
        parts = [u, g] if self.bug == "swapped_halves" and self.ws > 1 else [g, u]  # BUG (swapped_halves): [up; gate]
        h = torch.empty(x.shape[:-1] + (FFN // self.ws,), dtype=x.dtype, device=x.device)
        torch.ops._C.silu_and_mul(h, torch.cat(parts, dim=-1))
        return reduce_from(F.linear(h, self.w_down), self.ws), residual


def make_build(bug=None):
    def build(rank, world_size):
        return VllmMLP(world_size, bug), {"x": torch.randn(5, HIDDEN), "residual": torch.randn(5, HIDDEN)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_vllm.py:<name>`, and `entangle capture tests/corpus/programs/_vllm.py:<name>` captures one).
vllm_mlp_correct = make_build()
vllm_mlp_swapped_halves = make_build("swapped_halves")
