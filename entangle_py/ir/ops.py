"""Facts about ops, by target (``namespace.op.overload``): the one place every stage reads them.

What an op *means* (its term) is the lowering registry's job (``semantics/lower.py``); what it
*is* — which namespace a graph may name, which ops are collectives and where their group and
reduction arguments sit, which ops pass their input through, allocate, draw random numbers or
only name a tensor — is here, so capture, import, display, lowering, the checker and the numeric
oracle cannot disagree about it.  ``tests/test_architecture.py`` fails when an op literal appears
in any module other than this one, the lowering registry and the mutant writer.
"""
from __future__ import annotations

from dataclasses import dataclass

# Op namespaces a graph may name.  Anything else is rejected at load time.
NAMESPACES = frozenset({
    "aten", "prims", "_c10d_functional", "c10d_functional", "_c10d_functional_autograd",
    "_dtensor", "higher_order", "tg", "apex",
})
# Namespaces of custom ops given their meaning by a plugin (entangle_py/plugins/<module>.py).
PLUGIN_NAMESPACES = {"_C": "vllm", "megatron": "megatron"}
NAMESPACES = NAMESPACES | frozenset(PLUGIN_NAMESPACES)
# Targets without a namespace: graph inputs and tuple projection.
BUILTIN_TARGETS = frozenset({"placeholder", "getitem"})
GETITEM = "getitem"

# ----------------------------------------------------------------------------- collectives

# Namespaces whose ops talk to other ranks (``wait_tensor`` among them only completes one).
COLLECTIVE_NAMESPACES = frozenset({"_c10d_functional", "c10d_functional", "_c10d_functional_autograd", "_dtensor"})
WAIT = "_c10d_functional.wait_tensor.default"
WAIT_OP = WAIT.split(".")[1]
# the legacy namespace names its group by an explicit rank list, not a group name
LEGACY_COLLECTIVE_NAMESPACE = "c10d_functional"


@dataclass(frozen=True)
class CollectiveSig:
    """Where a collective's arguments sit.  ``kind``: the collective the checker relates
    (all_reduce, all_gather, reduce_scatter, all_to_all, broadcast)."""
    kind: str
    group: int                  # position of the group name
    reduce: int | None = None   # position of the reduction ("sum", "max", "avg", ...)
    params: tuple = ()          # positions of the other arguments the relation needs


# The collectives the checker relates across ranks, by target.
COLLECTIVES = {
    "_c10d_functional.all_reduce.default": CollectiveSig("all_reduce", group=2, reduce=1),
    "_c10d_functional.all_gather_into_tensor.default": CollectiveSig("all_gather", group=2, params=(1,)),
    "_c10d_functional.reduce_scatter_tensor.default": CollectiveSig("reduce_scatter", group=3, reduce=1, params=(2,)),
    "_c10d_functional.all_to_all_single.default": CollectiveSig("all_to_all", group=3, params=(1, 2)),
    "_c10d_functional.broadcast.default": CollectiveSig("broadcast", group=2, params=(1,)),
}

# Point-to-point transfers (pipeline parallelism), by target -> kind: paired by the checker per
# communicator, (source, destination, tag) and issue order -- never by member set.
POINT_TO_POINT = {
    "_c10d_functional.isend.default": "isend",
    "_c10d_functional.irecv.default": "irecv",
    "_c10d_functional.batch_p2p_ops.default": "batch",
}
IRECV = "_c10d_functional.irecv.default"
BATCH_P2P = "_c10d_functional.batch_p2p_ops.default"
# A batched receive into a view of a buffer writes the buffer too: capture writes the received
# tensor back through each view of the chain with its scatter (the view's arguments follow the
# base in both); an alias is the whole tensor.  Other views received into are refused.
VIEW_SCATTER = {
    "aten.slice.Tensor": "aten.slice_scatter.default",
    "aten.select.int": "aten.select_scatter.default",
    "aten.alias.default": None,
}

# Position of the group argument of every collective op the numeric oracle runs, by op name
# (any collective namespace; ``_coalesced`` variants take the same position).
GROUP_ARG = {"all_reduce": 2, "all_reduce_": 2, "all_gather_into_tensor": 2, "reduce_scatter_tensor": 3,
             "all_to_all_single": 3, "broadcast": 2, "broadcast_": 2, "shard_dim_alltoall": 3}


def namespace(target: str) -> str:
    return target.split(".", 1)[0] if "." in target else ""


def op_name(target: str) -> str:
    """'all_reduce' for '_c10d_functional.all_reduce.default'."""
    parts = target.split(".")
    return parts[1] if len(parts) > 1 else target


def is_collective(target: str) -> bool:
    """An op that exchanges data with other ranks (not the wait that completes one)."""
    return namespace(target) in COLLECTIVE_NAMESPACES and op_name(target) != WAIT_OP


def is_wait(target: str) -> bool:
    return namespace(target) in COLLECTIVE_NAMESPACES and op_name(target) == WAIT_OP


# ----------------------------------------------------------------------------- values

# Ops whose value is their first argument's, exactly (same shape, dtype and values).
SAME_VALUE = frozenset({
    "aten.clone.default", "aten.detach.default", "aten.alias.default", "aten.contiguous.default",
    "aten.lift_fresh_copy.default",
})
LIFT_FRESH_COPY = "aten.lift_fresh_copy.default"
ALIAS = "aten.alias.default"
# a view of a buffer a custom op writes, and the buffer with that view replaced (frontend/decompose.py)
SLICE = "aten.slice.Tensor"
SLICE_SCATTER = "aten.slice_scatter.default"
# Ops that only give a tensor a name (the name becomes an alias usable in spec files).
NAMING_OPS = frozenset({"tg.log_tensor.default", "tg.inplace_log_tensor.default"})
LOG_TENSOR = "tg.log_tensor.default"
NAMING_OP_NAMES = frozenset(t.split(".")[1] for t in NAMING_OPS)     # in namespace tg, any overload
# Identities for a relation: the value of the first argument.
IDENTITY_OPS = SAME_VALUE | NAMING_OPS | {WAIT, "aten.clone", "aten.detach"}

