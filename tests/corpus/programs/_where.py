"""Tensor-parallel attention masked with ``torch.where``, heads split across ranks (Megatron).

* ``attn``: 4 heads (head dim 3), each rank 2 heads; the causal mask is applied as
  ``torch.where(causal, scores, -inf)`` (what HF models write), so the masked tensor, the scores,
  is sharded by heads while the mask and the fill are replicated.  Bug ``shifted``: the
  distributed code builds the mask one diagonal too far (``tril(1)``): each query also sees the
  next key.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import copy_to, reduce_from


class Attention(nn.Module):
    def __init__(self, ws, hidden, heads, head_dim, bug):
        super().__init__()
        self.ws, self.bug, self.hd = ws, bug, head_dim
        self.qh = heads // ws
        self.wq = nn.Parameter(torch.empty(self.qh * head_dim, hidden))
        self.wk = nn.Parameter(torch.empty(self.qh * head_dim, hidden))
        self.wv = nn.Parameter(torch.empty(self.qh * head_dim, hidden))
        self.wo = nn.Parameter(torch.empty(hidden, self.qh * head_dim))

    def forward(self, x):
        b, s, _ = x.shape
        x = copy_to(x, self.ws)
        q = F.linear(x, self.wq).view(b, s, self.qh, self.hd).transpose(1, 2)
        k = F.linear(x, self.wk).view(b, s, self.qh, self.hd).transpose(1, 2)
        v = F.linear(x, self.wv).view(b, s, self.qh, self.hd).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
        if self.bug == "shifted" and self.ws > 1:
            causal = torch.ones(s, s, dtype=torch.bool, device=x.device).tril(1)  # BUG: each query also sees the next key
        else:
            causal = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
        scores = torch.where(causal, scores, float("-inf"))
        o = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, self.qh * self.hd)
        return reduce_from(F.linear(o, self.wo), self.ws)


def make_build(kind, bug=None):
    def build(rank, world_size):
        x = torch.randn(3, 5, 10, requires_grad=True)
        return Attention(world_size, 10, 4, 3, bug), {"x": x}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_where.py:<name>`, and `entangle capture tests/corpus/programs/_where.py:<name>` captures one).
where_attn_correct = make_build("attn")
where_attn_shifted = make_build("attn", bug="shifted")
