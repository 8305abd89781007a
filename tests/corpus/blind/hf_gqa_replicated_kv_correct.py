"""Grouped-query attention with more tensor-parallel ranks than key/value heads (4 query heads,
2 key/value heads, 4 ranks), as vLLM / Megatron handle it: each rank keeps one query head and a
full copy of k_proj / v_proj, and uses the key/value head its query head belongs to (query head
i reads kv head i // (heads / kv_heads); with one query head per rank that is
rank // (world_size / kv_heads)).  o_proj is row-parallel.  Causal mask built in forward.
"""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

HIDDEN, HEADS, KV_HEADS, BATCH, SEQ = 8, 4, 2, 2, 3
HEAD_DIM = HIDDEN // HEADS


class _AllReduceForward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.clone()
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


class _AllReduceBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad)
        return grad


class GQAttention(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.world_size = rank, world_size
        self.num_heads = HEADS // world_size
        self.kv_replicated = world_size > KV_HEADS
        self.num_kv_heads = 1 if self.kv_replicated else KV_HEADS // world_size
        kv_rows = KV_HEADS * HEAD_DIM if self.kv_replicated else self.num_kv_heads * HEAD_DIM
        self.q_proj = nn.Linear(HIDDEN, self.num_heads * HEAD_DIM, bias=False)
        self.k_proj = nn.Linear(HIDDEN, kv_rows, bias=False)
        self.v_proj = nn.Linear(HIDDEN, kv_rows, bias=False)
        self.o_proj = nn.Linear(self.num_heads * HEAD_DIM, HIDDEN, bias=False)

    def kv_weights(self):
        if not self.kv_replicated:
            return self.k_proj.weight, self.v_proj.weight
        kv_head = self.rank // (self.world_size // KV_HEADS)
        rows = slice(kv_head * HEAD_DIM, (kv_head + 1) * HEAD_DIM)
        return self.k_proj.weight[rows], self.v_proj.weight[rows]

    def forward(self, x):
        if self.world_size > 1:
            x = _AllReduceBackward.apply(x)
        b, s, _ = x.shape
        k_w, v_w = self.kv_weights()
        q = self.q_proj(x).view(b, s, self.num_heads, HEAD_DIM).transpose(1, 2)
        k = F.linear(x, k_w).view(b, s, self.num_kv_heads, HEAD_DIM).transpose(1, 2)
        v = F.linear(x, v_w).view(b, s, self.num_kv_heads, HEAD_DIM).transpose(1, 2)
        n_rep = self.num_heads // self.num_kv_heads
        k = k.repeat_interleave(n_rep, dim=1)
        v = v.repeat_interleave(n_rep, dim=1)
        scores = q @ k.transpose(-2, -1) / HEAD_DIM ** 0.5
        causal = torch.ones(s, s, dtype=torch.bool).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, -1)
        out = self.o_proj(out)
        if self.world_size > 1:
            out = _AllReduceForward.apply(out)
        return out


def build(rank, world_size):
    return GQAttention(rank, world_size), {"x": torch.randn(BATCH, SEQ, HIDDEN, requires_grad=True)}
