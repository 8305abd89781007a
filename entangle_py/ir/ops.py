"""Facts about ops, by target (``namespace.op.overload``): the one place every stage reads them.

What an op *means* (its term) is the lowering registry's job (``semantics/lower/``); what it
*is* — which namespace a graph may name, which ops are collectives and where their group and
reduction arguments sit, which ops pass their input through, allocate, draw random numbers or
only name a tensor — is here, so capture, import, display, lowering, the checker and the numeric
oracle cannot disagree about it.  ``tests/test_architecture.py`` fails when an op literal appears
in any module other than this one, the lowering registry and the mutant writer.
"""
from __future__ import annotations

from dataclasses import dataclass

from entangle_py.ir import op_classes

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
    "aten.diagonal.default": "aten.diagonal_scatter.default",
    "aten.alias.default": None,
    "aten.detach.default": None,
}
# More views a write reaches its base through (frontend/functionalize.py): views that lay the base's
# elements out in another shape, in order (written back with ``view`` to the base's shape) ...
RESHAPING_VIEWS = frozenset({
    "aten.view.default", "aten._unsafe_view.default", "aten.unsqueeze.default", "aten.squeeze.default",
    "aten.squeeze.dim", "aten.squeeze.dims", "aten.flatten.using_ints", "aten.unflatten.int",
})
VIEW = "aten.view.default"
# ... views that permute its dims (written back with the inverse permutation) ...
SELF_INVERSE_VIEWS = frozenset({"aten.t.default", "aten.transpose.int"})
PERMUTE = "aten.permute.default"
# ... and parts of a split (a part, taken with getitem, written back into its slice or index).
SPLITS = frozenset({"aten.split.Tensor", "aten.split_with_sizes.default"})
UNBIND = "aten.unbind.int"
SELECT_SCATTER = "aten.select_scatter.default"

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
# what a lifted constant whose value capture knows is written as (frontend/convert.constant_literal):
# one fill, or one fill per element concatenated (then viewed to its shape)
FULL = "aten.full.default"
CAT = "aten.cat.default"
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

# Results of the ATen ops with more than one, as torch's schemas give them (the generated table,
# ir/op_classes.py): an FX dump names only the results a program reads, and importing it needs no torch
RESULT_COUNTS = op_classes.RESULTS

# copy(dst, src): src broadcast to dst's shape and cast to its dtype
COPY_OPS = frozenset({"aten.copy.default", "aten.copy_.default"})
# functionalization writes an input's new value with copy_ into the placeholder
COPY_INTO = "aten.copy_.default"
TO_COPY = "aten._to_copy.default"
# the one ATen op the checker lowers that writes an argument (its schema's ``(a!)``); no other
# lowered ATen op writes (tests/test_fx_import.py compares with torch's registry), so functionalizing
# a dump of lowered ops reads no schema and imports no torch
LOWERED_WRITES = frozenset({COPY_INTO})
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
# the first of them and its functional form (frontend/functionalize.py), which also returns the new
# running statistics
BATCH_NORM = "aten.native_batch_norm.default"
BATCH_NORM_FUNCTIONAL = "aten._native_batch_norm_legit_functional.default"

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

# ----------------------------------------------------------------------------- random draws

@dataclass(frozen=True)
class RandomDraw:
    """What a random op draws from the rank's default generator (check/random.py couples draws,
    oracle/numeric_runs.py samples them).  ``output``: the index of the drawn tensor among the op's
    outputs (None: its only output); ``params``: (name, position, default) of the arguments that
    choose the distribution (two draws pair only with equal params); ``elementwise``: every
    element an independent sample of one distribution, so draws from independent streams that
    tile a shape are one draw of it (a permutation is one whole draw); ``kind``: how the oracle
    samples it (``keep`` a keep-mask, ``uniform`` in [from, to), ``normal``, ``integers`` in
    [low, high), ``permutation`` of n)."""
    output: int | None
    params: tuple
    kind: str
    elementwise: bool = True


RANDOM_DRAWS = {
    "aten.native_dropout.default": RandomDraw(1, (("p", 1, None), ("train", 2, None)), "keep"),
    "aten.bernoulli.p": RandomDraw(None, (("p", 1, 0.5),), "bernoulli"),
    "aten.rand.default": RandomDraw(None, (), "uniform"),
    "aten.rand_like.default": RandomDraw(None, (), "uniform"),
    "aten.uniform.default": RandomDraw(None, (("from", 1, 0.0), ("to", 2, 1.0)), "uniform"),
    "aten.randn.default": RandomDraw(None, (), "normal"),
    "aten.randn_like.default": RandomDraw(None, (), "normal"),
    "aten.randint.default": RandomDraw(None, (("high", 0, None),), "integers"),
    "aten.randint.low": RandomDraw(None, (("low", 0, None), ("high", 1, None)), "integers"),
    "aten.randperm.default": RandomDraw(None, (("n", 0, None),), "permutation", elementwise=False),
}
# Ops that consume the default generator: every draw above, and draws whose samples depend on a
# tensor argument's values (no draw model: not lowered).  The k-th of them in a graph is its k-th draw.
RANDOM_OPS = frozenset(RANDOM_DRAWS) | frozenset({"aten.bernoulli.default", "aten.normal.Tensor_float"})
DROPOUT = "aten.native_dropout.default"
