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


def program(seq, ranks, rows=24, cols=3, split=None, chunk=False, groups=None, ints=False):
    """``build(rank, world_size)`` of a Step.  x is [rows, cols]: a rank holds ``rows // n`` of its
    rows where ``n = split(world_size)`` (default: the world size; 1: every rank holds all of x),
    its torch.chunk of them (``chunk``: uneven where rows is not a multiple), or, for a list
    ``rows``, rank r holds ``rows[r]`` rows of their sum (uneven shards).  ``ints``: integer counts
    (the same on every run) instead of floats.  ``groups(rank)``: the process groups the ranks use
    (built collectively, in build)."""
    def build(rank, world_size):
        if isinstance(rows, list):
            n_rows = sum(rows) if world_size == 1 else rows[rank]
        elif chunk:
            n_rows = len(torch.arange(rows).chunk(world_size)[rank])
        else:
            n_rows = rows // (split(world_size) if split is not None else world_size)
        x = (torch.randint(0, 10, (n_rows, cols), generator=torch.Generator().manual_seed(7)) if ints
             else torch.randn(n_rows, cols))
        return Step(seq, ranks, rank, world_size, groups), {"x": x}
    return build


class LeastSquaresGrad(nn.Module):
    """The gradient of the mean squared error of x w - y over this rank's rows, by hand
    (2 x^T (x w - y) / rows); ``ranks(g, step)`` combines it on a rank."""
    def __init__(self, ranks, world_size, features):
        super().__init__()
        self.ranks, self.ws = ranks, world_size
        self.w = nn.Parameter(torch.randn(features))

    def forward(self, x, y):
        g = 2 * (x.t() @ (x @ self.w - y)) / x.shape[0]
        return g if self.ws == 1 else self.ranks(g, self)


def least_squares(ranks, rows=8, features=3):
    """``build(rank, world_size)``: x [rows, features], y [rows] split evenly along the rows, the
    weight w [features] replicated."""
    def build(rank, world_size):
        n = rows // world_size
        return LeastSquaresGrad(ranks, world_size, features), {"x": torch.randn(n, features), "y": torch.randn(n)}
    return build
