"""Context parallelism: q, k, v [B, S, D] sharded along the sequence; each rank all-gathers K and
V and attends its queries over the whole sequence with a causal mask on GLOBAL positions (query i
of rank r is position r * S/W + i).  Bug ``local_mask``: the causal mask uses local positions.
Bug ``kv_grad_split`` (joint): K and V are all-gathered by an op whose backward takes the rank's own
slice of the gradient (Megatron's gather_from_tp) instead of reduce-scattering it: every rank's
queries attend to every key, so a key's gradient is a sum over the ranks."""
import math

import torch
import torch.nn as nn

from _common import gather, gather_split


class CPAttention(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug

    def forward(self, q, k, v):
        s = q.shape[1]
        if self.bug == "kv_grad_split":
            # BUG: K/V gathered with a backward that keeps this rank's slice, not reduce-scattered over the ranks' queries
            k, v = gather_split(k, 1, self.rank, self.ws), gather_split(v, 1, self.rank, self.ws)
        else:
            k, v = gather(k, 1, self.ws), gather(v, 1, self.ws)
        offset = self.rank * s
        if self.bug == "local_mask":
            offset = 0  # BUG: causal mask on local query positions
        qpos = torch.arange(s, device=q.device)[:, None] + offset
        kpos = torch.arange(k.shape[1], device=q.device)[None, :]
        scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(kpos > qpos, float("-inf"))
        return scores.softmax(-1) @ v


def make_build(bug=None):
    def build(rank, world_size):
        s = 6 // world_size
        return CPAttention(rank, world_size, bug), {n: torch.randn(2, s, 5, requires_grad=True) for n in ("q", "k", "v")}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_cp_attn.py:<name>`, and `entangle capture tests/corpus/programs/_cp_attn.py:<name>` captures one).
cp_attention_correct = make_build()
cp_attention_kv_grad_split = make_build(bug='kv_grad_split')
cp_attention_local_mask = make_build(bug='local_mask')
