"""A fused QKV projection, column parallel, viewed into heads (torchtitan's / Megatron's layout).

The fused weight's rows are laid out per key/value head group, [G, 3, h] (q, k, v of group 0, then
of group 1, ...), and sharded by rows: rank r holds whole groups.  Each rank views its output
[b, s, G_r * 3 * h] as [b, s, G_r, 3, h] and takes q, k, v; the sequential program views
[b, s, G * 3 * h] as [b, s, G, 3, h]: the split of the sharded dim lines up with the ranks' parts.
The output q * k + v stays sharded over the groups (dim 2).

Bugs (each view is one a careless "view of a concat is the concat of the views" would accept):
``outer``: the weight's rows laid out [3, G, h] (q of every head, then k, then v) and sharded by
rows the same way, each rank viewing its rows [3, G_r, h] -- rank 0's rows are the q of every head
and half the k, so its "k" and "v" are not the heads' (the split crosses the rank boundary);
``inner``: the grouped weight, but each rank views its rows [3, G_r, h] (q, k, v outermost), which
interleaves the rank's groups differently from the sequential [G, 3, h].
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import copy_to

DIM, GROUPS, HEAD = 6, 4, 2


class FusedQKV(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.wqkv = nn.Parameter(torch.empty(GROUPS * 3 * HEAD // ws, DIM))

    def forward(self, x):
        b, s, _ = x.shape
        y = F.linear(copy_to(x, self.ws), self.wqkv)
        g = GROUPS // self.ws
        if self.bug == "outer":
            qkv = y.view(b, s, 3, g, HEAD)  # BUG (outer): [3, G, h] rows sharded by rows, viewed per rank
            q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        elif self.bug == "inner" and self.ws > 1:
            qkv = y.view(b, s, 3, g, HEAD)  # BUG (inner): the rank's groups viewed q, k, v outermost
            q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        else:
            qkv = y.view(b, s, g, 3, HEAD)
            q, k, v = qkv[:, :, :, 0], qkv[:, :, :, 1], qkv[:, :, :, 2]
        return q * k + v


class _SplitSwapped(torch.autograd.Function):
    """split(h, -1) whose backward concatenates the gradients [dq, dv, dk] (the k and v blocks swapped)."""
    @staticmethod
    def forward(ctx, y):
        return tuple(t.clone() for t in y.split(HEAD, -1))

    @staticmethod
    def backward(ctx, dq, dk, dv):
        return torch.cat([dq, dv, dk], -1)  # BUG (swapped): the key and value gradients swapped in the cat


class FusedQKVSplit(nn.Module):
    """Megatron's layout: the output [s, b, G_r * 3 * h] viewed [s, b, G_r, 3 * h] and split along the
    last dim into q, k, v; the backward concatenates their gradients along the last dim and views the
    result [s * b, G_r * 3 * h] for the weight's gradient (layers.py's LinearWithGradAccumulation...)."""

    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.wqkv = nn.Parameter(torch.empty(GROUPS * 3 * HEAD // ws, DIM))

    def forward(self, x):
        if self.bug == "unreduced":
            x_in = x  # BUG (unreduced): the input's gradient never all-reduced (no copy_to)
        else:
            x_in = copy_to(x, self.ws)
        y = torch.matmul(x_in, self.wqkv.t())
        y = y.view(*y.shape[:2], GROUPS // self.ws, 3 * HEAD)
        if self.bug == "swapped" and self.ws > 1:
            q, k, v = _SplitSwapped.apply(y)
        else:
            q, k, v = torch.split(y, HEAD, dim=-1)
        return q * k + v


def make_build(bug=None, module=FusedQKV):
    def build(rank, world_size):
        return module(world_size, bug), {"x": torch.randn(2, 3, DIM, requires_grad=True)}
    return build


fused_qkv_correct = make_build()
fused_qkv_inner = make_build("inner")
fused_qkv_outer = make_build("outer")
fused_qkv_split_correct = make_build(module=FusedQKVSplit)
fused_qkv_split_swapped = make_build("swapped", FusedQKVSplit)
fused_qkv_split_unreduced = make_build("unreduced", FusedQKVSplit)
