"""Adversarial programs on vLLM's custom kernels (stand-ins in _vllm_ops.py), tensor parallel.

* ``norm``: fused_add_rms_norm (residual), column-parallel up into gelu_and_mul, row-parallel
  down; returns (out, residual).  Bugs: ``eps``: the ranks normalise with another epsilon;
  ``residual``: the ranks return the residual as it was BEFORE the fused add.
* ``rope``: q and k projected column-parallel over heads, rotary_embedding (NeoX layout,
  is_neox True), row-parallel output of q * k.  Bug ``gptj``: the ranks rotate GPT-J-style
  (interleaved pairs).
* ``view``: rms_norm writes its result into the first rows of a larger zero buffer (a slice of
  it, which entangle decomposes as that slice replaced, never as a write of the whole buffer).
  Bug ``rows``: the ranks write the rows one further down.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import _vllm_ops  # noqa: F401  (registers torch.ops._C.*)
from _common import copy_to, reduce_from

HIDDEN, FFN, EPS, T = 6, 8, 1e-6, 5
HEADS, HS, ROT, MAXPOS = 4, 4, 4, 16


class Norm(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.norm = nn.Parameter(torch.empty(HIDDEN))
        self.w_gate = nn.Parameter(torch.empty(FFN // ws, HIDDEN))
        self.w_up = nn.Parameter(torch.empty(FFN // ws, HIDDEN))
        self.w_down = nn.Parameter(torch.empty(HIDDEN, FFN // ws))

    def forward(self, x, residual):
        x, residual = x.clone(), residual.clone()
        before = residual.clone()
        eps = 1e-2 if self.bug == "eps" and self.ws > 1 else EPS  # BUG (eps): another epsilon on the ranks
        torch.ops._C.fused_add_rms_norm(x, residual, self.norm, eps)
        x = copy_to(x, self.ws)
        h = torch.empty(T, FFN // self.ws, dtype=x.dtype)
        torch.ops._C.gelu_and_mul(h, torch.cat([F.linear(x, self.w_gate), F.linear(x, self.w_up)], dim=-1))
        res = before if self.bug == "residual" and self.ws > 1 else residual  # BUG (residual): the pre-add residual
        return reduce_from(F.linear(h, self.w_down), self.ws), res


class Rope(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.w_q = nn.Parameter(torch.empty(HEADS * HS // ws, HIDDEN))
        self.w_k = nn.Parameter(torch.empty(HEADS * HS // ws, HIDDEN))
        self.w_o = nn.Parameter(torch.empty(HIDDEN, HEADS * HS // ws))
        self.register_buffer("cache", torch.randn(MAXPOS, ROT))
        self.register_buffer("positions", torch.tensor([3, 0, 7, 7, 12]))

    def forward(self, x):
        x = copy_to(x, self.ws)
        q, k = F.linear(x, self.w_q), F.linear(x, self.w_k)
        neox = not (self.bug == "gptj" and self.ws > 1)  # BUG (gptj): GPT-J rotation on the ranks
        pos = self.positions + 1 if self.bug == "positions" and self.ws > 1 else self.positions  # BUG (positions): off by one
        torch.ops._C.rotary_embedding(pos, q, k, HS, self.cache, neox)
        return reduce_from(F.linear(q * k, self.w_o), self.ws)


class View(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.norm = nn.Parameter(torch.empty(HIDDEN))

    def forward(self, x):
        out = torch.zeros(2 * T, HIDDEN, dtype=x.dtype)
        lo = 1 if self.bug == "rows" and self.ws > 1 else 0  # BUG (rows): the wrong rows of the buffer
        torch.ops._C.rms_norm(out[lo:lo + T], x, self.norm, EPS)
        return out


def make_build(kind, bug=None):
    def build(rank, world_size):
        model = {"norm": Norm, "rope": Rope, "view": View}[kind](world_size, bug)
        inputs = {"x": torch.randn(T, HIDDEN)}
        if kind == "norm":
            inputs["residual"] = torch.randn(T, HIDDEN)
        return model, inputs
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_adv_vllm.py:<name>`, and `entangle capture tests/corpus/programs/_adv_vllm.py:<name>` captures one).
adv_vllm_norm_correct = make_build('norm')
adv_vllm_norm_eps = make_build('norm', bug='eps')
adv_vllm_norm_residual = make_build('norm', bug='residual')
adv_vllm_rope_correct = make_build('rope')
adv_vllm_rope_gptj = make_build('rope', bug='gptj')
adv_vllm_rope_positions = make_build('rope', bug='positions')
adv_vllm_view_correct = make_build('view')
adv_vllm_view_rows = make_build('view', 'rows')
