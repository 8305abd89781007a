"""A call of a pointwise ATen op with its constant arguments, as the op text of a term.

A pointwise op of any arity lowers to a term over its tensor operands whose op text names the
overload and every constant argument it was called with, exactly, in the schema's order (``_``
marks the tensor operands): ``clamp.default(_, 0.0)``, ``pow.Scalar(2.0, _)``,
``lerp.Scalar(_, _, 0.5)``, ``gelu.default(_, approximate='tanh')``.  Trailing arguments at their
defaults are left out, so one call has one text.  A *bare* name (``cos``, ``atan2``) is the one
overload of its op whose required arguments are all tensors, called with every other argument at
its default.  The ``aten.`` namespace is left out.  Which ops are pointwise, and their schemas,
come from torch (``ir/op_classes.py``): an op torch calls pointwise needs no line here.

The torch meaning of an op text is the overload called on the operands (``meaning``); the
lowering writes op texts with ``render``.  Both read the same table, without importing torch
until a meaning is evaluated.
"""
from __future__ import annotations

import math
import re
from functools import lru_cache

from entangle_py.ir.op_classes import OPS

NS = "aten"
TENSOR = "_"                  # the mark of a tensor operand in an op text


class _Operand:
    """A tensor operand's place among a parsed call's arguments."""

    def __repr__(self):
        return TENSOR


OPERAND = _Operand()
_TENSOR_TYPES = ("Tensor", "Optional[Tensor]")
_UNSET = object()


def _schema(target: str):
    """(name, type, kwarg_only, default) of each argument of ``target`` (default _UNSET: none)."""
    out = []
    for a in OPS[target][2]:
        t = a[1]
        kw = t.startswith("*")
        out.append((a[0], t.lstrip("*"), kw, a[2] if len(a) > 2 else _UNSET))
    return out


def pointwise(target: str) -> bool:
    """Whether torch calls ``target`` pointwise (and it draws no random numbers)."""
    e = OPS.get(target)
    return e is not None and "pointwise" in e[0] and not e[1]


def _bare_candidate(target: str) -> int | None:
    """The number of tensor operands of ``target`` if its required arguments are all tensors."""
    n = 0
    for _, t, _, d in _schema(target):
        if d is _UNSET:
            if t != "Tensor":
                return None
            n += 1
    return n


@lru_cache(maxsize=None)
def _bare() -> tuple[dict, dict]:
    """(target -> bare name, bare name -> target) for the overloads a bare name stands for."""
    by_name: dict[tuple, list[str]] = {}
    for target in OPS:
        if pointwise(target):
            n = _bare_candidate(target)
            if n is not None:
                by_name.setdefault((_short(target).rsplit(".", 1)[0], n), []).append(target)
    names = {ts[0]: name for (name, _), ts in by_name.items() if len(ts) == 1}
    counts: dict[str, int] = {}
    for name in names.values():
        counts[name] = counts.get(name, 0) + 1
    names = {t: n for t, n in names.items() if counts[n] == 1}     # one overload per bare name
    return names, {n: t for t, n in names.items()}


def _short(target: str) -> str:
    return target[len(NS) + 1:] if target.startswith(NS + ".") else target


def _target(short: str) -> str:
    return short if short.count(".") == 2 else f"{NS}.{short}"


class Unexpressible(ValueError):
    """A call whose constant arguments an op text cannot say: ``arg`` names the one."""

    def __init__(self, arg: str, why: str):
        super().__init__(f"{arg}: {why}")
        self.arg, self.why = arg, why


# ----------------------------------------------------------------------------- constants as text

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _lit(v, arg: str) -> str:
    """The exact text of a constant argument (Python's repr of a float reads back to it)."""
    if v is None or isinstance(v, bool):
        return repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        if not _NAME.match(v):
            raise Unexpressible(arg, f"the string {v!r}")
        return repr(v)
    if isinstance(v, (list, tuple)) and all(type(x) is int for x in v):
        return "[" + ", ".join(str(x) for x in v) + "]"
    kind, value = getattr(v, "kind", None), getattr(v, "value", None)
    if kind == "dtype" and isinstance(value, str) and _NAME.match(value):
        return f"torch.{value}"
    raise Unexpressible(arg, f"{v!r} is not a constant an op text says")


_KINDS = {"number": (int, float), "float": (int, float), "int": (int,), "SymInt": (int,), "bool": (bool,), "str": (str,)}


def _fits(t: str, v) -> bool:
    """Whether the constant ``v`` is a value of the schema type ``t`` (a number of a number, ...)."""
    if t.startswith("Optional["):
        return v is None or _fits(t[len("Optional["):-1], v)
    if t == "ScalarType":
        return getattr(v, "kind", None) == "dtype"
    if t in ("List[int]", "List[SymInt]"):
        return isinstance(v, (list, tuple)) and all(type(x) is int for x in v)
    kinds = _KINDS.get(t)
    if kinds is None or v is None:
        return False
    if t != "bool" and isinstance(v, bool):
        return t == "number"            # a bool is a number (Scalar), not an int or a float
    return isinstance(v, kinds)


def _read(text: str):
    if text in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[text]
    if text.startswith("'") and text.endswith("'"):
        return text[1:-1]
    if text.startswith("torch."):
        return ("dtype", text[len("torch."):])
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [int(x) for x in inner.split(",")] if inner else []
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return float(text)          # also inf, -inf, nan


# ----------------------------------------------------------------------------- render / parse

