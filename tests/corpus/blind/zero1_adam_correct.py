"""DeepSpeed ZeRO stage 1 optimizer step written out: the parameter and its (already averaged)
gradient are whole on every rank; the Adam states exp_avg / exp_avg_sq are partitioned, each
rank updates its own partition of the flat parameter, and the updated partitions are
all-gathered back into the full parameter.
"""
import torch
import torch.distributed as dist
from torch import nn

NUMEL = 8
LR, BETA1, BETA2, EPS, WEIGHT_DECAY, STEP = 1e-2, 0.9, 0.999, 1e-8, 0.01, 3


class Zero1AdamStep(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.world_size = rank, world_size

    def forward(self, param, grad, exp_avg, exp_avg_sq):
        n = param.numel() // self.world_size
        p_part = param.narrow(0, self.rank * n, n)
        g_part = grad.narrow(0, self.rank * n, n)
        exp_avg = exp_avg * BETA1 + g_part * (1 - BETA1)
        exp_avg_sq = exp_avg_sq * BETA2 + g_part * g_part * (1 - BETA2)
        bias_correction1 = 1 - BETA1 ** STEP
        bias_correction2 = 1 - BETA2 ** STEP
        denom = (exp_avg_sq.sqrt() / bias_correction2 ** 0.5) + EPS
        p_part = p_part * (1 - LR * WEIGHT_DECAY)
        p_part = p_part - (LR / bias_correction1) * exp_avg / denom
        if self.world_size > 1:
            new_param = torch.empty_like(param)
            dist.all_gather_into_tensor(new_param, p_part.contiguous())
        else:
            new_param = p_part
        return new_param, exp_avg, exp_avg_sq


def build(rank, world_size):
    return Zero1AdamStep(rank, world_size), {
        "param": torch.randn(NUMEL), "grad": torch.randn(NUMEL),
        "exp_avg": torch.randn(NUMEL // world_size), "exp_avg_sq": torch.rand(NUMEL // world_size)}
