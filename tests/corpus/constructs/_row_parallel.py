"""What framework code does inside ``forward`` that capture must model (issue 26), on a
row-parallel MLP: fc1 column-parallel, fc2 row-parallel, its partial sums all-reduced.
``make_build(variant)``; the builders at the end of this file name each program (``async_waited = make_build("async_waited")``):

* ``"async_waited"``: the all-reduce issued with ``async_op=True`` and waited on before its result
  is read (Megatron overlaps its backward all-reduces so);
* ``"async_read_before_wait"`` (wrong): the partial sums read between the call and ``wait()``;
* ``"async_never_waited"`` (wrong): the handle dropped without ``wait()``;
* ``"gloo_group"``: the all-reduce over a group created with ``backend="gloo"`` (Megatron's extra
  groups), in a forward that warns and logs (``warnings.warn``, ``logging``);
* ``"gloo_group_pairs"`` (wrong, 4 ranks): the gloo groups are pairs of ranks, so each rank sums
  half of the partial sums;
* ``"constant"``: constant tensors applied to the reduced output in ``forward`` (``torch.tensor([...])``), as
  frameworks write masks' fill values: lifted by the trace, written down as literals;
* ``"constant_world_size"`` (wrong): the constant's values depend on the world size (a scale
  meant for an average, applied to the reduced sum), so seq and dist hold different constants.

The async variants name ``GLOO_PEER_DELAY``: on gloo, the ranks other than 0 start late, so rank 0
reads its tensor before the collective can finish -- the outcome a slow peer gives, which a read
before ``wait()`` allows."""
import logging
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

HIDDEN, FFN = 8, 16
log = logging.getLogger("row_parallel_constructs")


def _group(world_size, variant):
    if world_size == 1 or not variant.startswith("gloo_group"):
        return None
    if variant == "gloo_group":
        return dist.new_group(list(range(world_size)), backend="gloo")
    mine = None
    for first in range(0, world_size, 2):          # every rank creates every group, in order
        g = dist.new_group([first, first + 1], backend="gloo")
        if dist.get_rank() in (first, first + 1):
            mine = g
    return mine


class RowParallelMLP(nn.Module):
    def __init__(self, world_size, variant):
        super().__init__()
        self.variant = variant
        self.fc1 = nn.Parameter(torch.randn(FFN // world_size, HIDDEN))
        self.fc2 = nn.Parameter(torch.randn(HIDDEN, FFN // world_size))
        self.world_size = world_size
        self.group = _group(world_size, variant)

    def forward(self, x):
        y = F.linear(F.relu(F.linear(x, self.fc1)), self.fc2)
        if self.world_size > 1:
            if self.variant.startswith("async"):
                return self._reduce_async(y)
            if self.variant.startswith("gloo_group"):
                warnings.warn("a warning in forward")
                log.info("a log line in forward")
            dist.all_reduce(y, group=self.group)  # BUG (gloo_group_pairs): a pair's group sums half
        if self.variant == "constant":
            scale = torch.tensor([1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0])   # lifted: not uniform
            zero = torch.tensor(0.0)                                           # lifted: one value
            y = y * scale + zero
        if self.variant == "constant_world_size":
            y = y * torch.tensor([1.0 / self.world_size] * HIDDEN)  # BUG: a world-size constant on a sum
        return y

    def _reduce_async(self, y):
        handle = dist.all_reduce(y, async_op=True)
        if self.variant == "async_read_before_wait":
            z = y * 1.0  # BUG: read before wait()
            handle.wait()
            return z
        if self.variant == "async_waited":
            handle.wait()
        return y  # BUG (async_never_waited): never waited on


def make_build(variant):
    def build(rank, world_size):
        return RowParallelMLP(world_size, variant), {"x": torch.randn(4, HIDDEN)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_row_parallel.py:<name>`, and `entangle capture tests/corpus/constructs/_row_parallel.py:<name>` captures one).  GLOO_*:
# how run_gloo.py runs it (a derived input, a late peer).
async_never_waited = make_build("async_never_waited")
async_never_waited.GLOO_PEER_DELAY = 1.0  # seconds: rank 0 reads before its peers join
async_read_before_wait = make_build("async_read_before_wait")
async_read_before_wait.GLOO_PEER_DELAY = 1.0  # seconds: rank 0 reads before its peers join
async_waited = make_build("async_waited")
async_waited.GLOO_PEER_DELAY = 1.0  # seconds: rank 0 reads before its peers join
constant = make_build("constant")
constant_world_size = make_build("constant_world_size")
gloo_group = make_build("gloo_group")
gloo_group_pairs = make_build("gloo_group_pairs")
