"""Megatron-LM's Sinkhorn router normalisation (megatron/core/transformer/moe/moe_utils.py
``sinkhorn``) as one custom op, ``torch.ops.megatron.sinkhorn``.

Its loop runs until the column scaling changes by less than ``tol``: a data-dependent ``while``
that torch.compile(fullgraph=True) cannot trace, so a user who compiles the router registers the
function as an opaque op with ``torch.library.custom_op`` and a fake (shape) implementation --
the way torch documents for a kernel it should not trace into.  The body is Megatron's code,
written here independently of entangle's plugin (entangle_py/plugins/megatron.py).  It has no
autograd: Megatron calls it under ``torch.no_grad()``."""
import torch

if not hasattr(torch.ops.megatron, "sinkhorn"):
    @torch.library.custom_op("megatron::sinkhorn", mutates_args=())
    def sinkhorn(cost: torch.Tensor, tol: float = 0.0001) -> torch.Tensor:
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

    @sinkhorn.register_fake
    def _(cost, tol=0.0001):
        return torch.empty_like(cost)
