"""Gradient clipping by the global 2-norm with sharded gradients (torch FSDP's
clip_grad_norm_: each rank's norm of its gradient shards, raised to the norm type, all-reduced,
then the root), followed by an SGD step on the shards.  Inputs: each rank's shards of two
flat parameters and their gradients.
"""
import torch
import torch.distributed as dist
from torch import nn

N1, N2 = 8, 6
MAX_NORM, LR = 1.0, 0.1


class ClipAndStep(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size

    def forward(self, p1, p2, g1, g2):
        norm_type = 2.0
        grads = [g1, g2]
        local_norm = torch.linalg.vector_norm(
            torch.stack([torch.linalg.vector_norm(g, norm_type) for g in grads]), norm_type)
        total_norm = local_norm ** norm_type
        if self.world_size > 1:
            dist.all_reduce(total_norm, op=dist.ReduceOp.MAX)  # BUG
        total_norm = total_norm ** (1.0 / norm_type)
        clip_coef = MAX_NORM / (total_norm + 1e-6)
        clip_coef_clamped = torch.clamp(clip_coef, max=1.0)
        new_p1 = p1 - LR * (g1 * clip_coef_clamped)
        new_p2 = p2 - LR * (g2 * clip_coef_clamped)
        return new_p1, new_p2, total_norm


def build(rank, world_size):
    return ClipAndStep(world_size), {
        "p1": torch.randn(N1 // world_size), "p2": torch.randn(N2 // world_size),
        "g1": torch.randn(N1 // world_size), "g2": torch.randn(N2 // world_size)}
