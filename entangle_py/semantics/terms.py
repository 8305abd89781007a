"""The term language the engine reasons in: egglog declarations plus a torch meaning for each.

Every constructor that lemmas or lowered graphs use is declared here once, with its egglog
signature, its extraction cost, whether it is *clean* (data movement or a reduction over ranks)
and its meaning as a torch computation.  The meaning is what the lemma tests evaluate (both sides
of every lemma on random instances) and what failure evidence uses.

Terms are written as egglog s-expressions.  ``parse_sexpr`` reads them; ``evaluate`` computes
them with torch given values for their variables.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from entangle_py.semantics import opcall
from entangle_py.semantics.sexpr import Var, parse_sexpr, to_sexpr  # noqa: F401  (the term language's text)

BIG = 100_000        # cost of a compute op / a G_s tensor: any term containing one is not clean
CLEAN_COST = 1

# ----------------------------------------------------------------------------- s-expressions

def is_clean(t) -> bool:
    """A parsed term built of clean constructors only (G_d leaves, data movement, rank reductions)."""
    if not isinstance(t, tuple):
        return True
    c = BY_NAME.get(t[0].name if isinstance(t[0], Var) else t[0])
    return c is not None and c.clean and all(is_clean(a) for a in t[1:])


def str_lit(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


# ----------------------------------------------------------------------------- the constructor record

@dataclass(frozen=True)
class Constructor:
    name: str
    signature: str                 # egglog argument sorts, e.g. "T i64"
    sort: str                      # result sort
    cost: int
    clean: bool
    meaning: Callable              # torch semantics over evaluated arguments


# ----------------------------------------------------------------------------- meanings

def _unary(op: str, x):
    return unary_fn(op)(x)


def unary_fn(op: str) -> Callable:
    """The torch meaning of a unary op: a named one (``UNARY_OPS``: casts, ``gelu_tanh``) or the op
    text of a call of one of torch's pointwise ops on one tensor (``cos``,
    ``clamp.default(_, 0.0)``: opcall.py)."""
    fn = UNARY_OPS.get(op)
    return fn if fn is not None else _opcall(op, 1)


def _opcall(op: str, n: int) -> Callable:
    try:
        if opcall.arity(op) == n:
            return opcall.meaning(op)
    except ValueError:
        pass
    raise ValueError(f"{op!r} is no op of {n} tensor operand(s)")


def _scalar(op: str, x, c: str):
    return SCALAR_OPS[op](x, float(c))


def _binary(op: str, a, b):
    return binary_fn(op)(a, b)


def binary_fn(op: str) -> Callable:
    """The torch meaning of a binary op: a named one (``BINARY_OPS``), a call of one of torch's
    pointwise ops on two tensors (``atan2``, ``lerp.Scalar(_, _, 0.5)``: opcall.py), or one of two
    ops that carry a constant in their name: ``masked_fill:<c>`` fills ``a`` where ``b`` holds;
    ``threshold_backward:<c>`` is threshold_backward(grad=a, x=b, c)."""
    if op.startswith(MASKED_FILL):
        c = float(op[len(MASKED_FILL):])
        return lambda a, b: torch.masked_fill(a, b.bool(), c)
    if op.startswith(THRESHOLD_BACKWARD):
        c = float(op[len(THRESHOLD_BACKWARD):])
        return lambda g, x: torch.ops.aten.threshold_backward(g, x, c)
    fn = BINARY_OPS.get(op)
    return fn if fn is not None else _opcall(op, 2)


def _pointwise(op: str, operands):
    """A call of one of torch's pointwise ops on three or more tensors (``addcmul``)."""
    if not isinstance(operands, list) or len(operands) < 3:
        raise ValueError(f"pointwise {op!r} of {len(operands)} operands (unary and binary ops have their own)")
    return _opcall(op, len(operands))(*operands)


def _slice(x, dim, start, end):
    if not 0 <= start <= end <= x.shape[dim]:
        raise ValueError(f"slice [{start}, {end}) is not inside a dim of size {x.shape[dim]}")
    return x.narrow(dim, start, end - start)


def _view(x, shape):
    return x.reshape(tuple(shape))


def _expand(x, shape):
    return x.expand(tuple(shape))


def _reduce(op: str, x, dims, keepdim):
    """A reduction over dims: ``REDUCTIONS``, an op name and, after a colon, its constant (the
    order of a norm, the correction of a variance): "sum", "logsumexp", "norm:2.0", "var:1.0"."""
    # canonical form (lowering writes it): dims sorted, distinct, in range and not empty (torch
    # reads an empty dim list as "every dim"); keepdim 0 or 1
    dims = list(dims)
    if not dims or dims != sorted(set(dims)) or dims[-1] >= max(x.dim(), 1) or keepdim not in (0, 1):
        raise ValueError(f"reduce over dims {dims} (keepdim {keepdim}) of a {x.dim()}-D tensor")
    name, _, param = op.partition(":")
    if name in ("amax", "amin") and x.dim() and any(x.shape[d] == 0 for d in dims):
        # torch raises on an empty reduction (no program computes it); the term language takes
        # max's identity (-inf, the dtype's least value; min's: +inf, the greatest) so a max over
        # ranks may have an empty shard
        shape = [1 if i in dims else n for i, n in enumerate(x.shape) if keepdim or i not in dims]
        hi = name == "amin"
        v = (float("inf" if hi else "-inf") if x.is_floating_point() else hi if x.dtype == torch.bool
             else getattr(torch.iinfo(x.dtype), "max" if hi else "min"))
        return torch.full(shape, v, dtype=x.dtype)
    fn = REDUCTIONS[name]
    return fn(x, dims, bool(keepdim), float(param)) if param else fn(x, dims, bool(keepdim))


def _prod(x, dims, keepdim):
    # torch's prod takes one dim: one after the other (a product in real arithmetic in any order)
    for d in reversed(dims):
        x = x.prod(d, keepdim=True)
    return x if keepdim else x.reshape([n for i, n in enumerate(x.shape) if i not in dims])


def _correction(c: float):
    return int(c) if c == int(c) else c


# reduction name -> torch over (x, dims, keepdim[, constant])
REDUCTIONS: dict[str, Callable] = {
    "sum": lambda x, d, k: x.sum(dim=d, keepdim=k),
    "mean": lambda x, d, k: x.mean(dim=d, keepdim=k),
    "amax": lambda x, d, k: x.amax(dim=d, keepdim=k),
    "amin": lambda x, d, k: x.amin(dim=d, keepdim=k),
    "prod": _prod,
    "nansum": lambda x, d, k: torch.nansum(x, dim=d, keepdim=k),
    "logsumexp": lambda x, d, k: torch.logsumexp(x, d, keepdim=k),
    "norm": lambda x, d, k, p: torch.linalg.vector_norm(x, ord=p, dim=d, keepdim=k),
    "var": lambda x, d, k, c: torch.var(x, dim=d, correction=_correction(c), keepdim=k),
    "std": lambda x, d, k, c: torch.std(x, dim=d, correction=_correction(c), keepdim=k),
}


def _concat(parts, d):
    # torch.cat silently skips 1-D empty parts and promotes mixed dtypes; a concat (a gather of
    # rank parts, a cat) has parts of one rank and one dtype
    if not parts or any(p.dim() != parts[0].dim() or p.dtype != parts[0].dtype for p in parts):
        raise ValueError("concat of parts of different ranks or dtypes")
    if not 0 <= d < parts[0].dim():
        raise ValueError(f"concat along dim {d} of {parts[0].dim()}-D parts")
    return torch.cat(parts, d)


def _same_parts(parts):
    # a sum (max) over ranks: every rank holds a tensor of one shape and dtype (torch would broadcast)
    if not parts:
        raise ValueError("reduction over no ranks")
    if any(p.shape != parts[0].shape or p.dtype != parts[0].dtype for p in parts):
        raise ValueError("ranks hold tensors of different shapes or dtypes")


def _no_bool(*xs):
    # torch has no bool matrix product, except (by accident) when the inner dim is empty
    if any(x.dtype == torch.bool for x in xs):
        raise ValueError("matrix product of bool tensors")
    return xs


def _stack_sum(parts):
    _same_parts(parts)
    if parts[0].dtype == torch.bool:
        raise ValueError("a sum over ranks of bool tensors (torch adds bools as a logical or)")
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    return out


