"""torchtitan's clip_grad_norm_ on FSDP-sharded gradients (each rank holds a dim-0 shard of
every gradient), written on the local shards: per-gradient vector_norm, the norm of their stack,
raised to norm_type, summed over the ranks, the norm_type-th root; then the clip coefficient,
clamped at 1, scales every gradient shard."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

MAX_NORM, NORM_TYPE = 1.0, 2.0


class ClipGradNorm(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.world_size = world_size

    def forward(self, grad_wq, grad_w1, grad_norm_weight):
        grads = [grad_wq, grad_w1, grad_norm_weight]
        norms = [torch.linalg.vector_norm(g, NORM_TYPE) for g in grads]
        total_norm = torch.linalg.vector_norm(torch.stack(norms), NORM_TYPE)
        if self.world_size > 1:
            total_norm = total_norm ** NORM_TYPE
            total_norm = funcol.all_reduce(total_norm, "sum", dist.group.WORLD)
            total_norm = (total_norm / self.world_size) ** (1.0 / NORM_TYPE)  # BUG: averaged as if the gradients were replicated (DP), not sharded
        clip_coef = MAX_NORM / (total_norm + 1e-6)
        clip_coef_clamped = torch.clamp(clip_coef, max=1.0)
        return [g * clip_coef_clamped for g in grads] + [total_norm]


def build(rank, world_size):
    return ClipGradNorm(rank, world_size), {
        "grad_wq": torch.randn(8 // world_size, 4),
        "grad_w1": torch.randn(6 // world_size, 4),
        "grad_norm_weight": torch.randn(4 // world_size),
    }
