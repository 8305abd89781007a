"""Numeric interpreter over graph bundles: run G_s and every rank of G_d with real torch ops on CPU.

Used for capture-faithfulness tests and for failure evidence (DESIGN §6): run both programs
(possibly only up to some nodes, ``upto``) on inputs from ``placement`` and compare.

* Op targets resolve only against the whitelisted namespaces (``ir.ops.NAMESPACES``) with
  ``getattr`` on ``torch.ops`` -- nothing from a graph file is ever evaluated.
* Device constants (meta, cuda, ...) become ``cpu``; ``pin_memory`` is dropped.  With
  ``float_dtype`` every floating-point dtype constant is replaced (run a float32/bf16 capture in
  float64).
* Symbolic sizes in arguments are evaluated with the symbols bound by unifying each placeholder's
  shape with the actual input's shape (SymInt placeholders get their value from that binding).
* Collectives are simulated across ranks in one process: each rank's interpretation is a generator
  that issues every collective without blocking into its communicator's queue (a communicator is
  a process group: its name and members; two groups with the same members are two), and waits
  for a collective's value where a later node reads it; the k-th collectives of the members on
  one communicator are matched and computed together, as c10d orders them.  A rank whose collective does not match its peers' raises
  ``CollectiveMismatch`` naming both ranks, nodes and ops.
"""
from __future__ import annotations

import functools
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable

from entangle_py.lazy import sympy, torch
from entangle_py.ir import graph as G
from entangle_py.ir import ops
from entangle_py import plugins
from entangle_py.errors import InputError


class InterpError(InputError):
    """The interpreter cannot run a graph (bad inputs, unbound size, failing op)."""


class UnsupportedOp(InterpError):
    """An op target that is not whitelisted or does not exist in this torch."""


class CollectiveMismatch(InterpError):
    """Ranks disagree on a collective (different op / group / shape), or one never joins it."""


class ShapeMismatch(InterpError):
    """A value's shape differs from the shape recorded in the graph."""


# ----------------------------------------------------------------------------- op resolution

_OP_CACHE: dict[str, Any] = {}


def _split_target(target: str) -> tuple[str, str, str]:
    try:
        G.check_target(target)
    except G.GraphFormatError as e:
        raise UnsupportedOp(str(e)) from None
    parts = target.split(".")
    if len(parts) == 2:
        parts.append("default")
    ns, op, overload = parts
    if op.startswith("__") or overload.startswith("__"):
        raise UnsupportedOp(f"op {target!r}: dunder names are not ops")
    return ns, op, overload


def resolve_op(target: str) -> torch._ops.OpOverload:
    """``'aten.mm.default'`` -> ``torch.ops.aten.mm.default`` (whitelisted namespaces only)."""
    if target in _OP_CACHE:
        return _OP_CACHE[target]
    ns, op, overload = _split_target(target)
    if ns not in ops.NAMESPACES:   # check_target already did; kept as the explicit gate
        raise UnsupportedOp(f"op {target!r}: namespace {ns!r} is not allowed")
    if target in plugins.PURE:      # a custom op left whole (data-dependent): its reference runs
        _OP_CACHE[target] = plugins.REGISTRY[target].reference
        return _OP_CACHE[target]
    try:
        packet = getattr(getattr(torch.ops, ns), op)
        fn = getattr(packet, overload)
    except (AttributeError, RuntimeError):
        raise UnsupportedOp(f"unknown op {target!r}: torch {torch.__version__} has no torch.ops.{ns}.{op}.{overload}") from None
    if not isinstance(fn, (torch._ops.OpOverload, torch._ops.HigherOrderOperator)):
        raise UnsupportedOp(f"op {target!r} does not resolve to a torch operator")
    _OP_CACHE[target] = fn
    return fn


# ----------------------------------------------------------------------------- constants, sizes

def _torch_const(c: G.TorchConst, float_dtype):
    if c.kind == "device":
        return torch.device("cpu")
    obj = getattr(torch, c.value, None) if not c.value.startswith("_") else None
    want = {"dtype": torch.dtype, "layout": torch.layout, "memory_format": torch.memory_format}[c.kind]
    if not isinstance(obj, want):
        raise InterpError(f"unknown {c.kind} constant {c.value!r}")
    if c.kind == "dtype" and float_dtype is not None and obj.is_floating_point:
        return float_dtype
    return obj


