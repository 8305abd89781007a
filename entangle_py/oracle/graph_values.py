"""What a graph records, as torch values: op targets resolved to torch operators (whitelisted
namespaces only, nothing from a file evaluated), torch constants (devices become ``cpu``), and
symbolic sizes evaluated under a binding that unifying placeholder shapes with actual ones builds;
with the interpreter's errors."""
from __future__ import annotations

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


def split_target(target: str) -> tuple[str, str, str]:
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
    ns, op, overload = split_target(target)
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

def torch_const(c: G.TorchConst, float_dtype):
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


def eval_condition(expr, binding: dict[str, int], where: str) -> bool:
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
                                        f"= {_fmt_shape([try_eval(x, binding) for x in meta_shape])}, got {list(actual)}")
            elif len(free) == 1:
                s = free[0]
                if m == s:
                    binding[s.name] = a
                else:
                    sols = solve_int(m.xreplace({x: sympy.Integer(binding[x.name]) for x in m.free_symbols if x.name in binding}), s, a)
                    if sols is None:
                        rest.append((m, a))
                    else:
                        binding[s.name] = sols
            else:
                rest.append((m, a))
        if len(rest) == len(pending):
            return   # nothing more can be bound from this shape; later uses report unbound symbols
        pending = rest


def solve_int(expr, sym, value):
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


def try_eval(x, binding):
    try:
        return eval_size(x, binding)
    except InterpError:
        return x


def _fmt_shape(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"
