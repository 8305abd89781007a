"""NormFormer's FFN LayerNorm (the LayerNorm after the FFN activation, fairseq
``ffn_layernorm``) on a Megatron-style column-parallel fc1: each rank holds a slice of the FFN
width, so the LayerNorm's mean and variance over the full width are each a sum over the rank's
slice, all-reduced, divided by the full FFN width (plain torch.distributed functional
collectives).  Returns the normalised activation (sharded like fc1's output) and the mean."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

TOKENS, HIDDEN, FFN = 4, 8, 16
EPS = 1e-5


class ColumnParallelFFNNorm(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.ffn_hidden_size = FFN
        self.ffn_hidden_size_per_partition = FFN // world_size
        self.fc1 = nn.Linear(HIDDEN, self.ffn_hidden_size_per_partition)

    def _sum_over_width(self, t):
        t = t.sum(dim=-1, keepdim=True)
        if self.world_size > 1:
            t = funcol.all_reduce(t, "sum", dist.group.WORLD)
        return t

    def forward(self, x):
        h = F.gelu(self.fc1(x))
        mean = self._sum_over_width(h) / self.ffn_hidden_size
        centered = h - mean
        var = self._sum_over_width(centered * centered) / self.ffn_hidden_size
        return centered * torch.rsqrt(var + EPS), mean


def build(rank, world_size):
    return ColumnParallelFFNNorm(world_size), {"x": torch.randn(TOKENS, HIDDEN)}
