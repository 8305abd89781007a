"""Megatron-style tensor-parallel MLP: column-parallel fc1, gelu, row-parallel fc2.

Capture script (see ``entangle_py/frontend/capture.py``): ``build(rank, world_size)`` returns the model as
rank ``rank`` holds it and its inputs.  At ``world_size == 1`` the parallel layers are plain
``nn.Linear``-like layers without collectives (Megatron at TP=1): that is the sequential spec.

* fc1 (column-parallel): weight [FFN, HIDDEN] sharded along dim 0, bias [FFN] sharded;
  its input goes through ``copy_to_tp`` (identity forward, all-reduce backward).
* fc2 (row-parallel): weight [HIDDEN, FFN] sharded along dim 1, bias [HIDDEN] replicated and added
  *after* ``reduce_from_tp`` (all-reduce forward, identity backward).

This file also defines the Megatron primitives the other examples import (including the
sequence-parallel all-gather / reduce-scatter regions), written as ``torch.autograd.Function``s
over functional collectives, as Megatron-LM does.

Regenerate graphs/mlp_tp2, mlp_tp4, mlp_tp2_joint, mlp_tp4_joint, mlp_tp2_dynamic::

    python examples/mlp.py
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

# Small and pairwise distinct (also after sharding: FFN/2 = 10, FFN/4 = 5, BATCH*SEQ = 12).
BATCH, SEQ, HIDDEN, FFN = 2, 6, 8, 20

# With `entangle capture --dynamic`: batch and sequence are symbolic, hidden stays 8.
DYNAMIC_DIMS = {"x": [0, 1]}


# ----------------------------------------------------------------------------- Megatron primitives

class _CopyToTensorParallelRegion(torch.autograd.Function):
    """Identity forward, all-reduce (sum) backward."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        return funcol.all_reduce(grad, "sum", dist.group.WORLD)


class _ReduceFromTensorParallelRegion(torch.autograd.Function):
    """All-reduce (sum) forward, identity backward."""

    @staticmethod
    def forward(ctx, x):
        return funcol.all_reduce(x, "sum", dist.group.WORLD)

    @staticmethod
    def backward(ctx, grad):
        return grad


class _GatherFromSequenceParallelRegion(torch.autograd.Function):
    """All-gather along the sequence dim (0) forward, reduce-scatter (sum) backward."""

    @staticmethod
    def forward(ctx, x):
        return funcol.all_gather_tensor(x, 0, dist.group.WORLD)

    @staticmethod
    def backward(ctx, grad):
        return funcol.reduce_scatter_tensor(grad, "sum", 0, dist.group.WORLD)


class _ReduceScatterToSequenceParallelRegion(torch.autograd.Function):
    """Reduce-scatter (sum) along the sequence dim (0) forward, all-gather backward."""

    @staticmethod
    def forward(ctx, x):
        return funcol.reduce_scatter_tensor(x, "sum", 0, dist.group.WORLD)

    @staticmethod
    def backward(ctx, grad):
        return funcol.all_gather_tensor(grad, 0, dist.group.WORLD)


def copy_to_tp(x, world_size):
    return x if world_size == 1 else _CopyToTensorParallelRegion.apply(x)


def reduce_from_tp(x, world_size):
    return x if world_size == 1 else _ReduceFromTensorParallelRegion.apply(x)


def gather_from_sp(x, world_size):
    return x if world_size == 1 else _GatherFromSequenceParallelRegion.apply(x)


def reduce_scatter_to_sp(x, world_size):
    return x if world_size == 1 else _ReduceScatterToSequenceParallelRegion.apply(x)


def _shard(n, world_size, what):
    if n % world_size:
        raise ValueError(f"{what} = {n} is not divisible by the tensor-parallel size {world_size}")
    return n // world_size