def render(target: str, args: tuple, kwargs: dict, is_tensor) -> tuple[str, list]:
    """(op text, tensor operands in order) of a call of the pointwise ``target``.  ``is_tensor(v)``
    says whether a value is a tensor of the graph.  Raises ``Unexpressible`` naming the argument
    a text cannot say, and KeyError for an op that is not pointwise."""
    if not pointwise(target):
        raise KeyError(target)
    schema = _schema(target)
    positional = [a for a in schema if not a[2]]
    if len(args) > len(positional):
        raise Unexpressible(positional[-1][0] if positional else "args", f"{len(args)} positional arguments")
    unknown = set(kwargs) - {a[0] for a in schema}
    if unknown:
        raise Unexpressible(sorted(unknown)[0], "not an argument of the op")
    values = []
    for i, (name, t, kw, d) in enumerate(schema):
        if not kw and i < len(args):
            v = args[i]
        elif name in kwargs:
            v = kwargs[name]
        elif d is not _UNSET:
            v = d
        else:
            raise Unexpressible(name, "a required argument is missing")
        values.append(v)
    tensors, texts, defaults = [], [], []
    for (name, t, kw, d), v in zip(schema, values):
        if is_tensor(v):
            if t not in _TENSOR_TYPES:
                raise Unexpressible(name, f"a tensor where the op takes {t}")
            tensors.append(v)
            texts.append((name, kw, TENSOR))
            defaults.append(False)
            continue
        if t == "Tensor":
            raise Unexpressible(name, f"{v!r} where the op takes a tensor")
        if t.startswith(("Optional[Generator", "Generator", "Optional[Layout", "Optional[Device", "Optional[MemoryFormat")) \
                and v is not None:
            raise Unexpressible(name, f"{name}={v!r}")
        if not _fits(t, v):
            raise Unexpressible(name, f"{v!r} is not a {t}")
        texts.append((name, kw, _lit(v, name)))
        defaults.append(d is not _UNSET and type(v) is type(d) and v == d
                        and not (isinstance(v, float) and math.copysign(1, v) != math.copysign(1, d)))
    if not tensors:
        raise Unexpressible(schema[0][0] if schema else "args", "no tensor operand")
    bare, _ = _bare()
    if target in bare and all(dflt or text == TENSOR for (_, _, text), dflt in zip(texts, defaults)) \
            and len(tensors) == _bare_candidate(target):
        return bare[target], tensors
    # leave out trailing positional defaults and keyword defaults
    keep = [not dflt for dflt in defaults]
    last = max([i for i, (_, kw, _) in enumerate(texts) if not kw and keep[i]] + [-1])
    items = []
    for i, (name, kw, text) in enumerate(texts):
        if kw:
            if keep[i]:
                items.append(f"{name}={text}")
        elif i <= last:
            items.append(text)
    return f"{_short(target)}({', '.join(items)})", tensors


def _split(inner: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


@lru_cache(maxsize=4096)
def parse(text: str) -> tuple[str, tuple, tuple]:
    """(target, the arguments in schema order -- OPERAND for a tensor --, keyword-only flags) of an
    op text; ValueError when it is not one."""
    _, by_bare = _bare()
    if "(" not in text:
        if text not in by_bare:
            raise ValueError(f"{text!r} is no pointwise op")
        target = by_bare[text]
        schema = _schema(target)
        return target, tuple(OPERAND if d is _UNSET else d for _, _, _, d in schema), tuple(a[2] for a in schema)
    if not text.endswith(")"):
        raise ValueError(f"op text {text!r}")
    head, inner = text[:-1].split("(", 1)
    target = _target(head)
    if not pointwise(target):
        raise ValueError(f"{head!r} is no pointwise op")
    schema = _schema(target)
    values: dict[str, object] = {}
    pos = 0
    for item in _split(inner):
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", item)
        if m:
            values[m.group(1)] = OPERAND if m.group(2) == TENSOR else _read(m.group(2))
            continue
        if pos >= len(schema) or schema[pos][2]:
            raise ValueError(f"op text {text!r}: too many positional arguments")
        values[schema[pos][0]] = OPERAND if item == TENSOR else _read(item)
        pos += 1
    args = []
    for name, _, _, d in schema:
        if name in values:
            args.append(values[name])
        elif d is not _UNSET:
            args.append(d)
        else:
            raise ValueError(f"op text {text!r}: no value for {name}")
    return target, tuple(args), tuple(a[2] for a in schema)


def arity(text: str) -> int:
    """The number of tensor operands of an op text."""
    return sum(1 for a in parse(text)[1] if a is OPERAND)


@lru_cache(maxsize=4096)
def meaning(text: str):
    """The torch meaning of an op text: a function of its tensor operands."""
    import torch
    target, args, kw = parse(text)
    ns, name, ov = target.split(".")
    op = getattr(getattr(getattr(torch.ops, ns), name), ov)
    names = [a[0] for a in _schema(target)]

    def value(a):
        if isinstance(a, tuple) and len(a) == 2 and a[0] == "dtype":
            return getattr(torch, a[1])
        return a

    def call(*tensors):
        if len(tensors) != sum(1 for a in args if a is OPERAND):
            raise ValueError(f"{text}: {len(tensors)} operands")
        it = iter(tensors)
        vals = [next(it) if a is OPERAND else value(a) for a in args]
        return op(*[v for v, k in zip(vals, kw) if not k], **{n: v for n, v, k in zip(names, vals, kw) if k})
    return call