def _stack_max(parts):
    _same_parts(parts)
    out = parts[0]
    for p in parts[1:]:
        out = torch.maximum(out, p)
    return out


# Unary ops with a name of their own (the others are op texts of torch's pointwise ops, opcall.py:
# "exp", "relu", "clamp.default(_, 0.0)" ...)
UNARY_OPS: dict[str, Callable] = {
    "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
}
# dtype conversions (aten._to_copy to another dtype) are elementwise too
CASTS = ("float16", "bfloat16", "float32", "float64", "int32", "int64", "bool")
UNARY_OPS.update({f"to_{d}": (lambda d: lambda x: x.to(getattr(torch, d)))(d) for d in CASTS})

# x op c for a scalar constant c (stored as text so that -inf and 1e-05 survive exactly)
SCALAR_OPS: dict[str, Callable] = {
    "add": lambda x, c: x + c,
    "sub": lambda x, c: x - c,
    "rsub": lambda x, c: c - x,
    "mul": lambda x, c: x * c,
    "div": lambda x, c: x / c,
    "div_floor": lambda x, c: torch.div(x, c, rounding_mode="floor"),
    "div_trunc": lambda x, c: torch.div(x, c, rounding_mode="trunc"),
    "pow": lambda x, c: x ** c,
    "eq": lambda x, c: x == c,
    "ne": lambda x, c: x != c,
    "lt": lambda x, c: x < c,
    "le": lambda x, c: x <= c,
    "gt": lambda x, c: x > c,
    "ge": lambda x, c: x >= c,
}

# Binary ops with a name of their own (the others are op texts of torch's pointwise ops, opcall.py:
# "add", "maximum", "gelu_backward" ...)
BINARY_OPS: dict[str, Callable] = {
    "div_floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "div_trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "gelu_tanh_backward": lambda g, x: torch.ops.aten.gelu_backward(g, x, approximate="tanh"),
}

# The unary and binary ops the lemmas and the lowering name (lemma tests draw from these, and from
# calls with constants, lemmas/_draw.py).  The pointwise backward ops are binary ops over (grad,
# saved tensor) with broadcasting, so every binary lemma holds for them (tests/test_backward_ops.py).
UNARY_NAMES = ("gelu", "gelu_tanh", "relu", "silu", "sigmoid", "tanh", "exp", "log", "neg", "abs", "sqrt",
               "rsqrt", "erf", "reciprocal", "square", "logical_not") + tuple(f"to_{d}" for d in CASTS)
BINARY_NAMES = ("add", "sub", "mul", "div", "div_floor", "div_trunc", "maximum", "minimum", "pow", "eq", "lt", "gt",
                "le", "ge", "ne", "bitwise_or", "bitwise_and", "logical_or", "logical_and", "gelu_backward",
                "gelu_tanh_backward", "silu_backward", "sigmoid_backward", "tanh_backward")

def const_product(a: str, b: str) -> str:
    """The text of a * b for two float constant texts, only when the product of the two floats is
    itself a float exactly (so (x / a) / b = x / (a * b) in exact arithmetic); else undefined."""
    from fractions import Fraction
    fa, fb = float(a), float(b)
    if not (math.isfinite(fa) and math.isfinite(fb)) or fa == 0 or fb == 0:
        raise ValueError(f"{a} * {b}: not folded")
    p = fa * fb
    if Fraction(fa) * Fraction(fb) != Fraction(p):
        raise ValueError(f"{a} * {b} is not a float exactly")
    return repr(p)


# float32's largest finite value: a constant beyond it overflows to inf in float32 (and in the
# float32 arithmetic of float16 / bfloat16 ops)
_F32_MAX = 3.4028234663852886e38


def const_positive(c: str) -> bool:
    """Whether a constant text is a positive number, finite in float32: 0.0 * c is then +0.0 in
    every float dtype (a negative c makes -0.0; an inf, or a c overflowing float32, makes nan)."""
    try:
        v = float(c)
    except ValueError:
        return False
    return 0 < v <= _F32_MAX


# masked_fill(x, mask, c) is the binary op "masked_fill:<c>" over (x, mask): it is elementwise with
# broadcasting like any binary op, so the binary lemmas (concat, broadcast) cover it.
MASKED_FILL = "masked_fill:"
# threshold_backward(grad, x, c) is the binary op "threshold_backward:<c>" over (grad, x).
THRESHOLD_BACKWARD = "threshold_backward:"

def _exact_div(a: int, b: int) -> int:
    if b <= 0 or a % b:
        raise ValueError(f"{a} is not a multiple of {b}")
    return a // b


def _dset(s, i, v):
    if not 0 <= i < len(s):
        raise ValueError("dset index out of range")
    return list(s[:i]) + [v] + list(s[i + 1:])


def _repl(x, k: int):
    """k copies of x (a list of parts)."""
    if not isinstance(k, int) or k < 0:
        raise ValueError(f"{k!r} copies")
    return [x] * k


def _zip_aligned(l1, l2, d1, d2):
    """Pairs of concat parts that line up along the concat axis (dim d1 of l1, d2 of l2)."""
    for a, b in _zip_exact(l1, l2):
        if a.shape[d1] != b.shape[d2]:
            raise ValueError("concat parts do not line up")
    return zip(l1, l2)


def _where(c, a, b):
    """torch.where(c, a, b): a where c holds, b elsewhere, all three broadcast together, the
    result of torch's promotion of a and b.  The condition is a bool tensor (torch raises on others)."""
    if not isinstance(c, torch.Tensor) or c.dtype != torch.bool:
        raise ValueError("where needs a bool condition")
    return torch.where(c, a, b)


def _axis_size(x, k: int) -> int:
    """x's size on the axis k from the right (k >= 1); undefined when x has no such axis."""
    if not isinstance(k, int) or k < 1 or x.dim() < k:
        raise ValueError(f"axis {k} from the right of a {x.dim()}-D tensor")
    return int(x.shape[x.dim() - k])


def _bc_like(y, l, k: int):
    """One copy of y per part of l, for a y that does not vary along the axis k from the right
    (absent there or of size 1): the operand of each part's op when y broadcasts over a concat."""
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"axis {k} from the right")
    if y.dim() >= k and y.shape[y.dim() - k] != 1:
        raise ValueError("the copied tensor varies along the axis")
    return [y] * len(l)


WHERE_PATTERNS = ("LLL", "LLT", "LTL", "TLL", "LTT", "TLT", "TTL")


def _zip_where(p: str, lc, la, lb, k: int):
    """where part by part over three lists of one length; ``p`` says which are concat parts (L),
    which copies of a broadcast operand (T): the concat parts line up on the axis k from the right."""
    if p not in WHERE_PATTERNS or not len(lc) == len(la) == len(lb):
        raise ValueError(f"zip_where {p!r} over lists of lengths {len(lc)}, {len(la)}, {len(lb)}")
    out = []
    for parts in zip(lc, la, lb):
        sizes = {_axis_size(x, k) for x, kind in zip(parts, p) if kind == "L"}
        if len(sizes) != 1:
            raise ValueError("concat parts do not line up")
        out.append(_where(*parts))
    return out


def _zip_exact(l1, l2):
    if len(l1) != len(l2):
        raise ValueError("lists of different lengths")
    return zip(l1, l2)


# ----------------------------------------------------------------------------- meanings: indexing
# Table lookups (embedding, ``W[ids]``), row-wise picks along the last dim (the cross-entropy
# target logit ``L[arange, t]``), their masked vocab-parallel forms, integer scalar ops and
# constants.  Offsets are i64 so lemmas can add part widths.

INT_SCALAR_OPS = ("add", "sub", "mul", "pow", "eq", "ne", "lt", "le", "gt", "ge")


def _iscalar(op: str, x, c: int):
    return SCALAR_OPS[op](x, int(c))


def _take(w, ids):
    """``w[ids]``: rows of ``w`` (torch index semantics: ids in [-rows, rows), negatives wrap)."""
    if ids.dtype in (torch.bool, torch.uint8) or ids.is_floating_point():
        raise ValueError("take needs integer ids")
    return w[ids]


