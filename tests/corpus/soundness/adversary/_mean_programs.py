"""What the mean-over-ranks attempts (adversary.py, section "mean over ranks") share: one step over
an input x split along its rows across the ranks.  Each program gives what it computes at world
size 1 (``seq(x)``: the specification) and on a rank (``ranks(x, step)``: ``step.ws``,
``step.rank``, ``step.groups``), and how x is split."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn


def world_sum(t, group=None):
    """The sum over the ranks of ``group`` (default: the world) of ``t`` (an all-reduce)."""
    return funcol.all_reduce(t, "sum", group if group is not None else dist.group.WORLD)


class Step(nn.Module):
    def __init__(self, seq, ranks, rank, world_size, groups):
        super().__init__()
        self.seq, self.ranks, self.rank, self.ws = seq, ranks, rank, world_size
        self.groups = groups(rank) if groups is not None and world_size > 1 else None

    def forward(self, x):
        return self.seq(x) if self.ws == 1 else self.ranks(x, self)


def program(seq, ranks, rows=24, cols=3, split=None, groups=None):
    """``build(rank, world_size)`` of a Step.  x is [rows, cols]: a rank holds ``rows // n`` of its
    rows where ``n = split(world_size)`` (default: the world size; 1: every rank holds all of x),
    or, for a list ``rows``, rank r holds ``rows[r]`` rows of their sum (uneven shards).
    ``groups(rank)``: the process groups the ranks use (built collectively, in build)."""
    def build(rank, world_size):
        if isinstance(rows, list):
            n_rows = sum(rows) if world_size == 1 else rows[rank]
        else:
            n_rows = rows // (split(world_size) if split is not None else world_size)
        return Step(seq, ranks, rank, world_size, groups), {"x": torch.randn(n_rows, cols)}
    return build
