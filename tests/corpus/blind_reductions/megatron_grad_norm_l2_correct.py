"""Megatron-LM style gradient clipping (clip_grad_norm_fp32) under tensor parallelism 2.

The rank holds its shard of a column-parallel gradient (rows), of a row-parallel gradient
(columns) and the whole gradient of a LayerNorm weight, which every TP rank duplicates.  The L2
norm counts a duplicate once (Megatron's param_is_not_tensor_parallel_duplicate: only TP rank 0
adds it), the ranks' sums of squares are all-reduced, and every gradient is scaled by the clip
coefficient.
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

HIDDEN, FFN = 8, 16
MAX_NORM = 1.0


class ClipGradNorm(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.world_size = rank, world_size

    def forward(self, grad_fc1, grad_fc2, grad_ln):
        grads = [grad_fc1, grad_fc2]
        if self.rank == 0:  # a TP duplicate is counted by one rank only
            grads.append(grad_ln)
        norms = [torch.linalg.vector_norm(g, 2) for g in grads]
        local_norm = torch.linalg.vector_norm(torch.stack(norms), 2)
        total = local_norm ** 2
        if self.world_size > 1:
            total = funcol.all_reduce(total, "sum", dist.group.WORLD)
        total_norm = total ** 0.5
        clip_coef = MAX_NORM / (total_norm + 1e-6)
        clip_coef = torch.clamp(clip_coef, max=1.0)
        return total_norm, grad_fc1 * clip_coef, grad_fc2 * clip_coef, grad_ln * clip_coef


def build(rank, world_size):
    return ClipGradNorm(rank, world_size), {
        "grad_fc1": torch.randn(FFN // world_size, HIDDEN),
        "grad_fc2": torch.randn(HIDDEN, FFN // world_size),
        "grad_ln": torch.randn(HIDDEN),
    }