def eval_size(expr, binding: dict[str, int], where: str = "") -> int:
    """Value of a size expression under ``binding`` (symbol name -> int)."""
    if isinstance(expr, (int, bool)):
        return int(expr)
    if not isinstance(expr, sympy.Basic):
        raise InterpError(f"{where}: not a size: {expr!r}")
    e = expr.xreplace({s: sympy.Integer(binding[s.name]) for s in expr.free_symbols if s.name in binding})
    if e.free_symbols:
        raise InterpError(f"{where}: size {expr} has unbound symbol(s) "
                          f"{', '.join(sorted(s.name for s in e.free_symbols))}")
    try:
        return int(e)
    except TypeError:
        raise InterpError(f"{where}: size {expr} does not evaluate to an integer ({e})") from None


def _eval_condition(expr, binding: dict[str, int], where: str) -> bool:
    """Value of a condition on sizes under ``binding``."""
    e = expr.xreplace({s: sympy.Integer(binding[s.name]) for s in expr.free_symbols if s.name in binding})
    if e is sympy.true or e is sympy.false:
        return bool(e)
    raise InterpError(f"{where}: condition {expr} does not evaluate to true or false ({e})")


def unify_shape(meta_shape: Iterable, actual: Iterable[int], binding: dict[str, int], where: str) -> None:
    """Bind the symbols of ``meta_shape`` so that it equals ``actual``; raise on a contradiction."""
    meta_shape, actual = tuple(meta_shape), tuple(int(a) for a in actual)
    if len(meta_shape) != len(actual):
        raise ShapeMismatch(f"{where}: expected {len(meta_shape)} dims {_fmt_shape(meta_shape)}, got shape {list(actual)}")
    pending = list(zip(meta_shape, actual))
    while pending:
        rest = []
        for m, a in pending:
            if isinstance(m, int) or (isinstance(m, sympy.Basic) and m.is_Integer):
                if int(m) != a:
                    raise ShapeMismatch(f"{where}: expected shape {_fmt_shape(meta_shape)}, got {list(actual)}")
                continue
            free = [s for s in m.free_symbols if s.name not in binding]
            if not free:
                v = eval_size(m, binding, where)
                if v != a:
                    raise ShapeMismatch(f"{where}: expected shape {_fmt_shape(meta_shape)} "
                                        f"= {_fmt_shape([_try_eval(x, binding) for x in meta_shape])}, got {list(actual)}")
            elif len(free) == 1:
                s = free[0]
                if m == s:
                    binding[s.name] = a
                else:
                    sols = _solve_int(m.xreplace({x: sympy.Integer(binding[x.name]) for x in m.free_symbols if x.name in binding}), s, a)
                    if sols is None:
                        rest.append((m, a))
                    else:
                        binding[s.name] = sols
            else:
                rest.append((m, a))
        if len(rest) == len(pending):
            return   # nothing more can be bound from this shape; later uses report unbound symbols
        pending = rest


def _solve_int(expr, sym, value):
    try:
        sols = sympy.solve(sympy.Eq(expr, value), sym)
    except (NotImplementedError, TypeError, ValueError):
        sols = []
    ints = [int(x) for x in sols if getattr(x, "is_Integer", False) and int(x) > 0]
    if len(ints) == 1:
        return ints[0]
    # small brute force for FloorDiv / Mod expressions sympy cannot invert
    for v in range(1, 1 << 16):
        try:
            if int(expr.xreplace({sym: sympy.Integer(v)})) == value:
                return v
        except TypeError:
            return None
    return None


def _try_eval(x, binding):
    try:
        return eval_size(x, binding)
    except InterpError:
        return x