def _iput(x, i, v):
    """``x.index_put((i,), v)``: the rows of ``x`` at the positions ``i`` lists replaced by ``v``
    (broadcast to ``i.shape + x.shape[1:]``, same dtype).  Undefined where a position repeats
    (torch keeps any one of the values written there)."""
    if i.dtype not in (torch.int64, torch.int32) or v.dtype != x.dtype:
        raise ValueError("iput needs integer positions and values of the tensor's dtype")
    rows = (i % x.shape[0] if x.shape[0] else i).flatten() if x.dim() else i.flatten()
    if rows.numel() != torch.unique(rows).numel():
        raise ValueError("iput at a repeated position")
    return x.index_put((i,), v)


def _mtake(w, ids, lo: int):
    """Rows ``w[ids - lo]`` where ``lo <= ids < lo + rows(w)``, zero rows elsewhere (any ids)."""
    rel = ids - int(lo)
    valid = (rel >= 0) & (rel < w.shape[0])
    out = torch.zeros(tuple(ids.shape) + tuple(w.shape[1:]), dtype=w.dtype)
    out[valid] = w[rel[valid]]
    return out


def _check_pick_shapes(x, idx):
    if idx.dtype in (torch.bool, torch.uint8) or idx.is_floating_point():
        raise ValueError("pick needs integer indices")
    if x.dim() < 1 or tuple(idx.shape) != tuple(x.shape[:-1]):
        raise ValueError(f"pick: index shape {tuple(idx.shape)} is not {tuple(x.shape[:-1])}")


def _pick(x, idx):
    """``out[...] = x[..., idx[...]]`` (index semantics along the last dim: negatives wrap)."""
    _check_pick_shapes(x, idx)
    n = x.shape[-1]
    if bool(((idx < -n) | (idx >= n)).any()):
        raise ValueError("pick: index out of range")
    return torch.gather(x, -1, torch.where(idx < 0, idx + n, idx).unsqueeze(-1)).squeeze(-1)


def _mpick(x, t, lo: int):
    """``x[..., t - lo]`` where ``lo <= t < lo + x.shape[-1]``, zero elsewhere (any t)."""
    _check_pick_shapes(x, t)
    rel = t - int(lo)
    valid = (rel >= 0) & (rel < x.shape[-1])
    out = torch.zeros(tuple(t.shape), dtype=x.dtype)
    if x.shape[-1] > 0:
        got = torch.gather(x, -1, rel.masked_fill(~valid, 0).unsqueeze(-1)).squeeze(-1)
        out = torch.where(valid, got, out)
    return out


def _tpick(x, t, c: int):
    """The target logit of a loss (nll_loss): ``x[..., t]`` where ``t != c`` (the ignore index),
    zero where ``t == c``.  Undefined (torch raises) where a target other than ``c`` is not in
    ``[0, x.shape[-1])``: targets do not wrap."""
    _check_pick_shapes(x, t)
    keep = t != int(c)
    if bool(((t[keep] < 0) | (t[keep] >= x.shape[-1])).any()):
        raise ValueError("tpick: target out of range")
    out = torch.zeros(tuple(t.shape), dtype=x.dtype)
    if x.shape[-1] > 0:
        got = torch.gather(x, -1, t.masked_fill(~keep, 0).unsqueeze(-1)).squeeze(-1)
        out = torch.where(keep, got, out)
    return out


def _tcount(x, t, c: int, n: str):
    """The number of targets of a loss that are not the ignore index ``c``: a 0-D tensor of x's
    dtype.  ``n`` is t's number of elements as a float text ("" when not known statically); the
    term is undefined when it is not."""
    if n != "" and float(n) != t.numel():
        raise ValueError(f"tcount: {n} is not the number of targets ({t.numel()})")
    return (t != int(c)).sum().to(x.dtype)


# (cst c s t): a tensor of shape s holding the constant c (a text: "0.0", "-inf", "3") in dtype t
# (a float, int or bool dtype name).  Undefined where c is not a value of t (a fraction or a
# non-finite value for an integer dtype, past 0/1 for bool).
def _cst(c: str, shape, dt: str):
    dtype = getattr(torch, dt, None) if isinstance(dt, str) else None
    if not isinstance(dtype, torch.dtype) or dtype.is_complex:
        raise ValueError(f"cst of dtype {dt!r}")
    v = float(c)
    if not dtype.is_floating_point:
        if not math.isfinite(v) or v != int(v) or (dtype == torch.bool and v not in (0, 1)):
            raise ValueError(f"cst {c} in {dt}")
        v = int(c) if c.lstrip("-").isdigit() else int(v)     # exact past 2**53
        if dtype != torch.bool and not torch.iinfo(dtype).min <= v <= torch.iinfo(dtype).max:
            raise ValueError(f"cst {c} in {dt}")
    return torch.full(tuple(shape), v, dtype=dtype)


def _map_offsets(fn, parts, x, lo, axis):
    out, off = [], int(lo)
    for p in parts:
        out.append(fn(p, x, off))
        off += p.shape[axis]
    return out


def _layernorm(x, w, b, k, eps):
    """Layer norm over the last ``k`` dims with an affine weight and bias."""
    if not 1 <= k <= x.dim():
        raise ValueError(f"layer norm over the last {k} dims of a {x.dim()}-D tensor")
    return torch.nn.functional.layer_norm(x, tuple(x.shape[x.dim() - k:]), w, b, float(eps))


# Positions: (arange a k n) = [a, a + k, ..., a + (n - 1) k], int64 (torch.arange(a, a + n k, k)):
# position ids built in the program (a causal mask on global positions under context
# parallelism).  A constant, so clean like ``cst``: a slice of one is another, and adjacent ones
# tile a longer one.
def _arange(start: int, step: int, n: int):
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"arange of length {n!r}")
    return torch.arange(n, dtype=torch.int64) * int(step) + int(start)


# The gradient of a table lookup (embedding_dense_backward): the rows of ``g`` added into a zero
# table at their ids (``scatter``), and its vocab-parallel (masked) form, the rank's own block of
# rows (``mscatter``).
def _check_ids(ids):
    if ids.dtype not in (torch.int64, torch.int32):
        raise ValueError("scatter needs integer ids")


def _scatter(g, ids, n: int):
    """``out[i] = sum of g[p] over the positions p where ids[p] = i``, ``out`` of n rows (g of
    ids' shape plus one dim); undefined for an id outside [0, n) (torch's CPU kernel skips it,
    other devices fail)."""
    _check_ids(ids)
    if g.dim() != ids.dim() + 1 or tuple(g.shape[:-1]) != tuple(ids.shape):
        raise ValueError(f"scatter: rows of shape {tuple(g.shape)} for ids of shape {tuple(ids.shape)}")
    if n < 0 or bool(((ids < 0) | (ids >= n)).any()):
        raise ValueError(f"scatter: an id outside [0, {n})")
    return torch.ops.aten.embedding_dense_backward(g, ids, n, -1, False)


def _mscatter(g, ids, lo: int, n: int):
    """Rows lo .. lo + n - 1 of the scatter of ``g`` (broadcast against ids' shape plus a size-1
    dim, which it may not enlarge) at ``ids``: ids outside them add nothing (any ids)."""
    _check_ids(ids)
    shape = tuple(torch.broadcast_shapes(tuple(g.shape), tuple(ids.shape) + (1,)))
    if n < 0 or shape[:-1] != tuple(ids.shape):
        raise ValueError(f"mscatter: rows of shape {tuple(g.shape)} for ids of shape {tuple(ids.shape)}")
    g = g.expand(shape)
    rel = ids - int(lo)
    valid = (rel >= 0) & (rel < n)
    out = torch.zeros((n, g.shape[-1]), dtype=g.dtype)
    return out.index_add(0, rel[valid].long(), g[valid])


# The gradient of a pick (gather of one index column, scatter_add into zeros): ``v`` placed at
# ``idx`` along a new last dim of size n, zeros elsewhere (``place``).
def _place(v, idx, n: int):
    """``out[..., j] = v[...]`` where ``idx[...] = j``, zero elsewhere, out of shape
    ``v.shape + (n,)`` and v's dtype: ``zeros.scatter_add(-1, idx[..., None], v[..., None])``
    exactly (a zero placed is 0 + v); undefined for an index outside [0, n) (torch raises)."""
    if idx.dtype not in (torch.int64, torch.int32):
        raise ValueError("place needs integer indices")
    if tuple(idx.shape) != tuple(v.shape):
        raise ValueError(f"place: values of shape {tuple(v.shape)} at indices of shape {tuple(idx.shape)}")
    if not isinstance(n, int) or n < 0 or bool(((idx < 0) | (idx >= n)).any()):
        raise ValueError(f"place: an index outside [0, {n})")
    out = torch.zeros(tuple(v.shape) + (n,), dtype=v.dtype)
    return out.scatter_add(-1, idx.long().unsqueeze(-1), v.unsqueeze(-1))


