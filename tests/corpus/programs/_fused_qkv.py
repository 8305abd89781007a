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


def make_build(bug=None):
    def build(rank, world_size):
        return FusedQKV(world_size, bug), {"x": torch.randn(2, 3, DIM, requires_grad=True)}
    return build