# Results of the ATen ops with more than one, as torch's schemas give them, for the ops the
# checker lowers (tests/test_fx_import.py compares them with torch's registry): an FX dump names
# only the results a program reads, and importing it needs no torch
RESULT_COUNTS = {
    "aten.max.dim": 2, "aten.min.dim": 2, "aten.native_dropout.default": 2, "aten.native_layer_norm.default": 3,
    "aten.native_layer_norm_backward.default": 3, "aten.nll_loss_forward.default": 2, "aten.topk.default": 2,
    "aten.var_mean.correction": 2,
}

# copy(dst, src): src broadcast to dst's shape and cast to its dtype
COPY_OPS = frozenset({"aten.copy.default", "aten.copy_.default"})
# functionalization writes an input's new value with copy_ into the placeholder
COPY_INTO = "aten.copy_.default"
TO_COPY = "aten._to_copy.default"
# the indices of a tensor's nonzero elements, [count, ndim]: its row count is known only from the
# values (an unbacked size), which the checker relates across programs as a size of the term
NONZERO = "aten.nonzero.default"

# A mutating op in functional form: outputs are (op result, new value of each base).
AUTO_FUNCTIONALIZED = frozenset({"higher_order.auto_functionalized", "higher_order.auto_functionalized_v2"})
# v1 keeps the mutated arguments as keywords; v2 passes bases and view descriptions instead
AUTO_FUNCTIONALIZED_V1 = "higher_order.auto_functionalized"
AUTO_FUNCTIONALIZED_OPS = frozenset(t.split(".", 1)[1] for t in AUTO_FUNCTIONALIZED)

# Ops that write into arguments their schema does not mark mutable: native_batch_norm (and the
# cudnn / miopen kernels) update running_mean / running_var in place in training mode.
MUTATES_UNANNOTATED = frozenset({"aten.native_batch_norm.default", "aten.cudnn_batch_norm.default",
                                 "aten.miopen_batch_norm.default"})

RESHAPES = frozenset({"aten.view.default", "aten.reshape.default", "aten._unsafe_view.default"})
# Ops through which an integer tensor's values reach their user unchanged (to follow token ids
# from an input to the table they index).
VALUE_PRESERVING = RESHAPES | SAME_VALUE | {
    "aten.flatten.using_ints", "aten.unsqueeze.default", "aten.squeeze.dim", "aten._to_copy.default",
    "aten.expand.default", "aten.permute.default", "aten.t.default", "aten.transpose.int",
}
# Ops whose argument ``indices`` indexes dim ``table_dim`` of argument ``table``: (indices, table, table_dim).
INDEXING = {
    "aten.embedding.default": (1, 0, 0),
    "aten.nll_loss_forward.default": (1, 0, -1),
    "aten.nll_loss2d_forward.default": (1, 0, 1),
    "aten.nll_loss.default": (1, 0, -1),
    "aten.nll_loss_backward.default": (2, 1, -1),
    "aten.nll_loss2d_backward.default": (2, 1, 1),
}
# Position of the ignore index of the losses above (a target equal to it is no class: it is skipped)
IGNORE_INDEX_ARG = {
    "aten.nll_loss_forward.default": 4, "aten.nll_loss2d_forward.default": 4, "aten.nll_loss.default": 4,
    "aten.nll_loss_backward.default": 5, "aten.nll_loss2d_backward.default": 5,
}
INDEX_TENSOR = "aten.index.Tensor"        # args: (table, [index per dim, ...])

# Uninitialised allocations: their contents are arbitrary, so each is a free tensor equal to
# nothing (two `empty` calls with the same arguments are NOT the same tensor).
ALLOCATIONS = frozenset({
    "aten.empty.memory_format", "aten.empty_like.default", "aten.new_empty.default",
    "aten.new_empty_strided.default", "aten.empty_strided.default",
})

# Allocations filled with zeros whatever their other arguments (a slice_scatter into one is its
# source zero-padded).
ZERO_FILLS = frozenset({"aten.zeros.default", "aten.new_zeros.default", "aten.zeros_like.default"})

# Ops one of whose outputs holds, in every row along a dim, positions that are all different
# (topk's indices: k different elements of the row): target -> (output index, position of the
# dim argument, its default).  A scatter at such indices writes each position once.
DISTINCT_INDICES = {"aten.topk.default": (1, 2, -1)}

# Ops whose (int64, integer-bounded) output holds positions all different: start + i * step.
ARANGES = frozenset({"aten.arange.default", "aten.arange.start", "aten.arange.start_step"})

# Ops that draw random numbers: the k-th draw of a program is numbered k.
RANDOM_OPS = frozenset({
    "aten.native_dropout.default", "aten.bernoulli.default", "aten.bernoulli.p", "aten.rand.default",
    "aten.randn.default", "aten.rand_like.default", "aten.randn_like.default", "aten.randint.default",
    "aten.randint.low", "aten.randperm.default", "aten.normal.Tensor_float", "aten.uniform.default",
})
DROPOUT = "aten.native_dropout.default"