def _tplace(v, t, c: int, n: int):
    """The gradient of a loss's target pick (nll_loss_backward): ``v`` placed at the targets ``t``
    along a new last dim of size n, a zero row where t is the ignore index ``c``.  Undefined (torch
    raises) where a target other than ``c`` is not in ``[0, n)``: targets do not wrap."""
    if t.dtype not in (torch.int64, torch.int32) or tuple(t.shape) != tuple(v.shape):
        raise ValueError(f"tplace: values of shape {tuple(v.shape)} at targets of shape {tuple(t.shape)}")
    keep = t != int(c)
    if not isinstance(n, int) or n < 0 or bool(((t[keep] < 0) | (t[keep] >= n)).any()):
        raise ValueError(f"tplace: a target outside [0, {n})")
    out = torch.zeros(tuple(v.shape) + (n,), dtype=v.dtype)
    if not bool(keep.any()):
        return out
    return out.scatter_add(-1, t.masked_fill(~keep, 0).long().unsqueeze(-1),
                           v.masked_fill(~keep, 0).unsqueeze(-1))


def _mplace(v, t, lo: int, n: int):
    """Columns lo .. lo + n - 1 of the placement of ``v`` at ``t`` (v broadcast to t's shape, which
    it may not enlarge): ``v`` at column t - lo where ``lo <= t < lo + n``, a zero row elsewhere
    (any t): a vocab-parallel rank's block of a loss gradient."""
    if t.dtype not in (torch.int64, torch.int32):
        raise ValueError("mplace needs integer indices")
    if tuple(torch.broadcast_shapes(tuple(v.shape), tuple(t.shape))) != tuple(t.shape):
        raise ValueError(f"mplace: values of shape {tuple(v.shape)} at indices of shape {tuple(t.shape)}")
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"mplace of width {n!r}")
    v = v.expand(tuple(t.shape))
    rel = t - int(lo)
    valid = (rel >= 0) & (rel < n)
    out = torch.zeros(tuple(t.shape) + (n,), dtype=v.dtype)
    if n == 0 or not bool(valid.any()):
        return out
    return out.scatter_add(-1, rel.masked_fill(~valid, 0).long().unsqueeze(-1),
                           v.masked_fill(~valid, 0).unsqueeze(-1))


# The gradient of a slice (slice_backward): the gradient placed in a zero tensor, i.e. padded with
# zeros along one dim (``zpad``).  A concat is the sum of its parts each padded to the whole (the
# gradient of a weight every rank slices its own rows of: a sum over ranks).
def _pad(x, d: int, lo: int, hi: int):
    """``x`` with ``lo`` zero slices before it and ``hi`` after it along dim ``d`` (its dtype)."""
    if not 0 <= d < x.dim() or lo < 0 or hi < 0:
        raise ValueError(f"pad of a {x.dim()}-D tensor along dim {d} by {lo}, {hi}")
    zeros = [torch.zeros(tuple(x.shape[:d]) + (k,) + tuple(x.shape[d + 1:]), dtype=x.dtype) for k in (lo, hi)]
    return torch.cat([zeros[0], x, zeros[1]], d)


def _map_pad(parts, d: int, lo: int, total: int):
    out, off = [], int(lo)
    for x in parts:
        out.append(_pad(x, d, off, total - off - x.shape[d]))
        off += x.shape[d]
    return out


# Row-wise ops: (rowwise op x) applies op to each row of x (each 1-D slice along the last dim)
# ALONE, and stacks the results: by this definition an output row depends on its input row only,
# whatever else is in the batch (what makes a row-concat lemma true for every op here).  ``topk``:
# "topk:<k>:<largest>:<sorted>:<i>" is output i (0 values, 1 indices) of torch.topk on one row.
# torch does not specify which index it returns among equal values; lowering aten.topk to this
# term says only that a batched topk chooses in each row as it would on that row alone (CPU: a
# partial sort of each row's own (value, index) pairs); no tie rule (first index, argmax) is assumed.
def _topk_row(k: str, largest: str, sort: str, i: str) -> Callable:
    if largest not in ("0", "1") or sort not in ("0", "1") or i not in ("0", "1"):
        raise ValueError(f"topk:{k}:{largest}:{sort}:{i}")
    return lambda row: torch.topk(row, int(k), dim=-1, largest=largest == "1", sorted=sort == "1")[int(i)]


ROWWISE_OPS: dict[str, Callable] = {"topk": _topk_row}


def rowwise_fn(op: str) -> Callable:
    name, *params = op.split(":")
    return ROWWISE_OPS[name](*params)


def _rowwise(op: str, x):
    if x.dim() < 1:
        raise ValueError("a row-wise op of a 0-D tensor")
    fn = rowwise_fn(op)
    lead, n = tuple(x.shape[:-1]), x.shape[-1]
    rows = x.reshape(math.prod(lead), n)
    outs = [fn(rows[i]) for i in range(rows.shape[0])]
    if not outs:        # no rows: the shape and dtype of one row's result, on a row of zeros
        one = fn(torch.zeros(n, dtype=x.dtype))
        return torch.empty(lead + tuple(one.shape), dtype=one.dtype)
    return torch.stack(outs).reshape(lead + tuple(outs[0].shape))


# ----------------------------------------------------------------------------- constructors

def _c(name, signature, sort, cost, clean, meaning):
    return Constructor(name, signature, sort, cost, clean, meaning)


