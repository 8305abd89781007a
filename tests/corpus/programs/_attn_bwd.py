"""Causal attention written with the CPU kernels and a hand-written backward (an autograd Function
calling ``_scaled_dot_product_flash_attention_for_cpu`` and its ``_backward``, as a framework's fused
attention does), heads sharded over the ranks: q, k, v [b, h, s, e] split along the heads.

Bugs a backward semantics could miss: ``not_causal``: the backward told is_causal=False (a semantics
reading the probabilities off the saved log-sum-exp alone, without the mask, would accept it);
``zero_out``: the backward given zeros for the forward's output (the kernel reads it for
rowsum(dO * out); a semantics writing rowsum(P * dP) instead, equal only for the true output, would
accept it).  The sequential program is the correct one.
"""
import torch
import torch.nn as nn

FWD = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
BWD = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward


def _attention(bug):
    class Attention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v):
            out, lse = FWD(q, k, v, 0.0, True)
            ctx.save_for_backward(q, k, v, out, lse)
            return out

        @staticmethod
        def backward(ctx, go):
            q, k, v, out, lse = ctx.saved_tensors
            if bug == "not_causal":
                return BWD(go, q, k, v, out, lse, 0.0, False)  # BUG (not_causal): the backward without the mask
            if bug == "zero_out":
                return BWD(go, q, k, v, torch.zeros_like(out), lse, 0.0, True)  # BUG (zero_out): zeros for the output
            return BWD(go, q, k, v, out, lse, 0.0, True)
    return Attention


class Model(nn.Module):
    def __init__(self, bug):
        super().__init__()
        self.attention = _attention(bug)

    def forward(self, q, k, v):
        return self.attention.apply(q, k, v)


def make_build(bug=None):
    def build(rank, world_size):
        h = 4 // world_size
        return Model(bug if world_size > 1 else None), {n: torch.randn(2, h, 5, 3, requires_grad=True) for n in "qkv"}
    return build