def _fmt_shape(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


# ----------------------------------------------------------------------------- collectives

_REDUCE_OPS = ("sum", "avg", "max", "min", "product")


@dataclass
class _Request:
    """A rank stopped at a communication op."""
    rank: int
    node: G.Node
    kind: str                     # all_reduce, all_gather, reduce_scatter, all_to_all, broadcast,
                                  # shard_dim_alltoall, *_coalesced, recv, batch_recv
    members: tuple = ()           # global ranks of the group, in group-rank order
    tensors: list = field(default_factory=list)
    params: dict = field(default_factory=dict)
    comm: tuple = ()              # the communicator: (group name, members)
    value: Any = None             # the result, once every member issued its matching collective
    done: bool = False

    def describe(self) -> str:
        shapes = ", ".join(str(list(t.shape)) for t in self.tensors if isinstance(t, torch.Tensor))
        extra = ", ".join(f"{k}={v}" for k, v in self.params.items() if k not in ("recvs",))
        return f"{self.node.target} on ranks {list(self.members)} [{shapes}]" + (f" {extra}" if extra else "")


def _load_collective_ops() -> None:
    """Python-registered collective ops (legacy c10d_functional, _dtensor) exist after these imports."""
    for mod in ("torch.distributed._functional_collectives", "torch.distributed.tensor._collective_utils"):
        try:
            __import__(mod)
        except Exception:   # pragma: no cover - a torch without distributed
            pass


def _positional(target: str, args: list, kwargs: dict) -> list:
    """Arguments in schema order (kwargs placed by name, defaults filled in)."""
    try:
        fn = resolve_op(target)
    except UnsupportedOp:
        _load_collective_ops()
        try:
            fn = resolve_op(target)
        except UnsupportedOp:
            return list(args) + list(kwargs.values())
    out = list(args)
    for a in fn._schema.arguments[len(args):]:
        if a.name in kwargs:
            out.append(kwargs[a.name])
        elif a.has_default_value():
            out.append(a.default_value)
        else:
            break
    return out


def _reduce(tensors: list, op: str, where: str):
    if op not in _REDUCE_OPS:
        raise UnsupportedOp(f"{where}: reduce op {op!r} is not supported ({', '.join(_REDUCE_OPS)})")
    if op == "sum" or op == "avg":
        out = functools.reduce(torch.add, tensors)
        return out / len(tensors) if op == "avg" else out
    if op == "product":
        return functools.reduce(torch.mul, tensors)
    return functools.reduce(torch.maximum if op == "max" else torch.minimum, tensors)


def _split_sizes(sizes, total, n, where):
    if sizes is None or len(sizes) == 0:
        if total % n:
            raise CollectiveMismatch(f"{where}: dim 0 of size {total} does not split evenly over {n} ranks")
        return [total // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or sum(sizes) != total:
        raise CollectiveMismatch(f"{where}: split sizes {sizes} do not tile dim 0 of size {total} over {n} ranks")
    return sizes


def _complete(reqs: list[_Request]) -> list:
    """Results of one collective, in group-rank order; ``reqs`` agree on kind and members."""
    first = reqs[0]
    n = len(reqs)
    kind = first.kind
    where = f"{first.node.target} (rank {first.rank} node {first.node.name!r})"
    if kind in ("all_reduce", "all_reduce_coalesced"):
        nt = len(first.tensors)
        outs = [_reduce([r.tensors[i] for r in reqs], first.params["reduce_op"], where) for i in range(nt)]
        return [[o.clone() for o in outs] if kind.endswith("coalesced") else outs[0].clone() for _ in reqs]
    if kind in ("all_gather", "all_gather_coalesced"):
        outs = [torch.cat([r.tensors[i] for r in reqs], dim=0) for i in range(len(first.tensors))]
        return [[o.clone() for o in outs] if kind.endswith("coalesced") else outs[0].clone() for _ in reqs]
    if kind in ("reduce_scatter", "reduce_scatter_coalesced"):
        per_tensor = []
        for i in range(len(first.tensors)):
            full = _reduce([r.tensors[i] for r in reqs], first.params["reduce_op"], where)
            if full.shape[0] % n:
                raise CollectiveMismatch(f"{where}: dim 0 of size {full.shape[0]} does not split evenly over {n} ranks")
            per_tensor.append([c.clone() for c in torch.chunk(full, n, dim=0)] if full.shape[0] else [full] * n)
        return [[pt[j] for pt in per_tensor] if kind.endswith("coalesced") else per_tensor[0][j] for j in range(n)]
    if kind == "broadcast":
        src = first.params["src"]
        if not 0 <= src < n:
            raise CollectiveMismatch(f"{where}: broadcast source {src} is not a rank of the {n}-rank group "
                                     f"(src is the rank within the group)")
        return [reqs[src].tensors[0].clone() for _ in reqs]
    if kind == "all_to_all":
        chunks = []
        for r in reqs:
            t = r.tensors[0]
            sizes = _split_sizes(r.params.get("input_split_sizes"), t.shape[0], n,
                                 f"{r.node.target} (rank {r.rank} node {r.node.name!r}) input")
            chunks.append(list(torch.split(t, sizes, dim=0)))
        outs = []
        for j, r in enumerate(reqs):
            out = torch.cat([chunks[i][j] for i in range(n)], dim=0)
            want = r.params.get("output_split_sizes")
            got = [chunks[i][j].shape[0] for i in range(n)]
            if want and [int(w) for w in want] != got:
                raise CollectiveMismatch(f"{r.node.target} (rank {r.rank} node {r.node.name!r}): output split sizes "
                                         f"{[int(w) for w in want]} but the peers send {got}")
            outs.append(out)
        return outs
    if kind == "shard_dim_alltoall":
        gd, sd = first.params["gather_dim"], first.params["shard_dim"]
        full = torch.cat([r.tensors[0] for r in reqs], dim=gd)
        if full.shape[sd] % n:
            raise CollectiveMismatch(f"{where}: dim {sd} of size {full.shape[sd]} does not split evenly over {n} ranks")
        return [c.contiguous() for c in torch.chunk(full, n, dim=sd)]
    raise UnsupportedOp(f"{where}: collective kind {kind!r}")


def _check_match(reqs: list[_Request]) -> None:
    a = reqs[0]
    for b in reqs[1:]:
        problem = None
        if b.kind != a.kind:
            problem = "different collectives"
        elif b.members != a.members:
            problem = "different group rank order"
        elif {k: v for k, v in a.params.items() if k not in ("input_split_sizes", "output_split_sizes")} != \
                {k: v for k, v in b.params.items() if k not in ("input_split_sizes", "output_split_sizes")}:
            problem = "different parameters"
        elif len(a.tensors) != len(b.tensors):
            problem = "different numbers of tensors"
        elif any(x.dtype != y.dtype for x, y in zip(a.tensors, b.tensors)):
            problem = "different dtypes"
        elif a.kind not in ("all_to_all", "shard_dim_alltoall", "all_gather", "all_gather_coalesced") and \
                any(x.shape != y.shape for x, y in zip(a.tensors, b.tensors)):
            problem = "different shapes"
        elif a.kind in ("all_gather", "all_gather_coalesced") and \
                any(x.shape[1:] != y.shape[1:] for x, y in zip(a.tensors, b.tensors)):
            problem = "different shapes"
        if problem:
            raise CollectiveMismatch(
                f"collective mismatch ({problem}): rank {a.rank} is at node {a.node.name!r} ({a.describe()}) "
                f"but rank {b.rank} is at node {b.node.name!r} ({b.describe()})")


# ----------------------------------------------------------------------------- the interpreter

_PARK = object()   # yielded by a rank whose ``upto`` nodes are all computed


class Runner:
    def __init__(self, bundle: G.Bundle, inputs_per_rank, upto, float_dtype, check_shapes):
        if len(inputs_per_rank) != bundle.world_size:
            raise InterpError(f"{len(inputs_per_rank)} input dicts for a {bundle.world_size}-rank bundle")
        self.bundle = bundle
        self.W = bundle.world_size
        self.float_dtype = float_dtype
        self.check_shapes = check_shapes
        self.upto = upto
        self.envs: list[dict[str, Any]] = [dict() for _ in range(self.W)]
        self.bindings: list[dict[str, int]] = [dict() for _ in range(self.W)]
        self.mailbox: dict[tuple, deque] = {}
        for r in range(self.W):
            self._bind_inputs(r, inputs_per_rank[r])

    # -- inputs
    def _bind_inputs(self, r: int, given: dict):
        g = self.bundle.rank(r)
        env, binding = self.envs[r], self.bindings[r]
        by_node = {p.node: p.name for p in g.inputs}
        known = set(by_node.values()) | {n.name for n in g.nodes if n.is_placeholder}
        unknown = set(given) - known
        if unknown:
            raise InterpError(f"rank {r}: inputs {sorted(unknown)} are not inputs of the graph "
                              f"(inputs: {', '.join(p.name for p in g.inputs)})")
        placeholders = [n for n in g.nodes if n.is_placeholder]
        missing = []
        later = []
        for n in placeholders:
            port = by_node.get(n.name, n.name)
            key = port if port in given else (n.name if n.name in given else None)
            if isinstance(n.val, G.TensorMeta):
                if key is None:
                    missing.append(port)
                    continue
                t = given[key]
                if not isinstance(t, torch.Tensor):
                    raise InterpError(f"rank {r}: input {port!r} must be a tensor, got {type(t).__name__}")
                unify_shape(n.val.shape, t.shape, binding, f"rank {r} input {port!r}")
                env[n.name] = t.clone()    # in-place ops in the graph must not touch the caller's tensors
            else:
                later.append((n, port, key))
        if missing:
            raise InterpError(f"rank {r}: missing input(s) {', '.join(repr(m) for m in missing)}")
        for n, port, key in later:
            if key is not None:
                v = given[key]
                if isinstance(n.val, G.SymIntMeta):
                    v = int(v)
                    e = n.val.expr
                    if isinstance(e, sympy.Symbol) and e.name not in binding:
                        binding[e.name] = v
                    elif _try_eval(e, binding) not in (v, e):
                        raise ShapeMismatch(f"rank {r} input {port!r}: given {v} but the shapes say {e} = {_try_eval(e, binding)}")
                env[n.name] = v
            elif isinstance(n.val, G.SymIntMeta):
                env[n.name] = eval_size(n.val.expr, binding, f"rank {r} SymInt input {port!r}")
            else:
                raise InterpError(f"rank {r}: missing input {port!r} ({n.val!r})")

    # -- argument resolution
    def _arg(self, r, v, node):
        if isinstance(v, G.Ref):
            try:
                return self.envs[r][v.name]
            except KeyError:
                raise InterpError(f"rank {r} node {node.name!r}: argument {v.name!r} has not been computed") from None
        if isinstance(v, G.TorchConst):
            return _torch_const(v, self.float_dtype)
        if isinstance(v, (list, tuple)):
            return [self._arg(r, x, node) for x in v]
        if isinstance(v, sympy.Basic):
            if v is sympy.true or v is sympy.false:
                return bool(v)
            if isinstance(v, (sympy.core.relational.Relational, sympy.logic.boolalg.BooleanFunction)):  # u0 <= 8
                return _eval_condition(v, self.bindings[r], f"rank {r} node {node.name!r}")
            return eval_size(v, self.bindings[r], f"rank {r} node {node.name!r}")
        return v

    def _args(self, r, node):
        args = [self._arg(r, a, node) for a in node.args]
        kwargs = {k: self._arg(r, v, node) for k, v in node.kwargs.items() if k != "pin_memory"}
        return args, kwargs

    def _finish_collective(self, r, req: _Request, name: str):
        """A collective's value replaces its request in the rank's environment."""
        self.envs[r][name] = req.value
        if self.check_shapes:
            self._check_val(r, req.node, req.node.val, req.value)

    def _comm_of(self, r, node) -> tuple:
        """The communicator a collective runs on: its group's name and members (two groups with
        the same members are two communicators, each with its own order of collectives)."""
        A = _positional(node.target, *self._args(r, node))
        op = _split_target(node.target)[1]
        idx = ops.GROUP_ARG.get(op.replace("_coalesced", ""))
        name = A[idx] if idx is not None and idx < len(A) else None
        members = tuple(self._group(r, node, name))
        return G.communicator(self.bundle.ranks, name, members)

    # -- group lookup
    def _group(self, r, node, name):
        g = self.bundle.rank(r)
        if isinstance(name, (list, tuple)):   # legacy c10d_functional: explicit rank list
            members = tuple(int(x) for x in name)
        elif name in g.groups:
            members = tuple(g.groups[name])
        elif not g.groups:
            members = tuple(range(self.W))    # no group table: the whole world
        else:
            raise InterpError(f"rank {r} node {node.name!r}: process group {name!r} is not in the rank's group "
                              f"table ({', '.join(sorted(g.groups))})")
        if r not in members:
            raise CollectiveMismatch(f"rank {r} node {node.name!r}: {node.target} on group {name!r} = ranks "
                                     f"{list(members)}, which does not include rank {r}")
        if any(not 0 <= m < self.W for m in members):
            raise InterpError(f"rank {r} node {node.name!r}: group {name!r} names ranks outside the world {list(members)}")
        return members

    def _collective(self, r, node, args, kwargs):
        ns, op, _ = _split_target(node.target)
        if op == "wait_tensor":
            return None, args[0]
        legacy = ns == ops.LEGACY_COLLECTIVE_NAMESPACE
        A = _positional(node.target, args, kwargs)

        def grp(i_name, i_ranks):
            return self._group(r, node, A[i_ranks] if legacy else A[i_name])

        def tens(x):
            return [x] if isinstance(x, torch.Tensor) else list(x)

        if op in ("all_reduce", "all_reduce_", "all_reduce_coalesced", "all_reduce_coalesced_"):
            kind = "all_reduce_coalesced" if "coalesced" in op else "all_reduce"
            return _Request(r, node, kind, grp(2, 3), tens(A[0]), {"reduce_op": str(A[1]).lower()}), None
        if op in ("all_gather_into_tensor", "all_gather_into_tensor_coalesced"):
            members = grp(2, 2)
            size = int(A[3] if legacy else A[1])
            self._check_group_size(r, node, members, size)
            return _Request(r, node, "all_gather_coalesced" if "coalesced" in op else "all_gather", members,
                            tens(A[0]), {"group_size": size}), None
        if op in ("reduce_scatter_tensor", "reduce_scatter_tensor_coalesced"):
            members = grp(3, 3)
            size = int(A[4] if legacy else A[2])
            self._check_group_size(r, node, members, size)
            return _Request(r, node, "reduce_scatter_coalesced" if "coalesced" in op else "reduce_scatter", members,
                            tens(A[0]), {"reduce_op": str(A[1]).lower(), "group_size": size}), None
        if op == "all_to_all_single":
            members = grp(3, 4)
            return _Request(r, node, "all_to_all", members, [A[0]],
                            {"output_split_sizes": A[1], "input_split_sizes": A[2]}), None
        if op in ("broadcast", "broadcast_"):
            # src is a GROUP rank (torch passes it to the process group as its root rank): on the
            # group [1, 0], src=0 sends global rank 1's tensor (tests/test_interp_gloo.py, on gloo).
            # dist.broadcast's src is global, but Dynamo does not remap it to this op.
            members = grp(2, 3)
            return _Request(r, node, "broadcast", members, [A[0]], {"src": int(A[1])}), None
        if op == "shard_dim_alltoall":
            return _Request(r, node, "shard_dim_alltoall", grp(3, 3), [A[0]],
                            {"gather_dim": int(A[1]), "shard_dim": int(A[2])}), None
        if op in ("isend", "irecv", "batch_p2p_ops"):
            return self._p2p(r, node, op, A), None
        raise UnsupportedOp(f"rank {r} node {node.name!r}: collective {node.target!r} is not supported by the interpreter")

    @staticmethod
    def _check_group_size(r, node, members, size):
        if size != len(members):
            raise CollectiveMismatch(f"rank {r} node {node.name!r}: {node.target} says group_size={size} but its "
                                     f"group has {len(members)} ranks {list(members)}")

    def _p2p(self, r, node, op, A):
        if op == "isend":       # a send's own output is an empty tensor (as torch's kernel returns)
            self._post(r, int(A[1]), int(A[2]), A[0])
            return ("value", A[0].new_empty(0))
        if op == "irecv":
            return _Request(r, node, "recv", (int(A[1]), r), [A[0]], {"recvs": [(0, int(A[1]), int(A[2]), A[0])]})
        ops, peers, tags, tensors = A[0], A[1], A[2], A[3]
        recvs = []
        for i, (o, p, t, x) in enumerate(zip(ops, peers, tags, tensors)):
            if o == "isend":
                self._post(r, int(p), int(t), x)
            elif o == "irecv":
                recvs.append((i, int(p), int(t), x))
            else:
                raise UnsupportedOp(f"rank {r} node {node.name!r}: p2p op {o!r}")
        return _Request(r, node, "batch_recv", tuple(sorted({p for _, p, _, _ in recvs} | {r})), list(tensors),
                        {"recvs": recvs})

    def _post(self, src, dst, tag, t):
        if not 0 <= dst < self.W:
            raise InterpError(f"rank {src}: send to rank {dst} outside the world")
        self.mailbox.setdefault((src, dst, tag), deque()).append(t.clone())

    def _try_recv(self, req: _Request):
        recvs = req.params["recvs"]
        if not all(self.mailbox.get((p, req.rank, t)) for _, p, t, _ in recvs):
            return False, None
        got = {}
        for i, p, t, buf in recvs:
            msg = self.mailbox[(p, req.rank, t)].popleft()
            if msg.shape != buf.shape:
                raise CollectiveMismatch(f"rank {req.rank} node {req.node.name!r}: receives shape {list(buf.shape)} "
                                         f"from rank {p} but rank {p} sent {list(msg.shape)}")
            got[i] = msg.to(buf.dtype)
        if req.kind == "recv":
            return True, got[0]
        return True, [got[i] if i in got else x.new_empty(0) for i, x in enumerate(req.tensors)]

    # -- one rank
    def _program(self, r):
        g = self.bundle.rank(r)
        env = self.envs[r]
        goal = None
        if self.upto is not None:
            goal = set(self.upto.get(r, ()))
            unknown = [x for x in goal if not g.has(x)]
            if unknown:
                raise InterpError(f"rank {r}: upto names unknown node(s) {sorted(unknown)}")
            goal -= set(env)
        for node in g.nodes:
            if goal is not None and not goal:
                yield _PARK
            if node.is_placeholder:
                continue
            for ref in node.refs():
                held = env.get(ref)
                if isinstance(held, _Request):
                    if not held.done:
                        yield ("wait", held)
                    self._finish_collective(r, held, ref)
            args, kwargs = self._args(r, node)
            target = node.target
            ns = node.namespace
            try:
                if target == "getitem":
                    v = args[0][args[1]]
                elif ns in ops.COLLECTIVE_NAMESPACES:
                    req, v = self._collective(r, node, args, kwargs)
                    if isinstance(req, tuple):      # isend: completes at once
                        v = req[1]
                    elif req is not None and req.kind in ("recv", "batch_recv"):
                        v = yield req
                    elif req is not None:
                        # issued without blocking, like c10d: the value is waited for by its first reader
                        req.comm = self._comm_of(r, node)
                        yield ("issue", req)
                        v = req
                elif ns == "tg" and ops.op_name(node.target) in ops.NAMING_OP_NAMES:
                    v = args[0] if node.val is not None else None
                elif node.op in ops.AUTO_FUNCTIONALIZED:
                    v = self._auto_functionalized(r, node, args, kwargs)
                else:
                    v = self._call(r, node, resolve_op(target), args, kwargs)
            except InterpError:
                raise
            except Exception as e:   # a torch error: name the node
                raise InterpError(f"rank {r} node {node.name!r} ({target}) failed: {type(e).__name__}: "
                                  f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}") from e
            if self.check_shapes and not isinstance(v, _Request):
                self._check_val(r, node, node.val, v)
            env[node.name] = v
            if goal is not None and not isinstance(v, _Request):
                goal.discard(node.name)
        for name, held in list(env.items()):     # collectives nobody read: wait for them too
            if isinstance(held, _Request):
                if not held.done:
                    yield ("wait", held)
                self._finish_collective(r, held, name)
                if goal is not None:
                    goal.discard(name)
        if goal:
            raise InterpError(f"rank {r}: upto node(s) {sorted(goal)} were not computed")

    def _call(self, r, node, fn, args, kwargs):
        """Run one op (a subclass may give an op another meaning: recheck.py's random draws)."""
        return fn(*args, **kwargs)

    def _auto_functionalized(self, r, node, args, kwargs):
        if not args or not isinstance(node.args[0], str):
            raise UnsupportedOp(f"rank {r} node {node.name!r}: auto_functionalized needs the op target as its first "
                                f"argument (a string), got {node.args[:1]!r}")
        inner = node.args[0]
        if ops.namespace(inner) == "tg" and ops.op_name(inner) in ops.NAMING_OP_NAMES:
            mutated = [kwargs[a] for a in kwargs if isinstance(kwargs[a], torch.Tensor)]
            return (None, *mutated)
        if node.op != ops.AUTO_FUNCTIONALIZED_V1:
            raise UnsupportedOp(f"rank {r} node {node.name!r}: {node.op} of {inner} (only naming ops)")
        fn = resolve_op(inner)
        kw = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}
        out = fn(*args[1:], **kw)
        written = [a.name for a in fn._schema.arguments if a.alias_info is not None and a.alias_info.is_write]
        return (out, *[kw[name] for name in written if name in kw])

    def _check_val(self, r, node, meta, v):
        if isinstance(meta, G.TensorMeta):
            if not isinstance(v, torch.Tensor):
                raise ShapeMismatch(f"rank {r} node {node.name!r} ({node.target}): expected a tensor, got {type(v).__name__}")
            unify_shape(meta.shape, v.shape, self.bindings[r], f"rank {r} node {node.name!r} ({node.target})")
            want = getattr(torch, meta.dtype, None)
            if isinstance(want, torch.dtype) and v.dtype != want and not (
                    self.float_dtype is not None and want.is_floating_point and v.dtype == self.float_dtype):
                raise ShapeMismatch(f"rank {r} node {node.name!r} ({node.target}): expected dtype {meta.dtype}, got "
                                    f"{str(v.dtype).replace('torch.', '')}")
        elif isinstance(meta, tuple) and isinstance(v, (tuple, list)):
            if len(meta) == len(v):
                for m, x in zip(meta, v):
                    self._check_val(r, node, m, x)
        elif isinstance(meta, G.SymIntMeta) and isinstance(v, int):
            e = meta.expr
            if isinstance(e, sympy.Symbol) and e.name not in self.bindings[r]:
                self.bindings[r][e.name] = v

    # -- scheduler
    def run(self):
        """Every rank runs until it needs a value it does not have.  Collectives are issued
        without blocking into their communicator's queue; the k-th collectives of the members
        on one communicator are matched and computed together (as c10d orders them)."""
        W = self.W
        gens = [self._program(r) for r in range(W)]
        state = ["run"] * W        # run | recv | wait | parked | done
        blocked: list[Any] = [None] * W       # what a rank waits for
        send: list[Any] = [None] * W
        queues: dict[tuple, dict[int, deque]] = {}

        def needed(r):
            return any(not req.done and r in req.members and r not in queues.get(req.comm, {})
                       for q in range(W) if state[q] == "wait" for req in [blocked[q]]) or \
                any(state[q] == "recv" for q in range(W) if q != r)

        def complete(comm) -> bool:
            per = queues.get(comm, {})
            members = comm[1]
            done = False
            while all(per.get(m) for m in members):
                reqs = [per[m].popleft() for m in members]
                _check_match(reqs)
                for req, val in zip(reqs, _complete(reqs)):
                    req.value, req.done = val, True
                done = True
            return done

        def advance(r):
            try:
                y = gens[r].send(send[r])
                while isinstance(y, tuple) and y[0] == "issue":    # issuing never blocks
                    req = y[1]
                    queues.setdefault(req.comm, {}).setdefault(r, deque()).append(req)
                    complete(req.comm)
                    y = gens[r].send(None)
            except StopIteration:
                state[r] = "done"
                return
            send[r] = None
            if y is _PARK:
                state[r] = "parked"
            elif isinstance(y, tuple) and y[0] == "wait":
                state[r], blocked[r] = "wait", y[1]
            else:
                state[r], blocked[r] = "recv", y

        while True:
            progressed = False
            for r in range(W):
                while state[r] == "run" or (state[r] == "parked" and needed(r)):
                    advance(r)
                    progressed = True
            for r in range(W):
                if state[r] == "wait" and blocked[r].done:
                    state[r], blocked[r] = "run", None
                    progressed = True
                elif state[r] == "recv":
                    ok, val = self._try_recv(blocked[r])
                    if ok:
                        send[r], blocked[r], state[r] = val, None, "run"
                        progressed = True
            if not progressed:
                break
        stuck = [r for r in range(W) if state[r] in ("wait", "recv")]
        if stuck:
            raise self._deadlock(stuck, state, blocked, queues)
        for env in self.envs:       # a rank stopped early (upto): its finished collectives' values
            for name, held in list(env.items()):
                if isinstance(held, _Request):
                    if held.done:
                        env[name] = held.value
                    else:
                        del env[name]
        return self.envs

    def _deadlock(self, stuck, state, blocked, queues):
        r = stuck[0]
        req = blocked[r]
        if state[r] == "recv":
            srcs = [p for _, p, _, _ in req.params["recvs"]]
            return CollectiveMismatch(f"rank {r} is at node {req.node.name!r} ({req.node.target}) waiting for a "
                                      f"message from rank(s) {srcs} that is never sent")
        per = queues.get(req.comm, {})
        for m in req.members:
            if m == r or per.get(m):
                continue
            if state[m] == "done":
                return CollectiveMismatch(
                    f"rank {r} is at node {req.node.name!r} ({req.describe()}) but rank {m} finished its graph "
                    f"without issuing a matching collective")
            if state[m] == "parked":
                return CollectiveMismatch(f"rank {r} is at node {req.node.name!r} ({req.describe()}); rank {m} stopped")
            if state[m] == "wait":
                other = blocked[m]
                return CollectiveMismatch(
                    f"collective order mismatch: rank {r} is at node {req.node.name!r} ({req.describe()}) "
                    f"but rank {m} is at node {other.node.name!r} ({other.describe()})")
        return CollectiveMismatch(f"ranks {stuck} are deadlocked at " +
                                  "; ".join(f"rank {q}: {blocked[q].node.name!r} ({blocked[q].describe()})" for q in stuck))


def run_bundle(bundle: G.Bundle, inputs_per_rank: list[dict[str, Any]],
               upto: dict[int, set[str]] | None = None, *,
               float_dtype: torch.dtype | None = None, check_shapes: bool = True) -> list[dict[str, Any]]:
    """Run every rank of ``bundle``; return each rank's environment (node name -> value).

    ``inputs_per_rank[r]`` maps rank r's input port names (or placeholder node names) to tensors
    (SymInt inputs may be omitted: they are taken from the shapes).  With ``upto``, rank r stops as
    soon as the nodes ``upto[r]`` are computed (a rank missing from ``upto`` computes nothing of
    its own) -- but a stopped rank still runs on to the collectives its peers wait for.
    ``float_dtype`` replaces every floating dtype constant of the graph (e.g. run a float32
    capture in float64).  ``check_shapes`` compares every value with the node's recorded
    shape/dtype and raises ``ShapeMismatch``.
    """
    return Runner(bundle, inputs_per_rank, upto, float_dtype, check_shapes).run()


def output_values(bundle: G.Bundle, envs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per rank: output port name -> value (ports whose node was not computed are left out)."""
    out = []
    for g, env in zip(bundle.ranks, envs):
        out.append({p.name: env[p.node] for p in g.outputs if p.node in env})
    return out


def named_values(bundle: G.Bundle, envs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per rank: every value by node name, input port name and output port name (ports win)."""
    out = []
    for g, env in zip(bundle.ranks, envs):
        d = dict(env)
        d.update({p.name: env[p.node] for p in g.inputs if p.node in env})
        d.update({p.name: env[p.node] for p in g.outputs if p.node in env})
        out.append(d)
    return out