CONSTRUCTORS: list[Constructor] = [
    # sizes
    _c("DLit", "i64", "Dim", 0, True, lambda n: n),
    _c("DSym", "String", "Dim", 0, True, None),
    _c("dadd", "Dim Dim", "Dim", 1, True, lambda a, b: a + b),   # size arithmetic (see dims.py)
    _c("dsub", "Dim Dim", "Dim", 1, True, lambda a, b: a - b),
    # the row count of a tensor whose size is known only from values (a nonzero result's u0,
    # check/sizes.py): one e-class with the count of every tensor proven equal to it
    _c("DRows", "T", "Dim", 0, True, lambda t: int(t.shape[0])),
    # lists: tensors (concat parts, ranks of a sum), ints (dims), sizes (shapes)
    _c("Nil", "", "TList", 0, True, lambda: []),
    _c("Cons", "T TList", "TList", 0, True, lambda a, r: [a] + r),
    _c("INil", "", "IList", 0, True, lambda: []),
    _c("ICons", "i64 IList", "IList", 0, True, lambda a, r: [a] + r),
    _c("DNil", "", "DList", 0, True, lambda: []),
    _c("DCons", "Dim DList", "DList", 0, True, lambda a, r: [a] + r),
    # leaves
    _c("Gd", "String", "T", 1, True, None),           # a tensor of the distributed program
    _c("Gs", "String", "T", BIG * 10, False, None),   # a tensor of the sequential program
    # clean: data movement and reductions over ranks
    _c("concat", "TList i64", "T", CLEAN_COST, True, _concat),
    _c("rsum", "TList", "T", CLEAN_COST, True, _stack_sum),
    _c("rmax", "TList", "T", CLEAN_COST, True, _stack_max),
    _c("slice", "T i64 Dim Dim", "T", CLEAN_COST, True, _slice),
    _c("transpose", "T i64 i64", "T", CLEAN_COST, True, lambda x, a, b: x.transpose(a, b)),
    _c("permute", "T IList", "T", CLEAN_COST, True, lambda x, dims: x.permute(*dims)),
    _c("view", "T DList", "T", CLEAN_COST, True, _view),
    _c("expand", "T DList", "T", CLEAN_COST, True, _expand),
    # compute
    _c("unary", "String T", "T", BIG, False, _unary),
    _c("scalar", "String T String", "T", BIG, False, _scalar),
    _c("binary", "String T T", "T", BIG, False, _binary),
    _c("where", "T T T", "T", BIG, False, _where),     # torch.where(c, a, b)
    # a pointwise op of three or more tensors: an op text (opcall.py) and the operands
    _c("pointwise", "String TList", "T", BIG, False, _pointwise),
    _c("mm", "T T", "T", BIG, False, lambda a, b: torch.mm(*_no_bool(a, b))),
    _c("bmm", "T T", "T", BIG, False, lambda a, b: torch.bmm(*_no_bool(a, b))),
    _c("reduce", "String T IList i64", "T", BIG, False, _reduce),
    _c("softmax", "T i64", "T", BIG, False, lambda x, d: torch.softmax(x, d)),
    _c("opaque", "String TList", "T", BIG, False, None),   # an op with no lemmas: congruence only
    # integer scalar ops, constants, table lookups and picks (indexing; offsets are i64 so
    # lemmas can add part widths)
    _c("iscalar", "String T i64", "T", BIG, False, _iscalar),       # x op c, integer x and c
    _c("cst", "String DList String", "T", CLEAN_COST, True, _cst),   # a constant tensor of a shape and dtype
    _c("arange", "i64 i64 Dim", "T", CLEAN_COST, True, _arange),     # positions (see _arange)
    _c("take", "T T", "T", BIG, False, _take),
    # x.nonzero() and x.index_put((i,), v) at distinct positions i (a 1-D tensor's nonzero: the
    # Megatron MoE dispatch ``out[(ids == e).nonzero(), :] = expert(x[...])``)
    _c("nonzero", "T", "T", BIG, False, lambda x: torch.nonzero(x)),
    _c("iput", "T T T", "T", BIG, False, _iput),
    _c("mtake", "T T i64", "T", BIG, False, _mtake),
    _c("pick", "T T", "T", BIG, False, _pick),
    _c("mpick", "T T i64", "T", BIG, False, _mpick),
    # a loss's target pick and count (nll_loss): only loss lowerings write them, so their index is
    # a loss target (what the valid_indices assumption speaks of)
    _c("tpick", "T T i64", "T", BIG, False, _tpick),
    _c("tcount", "T T i64 String", "T", BIG, False, _tcount),
    # the loss's target picks of row parts: pairs of a concat of log-probabilities and one of their
    # targets along d, each with ignore index c
    _c("zip_tpick", "TList TList i64 i64", "TList", BIG, False,
       lambda l1, l2, c, d: [_tpick(a, b, c) for a, b in _zip_aligned(l1, l2, d, d)]),
    # a lookup of every part at the same ids (rows of a table split along another dim than its rows)
    _c("map_take", "TList T", "TList", BIG, False, lambda l, ids: [_take(x, ids) for x in l]),
    _c("map_scatter", "TList T i64", "TList", BIG, False, lambda l, ids, n: [_scatter(g, ids, n) for g in l]),
    _c("map_mtake", "TList T i64", "TList", BIG, False,
       lambda l, ids, lo: _map_offsets(_mtake, l, ids, lo, 0)),
    _c("map_mpick", "TList T i64", "TList", BIG, False,
       lambda l, t, lo: _map_offsets(_mpick, l, t, lo, -1)),
    _c("layernorm", "T T T i64 String", "T", BIG, False, _layernorm),
    # the gradients of a lookup, of a pick and of a slice (see _scatter, _mscatter, _place, _pad)
    _c("scatter", "T T i64", "T", BIG, False, _scatter),
    _c("mscatter", "T T i64 i64", "T", BIG, False, _mscatter),
    _c("place", "T T i64", "T", BIG, False, _place),
    # a loss's target gradient (nll_loss_backward, zero rows at the ignore index) and its
    # vocab-parallel (masked) block of columns (see _tplace, _mplace)
    _c("tplace", "T T i64 i64", "T", BIG, False, _tplace),
    _c("mplace", "T T i64 i64", "T", BIG, False, _mplace),
    _c("zpad", "T i64 i64 i64", "T", CLEAN_COST, True, _pad),
    _c("rowwise", "String T", "T", BIG, False, _rowwise),     # an op on each last-dim row alone

    # List-walking helpers (map an op over concat parts, zip two lists, ...) are constructors
    # too: they are dirty (cost BIG) until rewritten away, so an unfinished walk is never extracted.
    _c("map_unary", "String TList", "TList", BIG, False, lambda op, l: [_unary(op, x) for x in l]),
    _c("map_scalar", "String TList String", "TList", BIG, False, lambda op, l, c: [_scalar(op, x, c) for x in l]),
    _c("map_iscalar", "String TList i64", "TList", BIG, False, lambda op, l, c: [_iscalar(op, x, c) for x in l]),
    _c("map_binary_l", "String TList T", "TList", BIG, False, lambda op, l, y: [_binary(op, x, y) for x in l]),
    _c("map_binary_r", "String T TList", "TList", BIG, False, lambda op, y, l: [_binary(op, y, x) for x in l]),
    _c("zip_binary", "String TList TList i64 i64", "TList", BIG, False,
       lambda op, l1, l2, d1, d2: [_binary(op, a, b) for a, b in _zip_aligned(l1, l2, d1, d2)]),
    # where over concats along one axis k (from the right): parts zipped, broadcast operands copied
    _c("zip_where", "String TList TList TList i64", "TList", BIG, False, _zip_where),
    # picks of row parts: the pairs of a concat of log-probabilities and one of their targets along d
    _c("zip_pick", "TList TList i64", "TList", BIG, False,
       lambda l1, l2, d: [_pick(a, b) for a, b in _zip_aligned(l1, l2, d, d)]),
    # placements of row parts (place's gradient-of-a-pick): the pairs of a concat of values and one
    # of their indices along d, each placed along a new last dim of size n
    _c("zip_place", "TList TList i64 i64", "TList", BIG, False,
       lambda l1, l2, n, d: [_place(a, b, n) for a, b in _zip_aligned(l1, l2, d, d)]),
    # a loss's target gradients of row parts: the pairs of a concat of values and one of their
    # targets along d, each placed with ignore index c along a new last dim of size n
    _c("zip_tplace", "TList TList i64 i64 i64", "TList", BIG, False,
       lambda l1, l2, c, n, d: [_tplace(a, b, c, n) for a, b in _zip_aligned(l1, l2, d, d)]),
    _c("bc_like", "T TList i64", "TList", BIG, False, _bc_like),
    # a constant split like a concat's parts: (cst c s t) with s[k] := each part's size on its dim d
    # (a constant added to row-sharded x, split at the ranks' rows)
    _c("cst_parts", "String DList String i64 TList i64", "TList", BIG, False,
       lambda c, s, t, k, l, d: [_cst(c, _dset(s, k, x.shape[d]), t) for x in l]),
    _c("lsum", "TList i64", "Dim", BIG, False, lambda l, d: sum(int(x.shape[d]) for x in l)),
    _c("map_mm_l", "TList T", "TList", BIG, False, lambda l, w: [torch.mm(*_no_bool(x, w)) for x in l]),
    _c("map_mm_r", "T TList", "TList", BIG, False, lambda x, l: [torch.mm(*_no_bool(x, w)) for w in l]),
    _c("zip_mm", "TList TList", "TList", BIG, False, lambda l1, l2: [torch.mm(*_no_bool(a, b)) for a, b in _zip_exact(l1, l2)]),
    _c("map_transpose", "TList i64 i64", "TList", BIG, False, lambda l, a, b: [x.transpose(a, b) for x in l]),
    _c("map_softmax", "TList i64", "TList", BIG, False, lambda l, d: [torch.softmax(x, d) for x in l]),
    _c("map_rowwise", "String TList", "TList", BIG, False, lambda op, l: [_rowwise(op, x) for x in l]),
    _c("map_view", "TList DList", "TList", BIG, False, lambda l, s: [x.reshape(tuple(s)) for x in l]),
    _c("map_view_last", "TList DList", "TList", BIG, False,
       lambda l, s: [x.reshape(tuple(s[:-1]) + (x.shape[-1],)) for x in l]),
    _c("dset_last", "DList Dim", "DList", BIG, False, lambda s, v: list(s[:-1]) + [v]),
    # batched matmul and view/permute/slice helpers (attention with heads split across ranks);
    # matmul is torch.matmul on operands with the same batch dims (>= 3-D; 2-D is mm)
    _c("matmul", "T T", "T", BIG, False, lambda a, b: torch.matmul(*_no_bool(a, b))),
    _c("zip_matmul", "TList TList i64", "TList", BIG, False,
       lambda l1, l2, d: [torch.matmul(*_no_bool(a, b)) for a, b in _zip_aligned(l1, l2, d, d)]),
    # each part viewed to s with s[j] := the part's size on its dim d
    _c("map_view_at", "TList DList i64 i64", "TList", BIG, False,
       lambda l, s, d, j: [x.reshape(tuple(_dset(s, j, x.shape[d]))) for x in l]),
    # each part viewed to s with s[d] := part size on d divided by s[d+1] (dim d split in two)
    _c("map_view_split", "TList DList i64", "TList", BIG, False,
       lambda l, s, d: [x.reshape(tuple(_dset(s, d, _exact_div(x.shape[d], _dat(s, d + 1))))) for x in l]),
    # each part viewed to s with s[d] := part size on d times its size on d+1 (dims d, d+1 merged)
    _c("map_view_merge", "TList DList i64", "TList", BIG, False,
       lambda l, s, d: [x.reshape(tuple(_dset(s, d, x.shape[d] * x.shape[d + 1]))) for x in l]),
    _c("map_slice", "TList i64 Dim Dim", "TList", BIG, False, lambda l, d, a, b: [_slice(x, d, a, b) for x in l]),
    _c("map_permute", "TList IList", "TList", BIG, False, lambda l, p: [x.permute(*p) for x in l]),
    _c("dset", "DList i64 Dim", "DList", BIG, False, lambda s, i, v: _dset(s, i, v)),
    # a batched product of each part (rows of a context-parallel rank: bmm(concat(l, 1), w))
    _c("map_bmm_l", "TList T", "TList", BIG, False, lambda l, w: [torch.bmm(*_no_bool(x, w)) for x in l]),
    # the batched products of pairs of parts (a bmm whose contraction dim is split: the rows of
    # one operand's last dim against the other's middle dim, e.g. a context-parallel K/V gradient)
    _c("zip_bmm", "TList TList", "TList", BIG, False,
       lambda l1, l2: [torch.bmm(*_no_bool(a, b)) for a, b in _zip_exact(l1, l2)]),
    # walk helpers for lemmas over sums across ranks
    # op applied rank by rank: sum_r a_r + sum_r b_r = sum_r (a_r + b_r) (lists of equal length)
    _c("zip_ranks", "String TList TList", "TList", BIG, False,
       lambda op, l1, l2: [_binary(op, a, b) for a, b in _zip_exact(l1, l2)]),
    # each part expanded to s with s[j] := the part's size on its dim d
    _c("map_expand_at", "TList DList i64 i64", "TList", BIG, False,
       lambda l, s, d, j: [x.expand(tuple(_dset(s, j, x.shape[d]))) for x in l]),
    # k copies of one tensor: the parts of an expand along a broadcast dim, split evenly
    _c("repl", "T i64", "TList", BIG, False, _repl),
    # concat([concat(l1, e)] + r, d): a concat whose first part is a concat along another dim,
    # marked so that a lemma rooted at this (rare) constructor can look at the rest
    _c("concat_nest", "TList TList i64 i64", "T", BIG, False,
       lambda l1, r, d, e: _concat([_concat(l1, e)] + list(r), d)),
    # pairs of parts that line up on dim e, each pair concatenated along d: [concat([a_i, b_i], d)]
    _c("zip_concat", "TList TList i64 i64", "TList", BIG, False,
       lambda l1, l2, d, e: [_concat([a, b], d) for a, b in _zip_aligned(l1, l2, e, e)]),
    # reductions and layer norm part by part
    _c("map_reduce", "String TList IList i64", "TList", BIG, False,
       lambda op, l, dims, k: [_reduce(op, x, dims, k) for x in l]),
    _c("map_layernorm", "TList T T i64 String", "TList", BIG, False,
       lambda l, w, b, k, eps: [_layernorm(x, w, b, k, eps) for x in l]),
    _c("lappend", "TList TList", "TList", BIG, False, lambda a, b: list(a) + list(b)),
    # each part zero-padded to total along d, the first starting lo in: part k has lo + (sizes of
    # the parts before it) zeros before it
    _c("map_zpad", "TList i64 i64 i64", "TList", BIG, False, _map_pad),
    # each part zero-padded alike along d (lo before, hi after): a pad along a dim other than a
    # concat's axis
    _c("map_zpad_each", "TList i64 i64 i64", "TList", BIG, False,
       lambda l, d, lo, hi: [_pad(x, d, lo, hi) for x in l]),
    # each part placed alike at the same indices (a placement is linear in its values)
    _c("map_place_each", "TList T i64", "TList", BIG, False, lambda l, i, n: [_place(x, i, n) for x in l]),
]

