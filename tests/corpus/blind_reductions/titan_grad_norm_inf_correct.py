"""torchtitan style clip_grad_norm_ with the infinity norm, gradients sharded FSDP-style.

Each rank holds dim-0 shards of two gradients (plain local tensors, as after to_local()).  The
local inf-norm is the max over the per-gradient maxima; the global one is the max over ranks,
reduced in place with ReduceOp.MAX as torchtitan does for non-DTensor norms.
"""
import torch
import torch.distributed as dist
from torch import nn

MAX_NORM = 0.5


class ClipInfNorm(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size

    def forward(self, grad_wq, grad_wo):
        norms = [torch.linalg.vector_norm(g, float("inf")) for g in (grad_wq, grad_wo)]
        total_norm = torch.stack(norms).max()
        if self.world_size > 1:
            dist.all_reduce(total_norm, op=dist.ReduceOp.MAX)
        clip_coef = MAX_NORM / (total_norm + 1e-6)
        clip_coef_clamped = torch.clamp(clip_coef, max=1.0)
        return total_norm, grad_wq * clip_coef_clamped, grad_wo * clip_coef_clamped


def build(rank, world_size):
    return ClipInfNorm(world_size), {
        "grad_wq": torch.randn(8 // world_size, 6),
        "grad_wo": torch.randn(12 // world_size, 4),
    }