class ColumnParallelLinear(nn.Module):
    """y = x @ W_r^T + b_r: the output features are split across ranks (no communication forward)."""

    def __init__(self, in_features, out_features, world_size, bias=True, sequence_parallel=False):
        super().__init__()
        self.world_size = world_size
        self.sequence_parallel = sequence_parallel
        local = _shard(out_features, world_size, "out_features")
        self.weight = nn.Parameter(torch.empty(local, in_features))
        self.bias = nn.Parameter(torch.empty(local)) if bias else None

    def forward(self, x):
        if self.sequence_parallel:      # x is a sequence shard: gather the whole sequence
            x = gather_from_sp(x, self.world_size)
        else:
            x = copy_to_tp(x, self.world_size)
        return F.linear(x, self.weight, self.bias)


class RowParallelLinear(nn.Module):
    """y = allreduce(x_r @ W_r^T) + b: the input features are split; the bias is replicated."""

    def __init__(self, in_features, out_features, world_size, bias=True, reduce=True, sequence_parallel=False):
        super().__init__()
        self.world_size = world_size
        self.reduce = reduce
        self.sequence_parallel = sequence_parallel
        self.weight = nn.Parameter(torch.empty(out_features, _shard(in_features, world_size, "in_features")))
        self.bias = nn.Parameter(torch.empty(out_features)) if bias else None

    def forward(self, x):
        y = F.linear(x, self.weight)
        if self.reduce and self.sequence_parallel:     # sum and split along the sequence
            y = reduce_scatter_to_sp(y, self.world_size)
        elif self.reduce:
            y = reduce_from_tp(y, self.world_size)
        if self.bias is not None:
            y = y + self.bias
        return y


# ----------------------------------------------------------------------------- the model

class MLP(nn.Module):
    def __init__(self, world_size, hidden=HIDDEN, ffn=FFN, reduce=True):
        super().__init__()
        self.fc1 = ColumnParallelLinear(hidden, ffn, world_size)
        self.fc2 = RowParallelLinear(ffn, hidden, world_size, reduce=reduce)

    def forward(self, x):
        h = F.gelu(self.fc1(x))
        return self.fc2(h)


def build(rank, world_size):
    model = MLP(world_size)
    x = torch.randn(BATCH, SEQ, HIDDEN, requires_grad=True)
    return model, {"x": x}


# ----------------------------------------------------------------------------- committed graphs

SPEC_FORWARD = """\
# Input relation of the Megatron MLP (examples/mlp.py).  fc1 is column-parallel, fc2 row-parallel.
[inputs]
"input:x" = "replicate"
"param:fc1.weight" = "shard(0)"
"param:fc1.bias" = "shard(0)"
"param:fc2.weight" = "shard(1)"
"param:fc2.bias" = "replicate"

[outputs]
check = ["out"]

[expect]
"out" = "replicate"
"""

SPEC_JOINT = """\
# Input relation of the Megatron MLP (examples/mlp.py), joint forward+backward graph.
[inputs]
"input:x" = "replicate"
"param:fc1.weight" = "shard(0)"
"param:fc1.bias" = "shard(0)"
"param:fc2.weight" = "shard(1)"
"param:fc2.bias" = "replicate"
"tangent:out" = "replicate"

[outputs]
check = ["out", "grad:input:x", "grad:fc1.weight", "grad:fc1.bias", "grad:fc2.weight", "grad:fc2.bias"]

[expect]
"out" = "replicate"
"grad:input:x" = "replicate"
"grad:fc1.weight" = "shard(0)"
"grad:fc1.bias" = "shard(0)"
"grad:fc2.weight" = "shard(1)"
"grad:fc2.bias" = "replicate"
"""

# (directory under graphs/, world size, joint, dynamic, spec.toml text)
GRAPHS = [
    ("mlp_tp2", 2, False, False, SPEC_FORWARD),
    ("mlp_tp4", 4, False, False, SPEC_FORWARD),
    ("mlp_tp2_joint", 2, True, False, SPEC_JOINT),
    ("mlp_tp4_joint", 4, True, False, SPEC_JOINT),
    ("mlp_tp2_dynamic", 2, False, True, SPEC_FORWARD),
]

if __name__ == "__main__":
    from entangle_py.frontend.capture import regenerate_examples
    regenerate_examples(__file__, GRAPHS)
