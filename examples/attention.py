"""Tensor-parallel multi-head self-attention (Megatron-LM style): the heads are split across ranks.

* q_proj, k_proj, v_proj are column-parallel: rank r computes the queries/keys/values of its
  HEADS / W heads (weights [HIDDEN, HIDDEN] sharded along dim 0, biases sharded);
* each rank runs plain softmax attention over its heads, per head: softmax(q k^T / sqrt(d)) v;
* o_proj is row-parallel: its weight is sharded along dim 1 (the heads), the partial products are
  all-reduced, then the replicated bias is added.

At world_size 1 there is no collective: the sequential attention over all heads.

Regenerate graphs/attention_tp2::

    python examples/attention.py
"""
import math

import torch
import torch.nn as nn

from mlp import ColumnParallelLinear, RowParallelLinear

# Pairwise distinct where it matters: BATCH 3, SEQ 5, HEADS 4 (2 per rank at TP=2), HEAD_DIM 7,
# HIDDEN 28 (14 per rank).
BATCH, SEQ, HEADS, HEAD_DIM = 3, 5, 4, 7
HIDDEN = HEADS * HEAD_DIM


class ParallelAttention(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        if HEADS % world_size:
            raise ValueError(f"{HEADS} heads cannot be split across {world_size} ranks")
        self.local_heads = HEADS // world_size
        self.q_proj = ColumnParallelLinear(HIDDEN, HIDDEN, world_size)
        self.k_proj = ColumnParallelLinear(HIDDEN, HIDDEN, world_size)
        self.v_proj = ColumnParallelLinear(HIDDEN, HIDDEN, world_size)
        self.o_proj = RowParallelLinear(HIDDEN, HIDDEN, world_size)

    def _heads(self, t, b, s):            # [b, s, heads*d] -> [b, heads, s, d]
        return t.view(b, s, self.local_heads, HEAD_DIM).transpose(1, 2)

    def forward(self, x):                 # x: [BATCH, SEQ, HIDDEN], replicated
        b, s, _ = x.shape
        q = self._heads(self.q_proj(x), b, s)
        k = self._heads(self.k_proj(x), b, s)
        v = self._heads(self.v_proj(x), b, s)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(HEAD_DIM)
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v)      # [b, heads, s, d]
        ctx = ctx.transpose(1, 2).reshape(b, s, self.local_heads * HEAD_DIM)
        return self.o_proj(ctx)


def build(rank, world_size):
    model = ParallelAttention(world_size)
    x = torch.randn(BATCH, SEQ, HIDDEN, requires_grad=True)
    return model, {"x": x}


SPEC = """\
# Input relation of tensor-parallel attention (examples/attention.py): heads split across ranks.
[inputs]
"input:x" = "replicate"
"param:q_proj.weight" = "shard(0)"
"param:q_proj.bias" = "shard(0)"
"param:k_proj.weight" = "shard(0)"
"param:k_proj.bias" = "shard(0)"
"param:v_proj.weight" = "shard(0)"
"param:v_proj.bias" = "shard(0)"
"param:o_proj.weight" = "shard(1)"
"param:o_proj.bias" = "replicate"

[outputs]
check = ["out"]

[expect]
"out" = "replicate"
"""

GRAPHS = [
    ("attention_tp2", 2, False, False, SPEC),
]

if __name__ == "__main__":
    from entangle_py.frontend.capture import regenerate_examples
    regenerate_examples(__file__, GRAPHS)
