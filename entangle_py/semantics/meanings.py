"""The torch meanings of the term language's constructors (terms.py declares them).

One function per constructor that computes something: elementwise ops (named ones, and the op
texts of torch's pointwise ops, opcall.py), reductions over dims (``REDUCTIONS``), concatenations
and rank reductions, where, indexing and placing, padding, row-wise ops.  Lemma tests evaluate
both sides of every lemma with these; terms.py attaches each to its constructor.
"""
from __future__ import annotations

import math
from typing import Callable

from entangle_py.lazy import torch

from entangle_py.semantics import opcall

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


def _stack_mean(parts):
    # the mean over ranks, as a program writes it: the ranks' sum divided by their number (an
    # all-reduce, then / world size); floating tensors only (an int sum divides into a float)
    total = _stack_sum(parts)
    if not total.is_floating_point():
        raise ValueError("a mean over ranks of non-float tensors")
    return total / len(parts)


def _stack_lse(parts):
    # the log-sum-exp over ranks, element by element (torch's, stable: no exp overflows)
    _same_parts(parts)
    if not parts[0].is_floating_point():
        raise ValueError("a log-sum-exp over ranks of non-float tensors")
    return torch.logsumexp(torch.stack(parts), 0)


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
# calls with constants, tests/tooling/lemma_draw.py).  The pointwise backward ops are binary ops over (grad,
# saved tensor) with broadcasting, so every binary lemma holds for them (tests/test_backward_ops.py).
UNARY_NAMES = ("gelu", "gelu_tanh", "relu", "silu", "sigmoid", "tanh", "exp", "log", "neg", "abs", "sqrt",
               "rsqrt", "erf", "reciprocal", "square", "logical_not") + tuple(f"to_{d}" for d in CASTS)
BINARY_NAMES = ("add", "sub", "mul", "div", "div_floor", "div_trunc", "maximum", "minimum", "pow", "eq", "lt", "gt",
                "le", "ge", "ne", "bitwise_or", "bitwise_and", "logical_or", "logical_and", "gelu_backward",
                "gelu_tanh_backward", "silu_backward", "sigmoid_backward", "tanh_backward")

def _exact_const(a: str, b: str, op, sign: str) -> str:
    """The text of ``op(a, b)`` for two finite non-zero float constant texts, only when the result
    of the two floats is itself a float exactly (the real result, no rounding); else undefined."""
    from fractions import Fraction
    fa, fb = float(a), float(b)
    if not (math.isfinite(fa) and math.isfinite(fb)) or fa == 0 or fb == 0:
        raise ValueError(f"{a} {sign} {b}: not folded")
    r = op(fa, fb)
    if op(Fraction(fa), Fraction(fb)) != Fraction(r):
        raise ValueError(f"{a} {sign} {b} is not a float exactly")
    return repr(r)


def const_product(a: str, b: str) -> str:
    """a * b, where exact (so (x / a) / b = x / (a * b) in exact arithmetic)."""
    return _exact_const(a, b, lambda x, y: x * y, "*")


def const_quotient(a: str, b: str) -> str:
    """a / b, where exact (6.0 / 2.0 = 3.0; not 1.0 / 3.0)."""
    return _exact_const(a, b, lambda x, y: x / y, "/")


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


def _zip_concat_fold(acc, l, d, e):
    """Each tensor of l split along e at the sizes acc's parts have there, its blocks appended to
    acc's parts along d: concat([concat(acc, e)] + l, d) as a list of the blocks' concats along d."""
    acc = list(acc)
    for x in l:
        sizes = [int(a.shape[e]) for a in acc]
        if sum(sizes) != x.shape[e]:
            raise ValueError("a tensor's rows do not line up with the parts")
        acc = [_concat([a, b], d) for a, b in zip(acc, torch.split(x, sizes, e))]
    return acc


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
