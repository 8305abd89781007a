"""Megatron-LM's custom ops (namespace ``megatron``)."""
from entangle_py.lazy import torch

from entangle_py.plugins._registry import custom_op


@custom_op("megatron.sinkhorn.default", "sinkhorn(Tensor cost, float tol=0.0001) -> Tensor", pure=True)
def sinkhorn(cost, tol=0.0001):
    """megatron/core/transformer/moe/moe_utils.py: Sinkhorn normalisation of exp(cost) until the
    column scaling changes by less than ``tol`` (a data-dependent loop: not decomposable)."""
    cost = torch.exp(cost)
    d0 = torch.ones(cost.size(0), device=cost.device, dtype=cost.dtype)
    d1 = torch.ones(cost.size(1), device=cost.device, dtype=cost.dtype)
    eps = 0.00000001
    error = 1e9
    d1_old = d1
    while error > tol:
        d0 = (1 / d0.size(0)) * 1 / (torch.sum(d1 * cost, 1) + eps)
        d1 = (1 / d1.size(0)) * 1 / (torch.sum(d0.unsqueeze(1) * cost, 0) + eps)
        error = torch.mean(torch.abs(d1_old - d1))
        d1_old = d1
    return d1 * cost * d0.unsqueeze(1)
