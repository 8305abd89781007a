"""Tensor-parallel attention with a causal mask, heads split across ranks (Megatron).

* ``gqa``: 8 query heads, 4 KV heads (head dim 2), each rank 4 query and 2 KV heads; K/V heads are
  expanded with ``repeat_interleave`` (query head j uses KV head j // 2).  Bug ``repeat``: the
  distributed code expands with ``repeat`` (query head j uses KV head j % 2), the wrong KV head
  mapping (cf. vLLM/HF GQA head-mapping bugs).  Bug ``x_grad_not_reduced`` (joint): the input
  enters the head-parallel region without ``copy_to`` (Megatron's f), so its gradient is each
  rank's partial sum over its own heads, never all-reduced.
* ``mqa``: 4 query heads, ONE KV head whose projection is replicated on every rank; its gradient
  is a partial sum over the ranks' query heads and must be all-reduced.  Bug
  ``kv_grad_not_reduced``: it is not.  The causal mask is created inside forward WITHOUT a device
  (``torch.ones(s, s)``), as users write it.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import copy_to, reduce_from


class Attention(nn.Module):
    def __init__(self, ws, hidden, q_heads, kv_heads, head_dim, kv_replicated, bug):
        super().__init__()
        self.ws, self.bug, self.hd = ws, bug, head_dim
        self.qh = q_heads // ws
        self.kvh = kv_heads if kv_replicated else kv_heads // ws
        self.kv_replicated = kv_replicated
        self.wq = nn.Parameter(torch.empty(self.qh * head_dim, hidden))
        self.wk = nn.Parameter(torch.empty(self.kvh * head_dim, hidden))
        self.wv = nn.Parameter(torch.empty(self.kvh * head_dim, hidden))
        self.wo = nn.Parameter(torch.empty(hidden, self.qh * head_dim))

    def forward(self, x):
        b, s, _ = x.shape
        if self.bug == "x_grad_not_reduced":
            x = x  # BUG: the input enters the head-parallel region without copy_to: its gradient is never all-reduced
        else:
            x = copy_to(x, self.ws)
        wk, wv = self.wk, self.wv
        if self.kv_replicated and self.bug != "kv_grad_not_reduced":
            wk, wv = copy_to(wk, self.ws), copy_to(wv, self.ws)
        elif self.kv_replicated:
            wk, wv = wk, wv  # BUG: the replicated KV projection's gradient is never all-reduced
        q = F.linear(x, self.wq).view(b, s, self.qh, self.hd).transpose(1, 2)
        k = F.linear(x, wk).view(b, s, self.kvh, self.hd).transpose(1, 2)
        v = F.linear(x, wv).view(b, s, self.kvh, self.hd).transpose(1, 2)
        rep = self.qh // self.kvh
        if self.bug == "repeat" and self.ws > 1:
            k, v = k.repeat(1, rep, 1, 1), v.repeat(1, rep, 1, 1)  # BUG: query head j reads KV head j % kvh
        else:
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
        if self.kv_replicated:
            causal = torch.ones(s, s).tril().bool()
        else:
            causal = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        o = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, self.qh * self.hd)
        return reduce_from(F.linear(o, self.wo), self.ws)


def make_build(kind, bug=None):
    def build(rank, world_size):
        x = torch.randn(3, 5, 10, requires_grad=True)
        if kind == "gqa":
            return Attention(world_size, 10, 8, 4, 2, False, bug), {"x": x}
        return Attention(world_size, 10, 4, 1, 3, True, bug), {"x": x}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_attn.py:<name>`, and `entangle capture tests/corpus/programs/_attn.py:<name>` captures one).
gqa_causal_correct = make_build('gqa')
gqa_causal_repeat = make_build('gqa', bug='repeat')
gqa_causal_x_grad_not_reduced = make_build('gqa', bug='x_grad_not_reduced')
mqa_causal_correct = make_build('mqa')
mqa_causal_kv_grad_not_reduced = make_build('mqa', bug='kv_grad_not_reduced')
mqa_head_per_rank_correct = make_build('mqa')
mqa_head_per_rank_kv_grad_not_reduced = make_build('mqa', bug='kv_grad_not_reduced')
