"""Rotary position embedding (rotate-half) under context parallelism: x [B, S, heads, D] sharded
along the sequence (dim 1); the cos/sin tables cover the whole sequence and are replicated, each
rank uses the rows of its own positions.  Bug ``local_positions``: the rank uses positions
0..S/W-1 instead of its global offset (the classic CP/SP RoPE-offset bug).  Bug
``bwd_local_positions`` (joint): the forward is right, but a hand-written backward (a fused RoPE
kernel's) rotates the gradient back by the angles of the local positions."""
import torch
import torch.nn as nn


class CPRoPE(nn.Module):
    def __init__(self, rank, ws, seq, dim, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        inv = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
        ang = torch.arange(seq, dtype=torch.float32)[:, None] * inv[None, :]
        self.register_buffer("cos", ang.cos())
        self.register_buffer("sin", ang.sin())

    def forward(self, x):
        s = x.shape[1]
        start = self.rank * s
        if self.bug == "local_positions":
            start = 0  # BUG: positions restart at 0 on every rank
        cos = self.cos[start:start + s][None, :, None, :]
        sin = self.sin[start:start + s][None, :, None, :]
        if self.bug == "bwd_local_positions":
            # BUG: the hand-written backward rotates the gradient by the table rows of positions 0..S/W-1
            bcos, bsin = self.cos[:s][None, :, None, :], self.sin[:s][None, :, None, :]
            return _RoPE.apply(x, cos, sin, bcos, bsin)
        return _rotate(x, cos, sin)


def _rotate(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class _RoPE(torch.autograd.Function):
    """Rotate-half RoPE with a hand-written backward (as fused RoPE kernels have): the gradient is
    rotated back, by the angles of the tables ``bcos`` / ``bsin`` (the forward's, when correct)."""

    @staticmethod
    def forward(ctx, x, cos, sin, bcos, bsin):
        ctx.save_for_backward(bcos, bsin)
        return _rotate(x, cos, sin)

    @staticmethod
    def backward(ctx, grad):
        bcos, bsin = ctx.saved_tensors
        return _rotate(grad, bcos, -bsin), None, None, None, None


def make_build(bug=None):
    def build(rank, world_size):
        return CPRoPE(rank, world_size, 6, 4, bug), {"x": torch.randn(7, 6 // world_size, 5, 4, requires_grad=True)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_rope.py:<name>`, and `entangle capture tests/corpus/programs/_rope.py:<name>` captures one).
rope_cp_bwd_local_positions = make_build(bug='bwd_local_positions')
rope_cp_correct = make_build()
rope_cp_local_positions = make_build(bug='local_positions')
