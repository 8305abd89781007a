"""Megatron-LM's gradient-norm clipping under tensor parallelism (megatron/core/optimizer/clip_grads.py
get_grad_norm_fp32 with param_is_not_tensor_parallel_duplicate): tensor-parallel weights' grads
are shards and count on every rank; a replicated parameter's grad (a LayerNorm weight) is the
same on every rank and counts only on tensor-parallel rank 0.  The squared norms are summed,
all-reduced over the TP group, and the root is the global norm; every grad is scaled by the
clip coefficient.
"""
import torch
import torch.distributed as dist
from torch import nn

ROWS, COLS, LN = 8, 4, 4
MAX_NORM = 1.0


class ClipGrads(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.world_size = rank, world_size

    def forward(self, fc_grad, ln_grad):
        tensor_parallel_grads = [fc_grad]
        duplicate_grads = [ln_grad]
        is_not_tp_duplicate = self.rank == 0
        total_norm = torch.zeros(())
        for g in tensor_parallel_grads:
            total_norm = total_norm + torch.norm(g) ** 2
        if is_not_tp_duplicate:
            for g in duplicate_grads:
                total_norm = total_norm + torch.norm(g) ** 2
        if self.world_size > 1:
            dist.all_reduce(total_norm)
        total_norm = total_norm.sqrt()
        clip_coeff = MAX_NORM / (total_norm + 1.0e-6)
        clip_coeff = clip_coeff.clamp(max=1.0)
        return fc_grad * clip_coeff, ln_grad * clip_coeff, total_norm


def build(rank, world_size):
    return ClipGrads(rank, world_size), {"fc_grad": torch.randn(ROWS // world_size, COLS), "ln_grad": torch.randn(LN)}
