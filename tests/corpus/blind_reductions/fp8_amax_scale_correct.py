"""Transformer-Engine-style fp8 delayed scaling under sequence parallelism (2 ranks).

Each rank holds a sequence shard [seq / W, hidden] of an activation.  The amax is taken over the
whole tensor: the local amax all-reduced with MAX.  Every rank derives the same scale
(FP8_MAX / amax), scales its shard and saturates it to the e4m3 range.
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

SEQ, HIDDEN = 8, 6
FP8_E4M3_MAX = 448.0


class Fp8Quantize(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size

    def forward(self, x):
        amax = x.abs().amax()
        if self.world_size > 1:
            amax = funcol.all_reduce(amax, "max", dist.group.WORLD)
        scale = FP8_E4M3_MAX / torch.clamp(amax, min=1e-12)
        x_fp8 = torch.clamp(x * scale, -FP8_E4M3_MAX, FP8_E4M3_MAX)
        return x_fp8, scale, amax


def build(rank, world_size):
    return Fp8Quantize(world_size), {"x": torch.randn(SEQ // world_size, HIDDEN)}
