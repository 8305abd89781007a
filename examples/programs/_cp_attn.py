"""Context parallelism: q, k, v [B, S, D] sharded along the sequence; each rank all-gathers K and
V and attends its queries over the whole sequence with a causal mask on GLOBAL positions (query i
of rank r is position r * S/W + i).  Bug ``local_mask``: the causal mask uses local positions."""
import math

import torch
import torch.nn as nn

from _common import gather


class CPAttention(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug

    def forward(self, q, k, v):
        s = q.shape[1]
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
        return CPAttention(rank, world_size, bug), {n: torch.randn(2, s, 5) for n in ("q", "k", "v")}
    return build