BY_NAME = {c.name: c for c in CONSTRUCTORS}

# egglog primitives usable in lemma guards and right-hand sides, with their Python meaning.
PRIMITIVES: dict[str, Callable] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "to-string": lambda a: str(a),
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "dle": lambda a, b: a <= b,     # a relation on sizes, proven by egglog (literals) or Z3
    "cmul": lambda a, b: const_product(a, b),   # product of two constant texts (see const_product)
    # the text of an integer constant (a cst's value), and the masked_fill op filling it (filled by
    # rules where a pattern asks: lemmas/indexing.py)
    "itext": lambda c: str(int(c)),
    "fillop": lambda c: MASKED_FILL + str(int(c)),
    "%": lambda a, b: a % b,
    "/": lambda a, b: a // b,
    "ihas": lambda l, i: int(i in l),
    "ibelow": lambda l, i: sum(1 for a in l if a < i),
    "ilen": lambda l: len(l),
    "dtype": lambda x: dtype_name(x),
    "fdtype": lambda t: t in FLOAT_DTYPES,
    "glinear": lambda op: op in GRAD_LINEAR,
    "fcast": lambda op: op in FLOAT_CASTS,
    "fexact": lambda op: _fexact(op),
    # the length of a list of tensors (ranks of a sum; computed where a rule asks, lemmas/collective.py)
    # and the text of a positive count as a float constant (a scalar term's divisor: "2.0")
    "tlen": lambda l: len(l),
    "ntext": lambda n: _ntext(n),
    # provenance, not a value: a drawn or evaluated tensor stands for a program's input (the
    # e-graph derives (given x) from the inputs' leaves through GIVEN_MOVES)
    "given": lambda x: True,
    # (peer a b): b is the tensor of the same node as a on the next rank, of a's shape and dtype
    # (the checker declares it from the graphs' metadata, check/distributed.py): its meaning for
    # a lemma is the shape and dtype that the two share
    "peer": lambda a, b: a.shape == b.shape and a.dtype == b.dtype,
}

# Element types.  (dtype x) is the name of tensor x's dtype ("float32", "int64", "bool"): every
# tensor of either program has one (check/sizes.py), and data movement passes it on
# (lemmas/shapes.py).  (fdtype t) holds for the floating dtypes.  Scaling moves through an op only
# where every operand has one floating dtype: with an int, bool or lower-precision operand the
# result's dtype or value differs (int overflow, float16 overflow of an intermediate quotient).
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
# (fcast op): op is the unary cast to a floating dtype
FLOAT_CASTS = tuple(f"to_{t}" for t in FLOAT_DTYPES)
# (fexact op) = n for the cast op to a floating dtype: every integer in [0, n] is exact in that
# dtype (n = 2 ** significand bits), so a sum of at most n zeros and ones is exact in any order
FLOAT_EXACT = {"to_float16": 2 ** 11, "to_bfloat16": 2 ** 8, "to_float32": 2 ** 24, "to_float64": 2 ** 53}


# the counts ntext is defined for: their float text is the integer's digits and ".0" (the same
# text egglog builds, and the one lowering writes for such a divisor, semantics/lower/core.py _scalar_text)
NTEXT_MAX = 2 ** 53


def _ntext(n) -> str:
    if isinstance(n, bool) or not isinstance(n, int) or not 0 < n < NTEXT_MAX:
        raise ValueError(f"no count text for {n!r}")
    return repr(float(n))


def _fexact(op: str) -> int:
    if op not in FLOAT_EXACT:
        raise ValueError(f"{op} is not a cast to a floating dtype")
    return FLOAT_EXACT[op]


def dtype_name(x) -> str:
    return str(x.dtype).removeprefix("torch.")


# Binary ops linear in their first operand, op(a / c, b) = op(a, b) / c: products, quotients and
# the pointwise backward ops (grad, saved tensor) -- the gradient of a mean scaled by 1 / n.
GRAD_LINEAR = ("mul", "div", "gelu_backward", "gelu_tanh_backward", "silu_backward", "sigmoid_backward",
               "tanh_backward", "threshold_backward:0.0")    # the last: relu's backward, g where x > 0

