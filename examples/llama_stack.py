"""A Llama-style decoder stack, Megatron tensor-parallel: the Llama benchmark's model
(benchmarks/bench_llama.py).

Each layer: RMSNorm, attention with rotary position embeddings (RoPE) and grouped-query heads
(GQA: N_HEADS query heads share N_KV key/value heads), RMSNorm, SwiGLU feed-forward; residuals
around both.  Tensor parallel as Megatron does it: the q, k, v projections and the gate / up
projections column-parallel (weights sharded along their output dim: each rank holds whole heads
and a slice of the FFN), the output and down projections row-parallel (sharded along their input
dim) with an explicit all-reduce after each.  Norm weights are replicated; the rotary tables and
the causal mask are inputs every rank holds.  At world_size 1 no collective runs (the sequential
program).  Sizes are small, and divisible by 1, 2, 4 and 8 (8 query heads, 8 KV heads would not
be grouped: 16 and 8).

Capture script (``build(rank, world_size)``); the depth comes from the environment variable
``LLAMA_LAYERS`` (default 2), since ``entangle capture`` runs the script in fresh processes:

    LLAMA_LAYERS=8 entangle capture examples/llama_stack.py --world-size 4 -o /tmp/dist.pt
"""
import math
import os

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

BATCH, SEQ = 2, 6
N_HEADS, N_KV, HEAD_DIM = 16, 8, 4
HIDDEN = N_HEADS * HEAD_DIM          # 64
FFN = 96
EPS = 1e-6


def layers() -> int:
    return int(os.environ.get("LLAMA_LAYERS", "2"))


def all_reduce(y, ws):
    return funcol.all_reduce(y, "sum", dist.group.WORLD) if ws > 1 else y


class RMSNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(HIDDEN))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope(x, cos, sin):
    return x * cos + rotate_half(x) * sin


class Attention(nn.Module):
    def __init__(self, ws):
        super().__init__()
        self.ws, self.heads, self.kv = ws, N_HEADS // ws, N_KV // ws
        self.wq = nn.Parameter(torch.empty(self.heads * HEAD_DIM, HIDDEN))   # column-parallel
        self.wk = nn.Parameter(torch.empty(self.kv * HEAD_DIM, HIDDEN))
        self.wv = nn.Parameter(torch.empty(self.kv * HEAD_DIM, HIDDEN))
        self.wo = nn.Parameter(torch.empty(HIDDEN, self.heads * HEAD_DIM))   # row-parallel

    def forward(self, x, cos, sin, mask):
        b, s, _ = x.shape
        q = F.linear(x, self.wq).view(b, s, self.heads, HEAD_DIM).transpose(1, 2)
        k = F.linear(x, self.wk).view(b, s, self.kv, HEAD_DIM).transpose(1, 2)
        v = F.linear(x, self.wv).view(b, s, self.kv, HEAD_DIM).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        rep = self.heads // self.kv                  # GQA: each KV head serves `rep` query heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(HEAD_DIM) + mask
        o = (F.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, s, self.heads * HEAD_DIM)
        return all_reduce(F.linear(o, self.wo), self.ws)


class SwiGLU(nn.Module):
    def __init__(self, ws):
        super().__init__()
        self.ws = ws
        self.gate = nn.Parameter(torch.empty(FFN // ws, HIDDEN))    # column-parallel
        self.up = nn.Parameter(torch.empty(FFN // ws, HIDDEN))
        self.down = nn.Parameter(torch.empty(HIDDEN, FFN // ws))    # row-parallel

    def forward(self, x):
        h = F.silu(F.linear(x, self.gate)) * F.linear(x, self.up)
        return all_reduce(F.linear(h, self.down), self.ws)


class Layer(nn.Module):
    def __init__(self, ws):
        super().__init__()
        self.attn_norm, self.attn = RMSNorm(), Attention(ws)
        self.ffn_norm, self.ffn = RMSNorm(), SwiGLU(ws)

    def forward(self, x, cos, sin, mask):
        x = x + self.attn(self.attn_norm(x), cos, sin, mask)
        return x + self.ffn(self.ffn_norm(x))


class Llama(nn.Module):
    def __init__(self, ws, n):
        super().__init__()
        self.layers = nn.ModuleList(Layer(ws) for _ in range(n))
        self.norm = RMSNorm()

    def forward(self, x, cos, sin, mask):
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.norm(x)


def build(rank, world_size):
    pos = torch.arange(SEQ, dtype=torch.float32)
    inv = 1.0 / (10000 ** (torch.arange(0, HEAD_DIM, 2, dtype=torch.float32) / HEAD_DIM))
    angles = torch.outer(pos, inv).repeat(1, 2)                     # [SEQ, HEAD_DIM]
    mask = torch.full((SEQ, SEQ), float("-inf")).triu(1)
    return Llama(world_size, layers()), {"x": torch.randn(BATCH, SEQ, HIDDEN), "cos": angles.cos(),
                                         "sin": angles.sin(), "mask": mask}


def spec_text(n: int) -> str:
    """The input relation (and the expected output relation) of an n-layer stack, as spec TOML."""
    lines = ['[inputs]'] + [f'"input:{x}" = "replicate"' for x in ("x", "cos", "sin", "mask")]
    for i in range(n):
        p = f"param:layers.{i}"
        lines += [f'"{p}.attn_norm.weight" = "replicate"', f'"{p}.ffn_norm.weight" = "replicate"']
        lines += [f'"{p}.attn.{w}" = "shard(0)"' for w in ("wq", "wk", "wv")] + [f'"{p}.attn.wo" = "shard(1)"']
        lines += [f'"{p}.ffn.{w}" = "shard(0)"' for w in ("gate", "up")] + [f'"{p}.ffn.down" = "shard(1)"']
    lines += ['"param:norm.weight" = "replicate"', '', '[outputs]', 'check = ["out"]', '',
              '[expect]', '"out" = "replicate"', '']
    return "\n".join(lines)