# Functions (not constructors) and relations the engine maintains.  Queries on int lists
# (reduction dims) are computed on demand by rules in lemmas/shapes.py: (iask l i) asks for
# (ihas l i) = 1 if i is in l else 0 and (ibelow l i) = #{a in l : a < i}; (ilen l) is the
# length (their Python meaning, for lemma conditions, is in PRIMITIVES).
FUNCTIONS_TEXT = """
(function dim (T i64) Dim :merge old)
(function ndim (T) i64 :merge old)
(function dlen (DList) i64 :merge old)
(function dat (DList i64) Dim :merge old)
(function dlast (DList) Dim :merge old)
(relation dle (Dim Dim))
(relation ask_le (Dim Dim))
(relation dterm (Dim))
(relation clean (T))
(relation cleanl (TList))
(relation certleaf (T))
(relation cert (T))
(relation certl (TList))
(relation cleand (Dim))
(relation cleandl (DList))
(relation certd (Dim))
(relation certdl (DList))
(relation given (T))
(relation givenl (TList))
(relation vpfx (T DList i64))
(relation vsfx (T DList i64))
(relation bsame (T T i64))
(relation peer (T T))
(relation ask_zip (TList TList i64 i64))
(relation zipok (TList TList i64 i64))
(function ipos (IList i64) i64 :merge old)
(relation ask_cmul (String String))
(function cmul (String String) String :merge old)
(function itext (i64) String :merge old)
(function fillop (i64) String :merge old)
(relation iask (IList i64))
(function ihas (IList i64) i64 :merge old)
(function ibelow (IList i64) i64 :merge old)
(function ilen (IList) i64 :merge old)
(function dtype (T) String :merge old)
(relation fdtype (String))
(relation glinear (String))
(relation fcast (String))
(function fexact (String) i64 :merge old)
(relation ask_tlen (TList))
(function tlen (TList) i64 :merge old)
(function ntext (i64) String :merge old)
"""


# Ops that move their input's values without computing new ones (given propagates through them).
GIVEN_MOVES = ("concat", "slice", "transpose", "permute", "view", "expand")
# Inputs marked given: the user's inputs (``input:`` ports: what an assumption about "the inputs"
# speaks of -- not parameters, buffers, module constants or [cut] tensors, which the program
# holds or computes: a buffer of -100 padding is no input label), and integer ones, the only
# dtypes a loss's targets have (float inputs would make facts no lemma reads).
GIVEN_DTYPES = ("int64", "int32", "int16", "int8", "uint8")


def given_input(port: str | None, val) -> bool:
    """Whether the input ``port`` (of this meta) is marked (given ...) in the e-graph."""
    return bool(port) and port.startswith("input:") and getattr(val, "dtype", None) in GIVEN_DTYPES


def declarations() -> str:
    """egglog text declaring every sort and constructor."""
    sorts = {}
    for c in CONSTRUCTORS:
        sorts.setdefault(c.sort, []).append(c)
    lines = ["(sort T)", "(sort TList)", "(sort IList)", "(sort DList)", "(sort Dim)",
             "(ruleset lemmas)", "(ruleset walks)", "(ruleset shapes)", "(ruleset zips)", "(ruleset cleanliness)",
             "(ruleset certify)"]
    for c in CONSTRUCTORS:
        lines.append(f"(constructor {c.name} ({c.signature}) {c.sort} :cost {c.cost})")
    lines.append(FUNCTIONS_TEXT)
    lines += [f"(fdtype {str_lit(t)})" for t in FLOAT_DTYPES] + [f"(glinear {str_lit(op)})" for op in GRAD_LINEAR]
    lines += [f"(fcast {str_lit(op)})" for op in FLOAT_CASTS]
    lines += [f"(set (fexact {str_lit(op)}) {n})" for op, n in FLOAT_EXACT.items()]
    # size arithmetic: literals fold here; symbolic terms are canonicalized and compared by dims.py
    lines += [
        "(rewrite (dadd (DLit a) (DLit b)) (DLit (+ a b)) :ruleset shapes)",
        "(rewrite (dsub (DLit a) (DLit b)) (DLit (- a b)) :ruleset shapes)",
        "(rewrite (dadd a (DLit 0)) a :ruleset shapes)",
        "(rewrite (dadd (DLit 0) a) a :ruleset shapes)",
        "(rewrite (dsub a (DLit 0)) a :ruleset shapes)",
        "(rule ((= t (dadd a b))) ((dterm t)) :ruleset shapes)",
        "(rule ((= t (dsub a b))) ((dterm t)) :ruleset shapes)",
        "(rule ((ask_le a b) (= a (DLit x)) (= b (DLit y)) (<= x y)) ((dle a b)) :ruleset shapes)",
        "(rule ((ask_le a a)) ((dle a a)) :ruleset shapes)",
    ]
    # clean: G_d leaves, and clean ops whose tensor children are clean.  cert (ruleset certify,
    # run only for the final output relation): the same over the leaves marked certleaf -- the
    # distributed program's outputs and the tensors the spec names as given.
    lines.append("(rule ((= x (Gd n))) ((clean x)) :ruleset cleanliness)")
    # given: the values of a program's input, moved (the checker marks the inputs' leaves).  An
    # assumption about the inputs (no_ignored_targets) covers these, never values a program
    # computes (targets it fills with the ignore index itself).
    lines.append("(rule ((= l (Nil))) ((givenl l)) :ruleset cleanliness)")
    lines.append("(rule ((= l (Cons a r)) (given a) (givenl r)) ((givenl l)) :ruleset cleanliness)")
    for c in CONSTRUCTORS:
        if c.name in GIVEN_MOVES:
            sig = c.signature.split()
            args = [f"a{i}" for i in range(len(sig))]
            conds = " ".join(f"({'given' if s == 'T' else 'givenl'} a{i})" for i, s in enumerate(sig) if s in ("T", "TList"))
            lines.append(f"(rule ((= x ({c.name} {' '.join(args)})) {conds}) ((given x)) :ruleset cleanliness)")
    lines.append("(rule ((certleaf x)) ((cert x)) :ruleset certify)")
    # a term is clean when its constructor is and every argument of a sort that can hold a tensor
    # is: tensors, their lists, and sizes -- a size may be a tensor's row count (DRows), so a
    # view or a constant sized by a G_s tensor's count is not clean (as is_clean says)
    for sorts, ruleset in ((CLEAN_SORTS, "cleanliness"), (CERT_SORTS, "certify")):
        for c in CONSTRUCTORS:
            if c.sort not in sorts or not c.clean or c.name == "Gd":
                continue
            sig = c.signature.split()
            args = [f"a{i}" for i in range(len(sig))]
            conds = [f"({sorts[s]} a{i})" for i, s in enumerate(sig) if s in sorts]
            lhs = f"({c.name} {' '.join(args)})" if args else f"({c.name})"
            lines.append(f"(rule ((= x {lhs}) {' '.join(conds)}) (({sorts[c.sort]} x)) :ruleset {ruleset})")
    return "\n".join(lines)


# the cleanliness relation of each sort that can hold a G_s or G_d tensor (and the certificate's)
CLEAN_SORTS = {"T": "clean", "TList": "cleanl", "Dim": "cleand", "DList": "cleandl"}
CERT_SORTS = {"T": "cert", "TList": "certl", "Dim": "certd", "DList": "certdl"}


# ----------------------------------------------------------------------------- evaluation

class EvalError(Exception):
    """A term that cannot be evaluated (undefined: lists of different lengths, bad shapes...)."""


# Arguments that are tensor dims (or lists of them): the term language writes every dim in its
# non-negative form (lowering and spec parsing normalise where a dim enters), so ``dim=-1`` and
# ``dim=1`` can never be two literals for one axis.  A negative dim makes a term undefined.
DIM_ARGS: dict[str, tuple[int, ...]] = {
    "concat": (1,), "slice": (1,), "transpose": (1, 2), "permute": (1,), "reduce": (2,),
    "softmax": (1,), "zip_binary": (3, 4), "lsum": (1,), "map_transpose": (1, 2), "map_softmax": (1,),
    "zip_matmul": (2,), "map_view_at": (2, 3), "map_view_split": (2,), "map_view_merge": (2,),
    "map_slice": (1,), "map_permute": (1,), "map_reduce": (2,), "dset": (1,), "map_expand_at": (2, 3),
    "concat_nest": (2, 3), "zip_concat": (2, 3), "zpad": (1,), "map_zpad": (1,),
    "map_zpad_each": (1,),
    "zip_place": (3,), "zip_tplace": (4,), "cst_parts": (3, 5),
}


def _check_dims(name: str, vals: list):
    for i in DIM_ARGS.get(name, ()):
        v = vals[i]
        for d in (v if isinstance(v, list) else [v]):
            if not isinstance(d, int) or d < 0:
                raise EvalError(f"{name}: dim {d!r} is not a non-negative integer")


def evaluate(expr, env: dict):
    """Compute a parsed s-expression with torch.  ``env`` maps variable names to values.

    ``(dim x i)`` is ``x.shape[i]``; ``(ndim x)`` is ``x.dim()``; lists are Python lists.
    """
    if isinstance(expr, Var):
        if expr.name in ("true", "false"):
            return expr.name == "true"
        try:
            return env[expr.name]
        except KeyError:
            raise EvalError(f"unbound variable {expr.name}") from None
    if not isinstance(expr, tuple):
        return expr
    head, *args = expr
    name = head.name if isinstance(head, Var) else head
    vals = [evaluate(a, env) for a in args]
    try:
        if name == "dim":
            if not 0 <= vals[1] < vals[0].dim():
                raise EvalError(f"dim {vals[1]} of a {vals[0].dim()}-D tensor")
            return int(vals[0].shape[vals[1]])
        if name == "ndim":
            return vals[0].dim()
        if name == "dlen":
            return len(vals[0])
        if name == "dlast":
            return vals[0][-1]
        if name in VIEW_RELATIONS:
            return VIEW_RELATIONS[name](*vals)
        if name in PRIMITIVES:
            return PRIMITIVES[name](*vals)
        c = BY_NAME.get(name)
        if c is None or c.meaning is None:
            raise EvalError(f"no meaning for {name}")
        _check_dims(name, vals)
        return c.meaning(*vals)
    except EvalError:
        raise
    except (RuntimeError, ValueError, IndexError, TypeError) as e:
        raise EvalError(f"{name}: {e}") from None


def _vpfx(x, s, i):
    """The first i dims of tensor x are the first i entries of shape list s."""
    return 0 <= i <= min(x.dim(), len(s)) and list(x.shape[:i]) == list(s[:i])


def _vsfx(x, s, j):
    """The last j dims of tensor x are the last j entries of shape list s."""
    n, m = x.dim(), len(s)
    return 0 <= j <= min(n, m) and list(x.shape[n - j:]) == list(s[m - j:])


def _bsame(x, y, i):
    """x and y agree on their first i dims."""
    return 0 <= i <= min(x.dim(), y.dim()) and x.shape[:i] == y.shape[:i]


def _zipok(l1, l2, d1, d2):
    """Two lists of concat parts line up pairwise: one length, part k of l1 as long along d1 as
    part k of l2 along d2 (what zip_binary's walk needs to finish)."""
    return len(l1) == len(l2) and all(a.shape[d1] == b.shape[d2] for a, b in zip(l1, l2))


def _dat(s, i):
    if not 0 <= i < len(s):
        raise IndexError("dat index out of range")
    return s[i]


def _ipos(p, d):
    return list(p).index(d)


VIEW_RELATIONS: dict[str, Callable] = {
    "vpfx": _vpfx, "vsfx": _vsfx, "bsame": _bsame, "dat": _dat, "ipos": _ipos, "zipok": _zipok,
}


def allclose(a, b, rtol=1e-6, atol=1e-8) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(
            allclose(x, y, rtol, atol) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape:
            return False
        if a.dtype == torch.bool or b.dtype == torch.bool:
            return bool(torch.equal(a, b))
        return bool(torch.allclose(a.double(), b.double(), rtol=rtol, atol=atol, equal_nan=True))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=rtol, abs_tol=atol)
    return a == b


# ----------------------------------------------------------------------------- shapes of clean terms

def clean_meta(t, leaf, size, same) -> tuple[tuple, str]:
    """(shape, dtype) of a parsed clean term, computed from its leaves alone.

    ``leaf(key)`` gives a G_d tensor's (shape, dtype); ``size(dim_term)`` a Dim term's value;
    ``same(a, b)`` decides that two sizes are equal.  Independent of the e-graph's shape facts,
    so a certificate whose shape differs from its G_s tensor's (a lemma that is wrong on some
    shapes) is caught before any verdict.  Raises EvalError when the term is ill-shaped."""
    head = t[0].name if isinstance(t[0], Var) else t[0]
    a = t[1:]

    def sub(x):
        return clean_meta(x, leaf, size, same)

    def parts(lst):
        out = []
        while isinstance(lst, tuple) and (lst[0].name if isinstance(lst[0], Var) else lst[0]) == "Cons":
            out.append(sub(lst[1]))
            lst = lst[2]
        return out

    def ints(lst):
        out = []
        while isinstance(lst, tuple) and len(lst) == 3:
            out.append(lst[1])
            lst = lst[2]
        return out

    def dims(lst):
        return [size(d) for d in ints(lst)]

    def check(ok, why):
        if not ok:
            raise EvalError(f"{head}: {why}")

    if head == "Gd":
        return leaf(a[0])
    if head in ("rsum", "rmax", "concat"):
        ps = parts(a[0])
        check(ps, "no parts")
        shape, dtype = ps[0]
        check(all(dt == dtype for _, dt in ps), f"parts of dtypes {[dt for _, dt in ps]}")
        check(all(len(s) == len(shape) for s, _ in ps), "parts of different ranks")
        if head != "concat":
            check(all(all(same(x, y) for x, y in zip(s, shape)) for s, _ in ps), "parts of different shapes")
            return shape, dtype
        d = a[1]
        check(0 <= d < len(shape), f"dim {d} of a {len(shape)}-D tensor")
        check(all(all(same(x, y) for i, (x, y) in enumerate(zip(s, shape)) if i != d) for s, _ in ps),
              "parts differ off the concat dim")
        total = sum((s[d] for s, _ in ps[1:]), shape[d])
        return tuple(shape[:d]) + (total,) + tuple(shape[d + 1:]), dtype
    if head == "slice":
        shape, dtype = sub(a[0])
        d, s, e = a[1], size(a[2]), size(a[3])
        check(0 <= d < len(shape), f"dim {d} of a {len(shape)}-D tensor")
        return tuple(shape[:d]) + (e - s,) + tuple(shape[d + 1:]), dtype
    if head == "transpose":
        shape, dtype = sub(a[0])
        i, j = a[1], a[2]
        check(0 <= i < len(shape) and 0 <= j < len(shape), f"dims {i}, {j} of a {len(shape)}-D tensor")
        s = list(shape)
        s[i], s[j] = s[j], s[i]
        return tuple(s), dtype
    if head == "permute":
        shape, dtype = sub(a[0])
        p = ints(a[1])
        check(sorted(p) == list(range(len(shape))), f"{p} is not a permutation of {len(shape)} dims")
        return tuple(shape[i] for i in p), dtype
    if head == "view":
        shape, dtype = sub(a[0])
        new = tuple(dims(a[1]))
        check(same(math.prod(new), math.prod(shape)), f"{list(shape)} viewed as {list(new)}")
        return new, dtype
    if head == "expand":
        shape, dtype = sub(a[0])
        new = tuple(dims(a[1]))
        k = len(new) - len(shape)
        check(k >= 0 and all(same(x, 1) or same(x, new[k + i]) for i, x in enumerate(shape)),
              f"{list(shape)} expanded to {list(new)}")
        return new, dtype
    if head == "cst":
        return tuple(dims(a[1])), a[2]
    if head == "unary" and a[0] == "neg":      # a spec's neg(...) (input relations, expectations)
        return sub(a[1])
    if head == "arange":
        return (size(a[2]),), "int64"
    if head == "zpad":
        shape, dtype = sub(a[0])
        d, lo, hi = a[1], a[2], a[3]
        check(0 <= d < len(shape) and lo >= 0 and hi >= 0, f"pad of a {len(shape)}-D tensor along {d} by {lo}, {hi}")
        return tuple(shape[:d]) + (shape[d] + lo + hi,) + tuple(shape[d + 1:]), dtype
    raise EvalError(f"{head} is not a clean operator")


