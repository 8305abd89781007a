"""Bindings for a lemma's pattern variables, drawn from their sorts (not from the lemma's intent).

``variable_sorts(lemma)`` infers the sort of every variable from where it occurs (constructor
signatures in ``terms``, the argument sorts of primitives and shape functions, and equalities).
``draw(lemma, rng)`` yields bindings over a broad space: tensors of 0-4 dims with sizes 0-4
(float64 mostly, int64 and bool sometimes), lists of 0-8 parts (often concat-compatible along a
random dim with uneven sizes, or broadcast-shaped), ints from -2..5 (negative dims included), sizes
0..6, shape lists (often the shape of a drawn tensor, a merge or split of it), int lists (often a
permutation or sorted dims).  Draws are *structure-aware* (tensors of one binding share a base
shape, concat dim and part sizes, so that conditions can accept them) but never consult the
lemma's condition: the condition filters.

``_walk.run`` (tests/tooling/lemma_walk.py) applies a binding the way egglog would: variables that only occur in the
condition are bound by it (``(= v e)`` / ``(= e (DLit v))``), every other condition must hold (an
undefined condition rejects), trigger terms must be defined (a relation true), and an undefined left side discards
the binding.  On an accepted binding the right side must be defined and equal the left side in
value, shape and dtype.
"""
from __future__ import annotations

import math
import random
import zlib

from entangle_py.lazy import torch

from entangle_py.semantics import terms
from entangle_py.semantics.terms import EvalError, Var, evaluate, parse_sexpr

# ----------------------------------------------------------------------------- sorts

# argument sorts and result sort of functions / primitives used in conditions
_FUNCS = {
    "dim": (("T", "i64"), "Dim"), "ndim": (("T",), "i64"), "dlen": (("DList",), "i64"),
    "dat": (("DList", "i64"), "Dim"), "dlast": (("DList",), "Dim"),
    "ihas": (("IList", "i64"), "i64"), "ibelow": (("IList", "i64"), "i64"), "ilen": (("IList",), "i64"),
    "vpfx": (("T", "DList", "i64"), "bool"), "vsfx": (("T", "DList", "i64"), "bool"),
    "tprod": (("T", "i64"), "i64"), "sprod": (("DList", "i64"), "i64"), "spos": (("DList", "i64"), "i64"),
    "bsame": (("T", "T", "i64"), "bool"), "zipok": (("TList", "TList", "i64", "i64"), "bool"), "ipos": (("IList", "i64"), "i64"),
    "dle": (("Dim", "Dim"), "bool"),
    "itext": (("i64",), "String"), "fillop": (("i64",), "String"), "clampop": (("i64",), "String"),
    "dtype": (("T",), "String"), "fdtype": (("String",), "bool"), "glinear": (("String",), "bool"),
    "fcast": (("String",), "bool"), "fexact": (("String",), "i64"), "given": (("T",), "bool"),
    "peer": (("T", "T"), "bool"), "concat2": (("T", "T", "i64"), "bool"),
    "stile": (("T", "i64", "i64", "TList"), "bool"),
    "replace": (("String", "String", "String"), "String"), "count-matches": (("String", "String"), "i64"),
    "tlen": (("TList",), "i64"), "ntext": (("i64",), "String"), "to-string": (("i64",), "String"),
}
for _fold in terms.FOLDS:      # the engine's exact products and quotients of constant texts
    _FUNCS[_fold] = (("String", "String"), "String")
for _op in ("+", "-", "*", "/", "%", "max"):
    _FUNCS[_op] = (("i64", "i64"), "i64")
for _op in ("<", "<=", ">", ">="):
    _FUNCS[_op] = (("i64", "i64"), "bool")

# domains of String arguments: (constructor, argument index) -> kind
_STRING_KIND = {
    ("unary", 0): "unary", ("map_unary", 0): "unary",
    ("scalar", 0): "scalar", ("map_scalar", 0): "scalar", ("scalar", 2): "const", ("map_scalar", 2): "const",
    ("binary", 0): "binary", ("map_binary_l", 0): "binary", ("map_binary_r", 0): "binary",
    ("zip_binary", 0): "binary", ("zip_ranks", 0): "binary",
    ("reduce", 0): "reduce", ("map_reduce", 0): "reduce",
    ("layernorm", 4): "eps", ("map_layernorm", 4): "eps",
    ("iscalar", 0): "iscalar", ("map_iscalar", 0): "iscalar", ("cst", 0): "cstval", ("cst", 2): "dtype", ("cst_parts", 0): "const", ("cst_parts", 2): "dtype",
    ("tcount", 3): "count",
    ("rowwise", 0): "rowwise", ("map_rowwise", 0): "rowwise",
    ("zip_where", 0): "where",
}
CONSTS = ("0.5", "-2.0", "3.0", "1e-05", "0.0", "-1.0", "2", "2.0", "inf", "-inf")
# calls of torch's pointwise ops with constants (semantics/opcall.py): any op torch calls pointwise
# is a unary or binary op of the term language, so every lemma over (unary op x) or (binary op a b)
# must hold for these too
UNARY_CALLS = ("cos", "sin", "isnan", "sign", "bitwise_not", "clamp.default(_, 0)", "clamp.default(_, -1.0, 0.5)",
               "clamp.default(_, None, 0.5)", "pow.Scalar(2.0, _)", "pow.Tensor_Scalar(_, 3)",
               "leaky_relu.default(_, 0.2)", "nan_to_num.default(_, 0.0)", "round.decimals(_, decimals=1)",
               "softplus.default(_, 2)", "hardtanh.default(_, -0.5, 0.5)")
BINARY_CALLS = ("atan2", "fmod", "remainder", "logaddexp", "xlogy", "copysign", "hypot", "fmax", "bitwise_xor",
                "lerp.Scalar(_, _, 0.5)", "clamp.Tensor(_, _)", "clamp.Tensor(_, None, _)", "add.Tensor(_, _, alpha=2)",
                "div.Tensor_mode(_, _, rounding_mode='floor')", "heaviside")
CALLS = {"unary": UNARY_CALLS, "binary": BINARY_CALLS}     # drawn for 3 in 10 op variables of these kinds
EPS = ("1e-05", "1e-06", "0.001")


def string_domain(kind: str) -> list[str]:
    if kind == "unary":
        return sorted(terms.UNARY_NAMES)
    if kind == "scalar":
        return sorted(terms.SCALAR_OPS)
    if kind == "binary":
        return sorted(terms.BINARY_NAMES) + [terms.MASKED_FILL + "-10000.0", terms.MASKED_FILL + "0.0",
                                             terms.THRESHOLD_BACKWARD + "0.0", terms.THRESHOLD_BACKWARD + "0.5"]
    if kind == "reduce":
        return ["sum", "mean", "amax", "amin", "prod", "nansum", "logsumexp", "norm:2.0", "norm:1.0", "norm:inf",
                "norm:3.0", "norm:0.5", "norm:0.0", "norm:-1.0",
                "var:1.0", "std:0.0"]
    if kind == "iscalar":
        return list(terms.INT_SCALAR_OPS)
    if kind == "where":      # which operands of a where are concat parts (L), which copies (T)
        return list(terms.WHERE_PATTERNS) + ["LL", "TTT"]
    if kind == "eps":
        return list(EPS)
    if kind == "rowwise":    # top-k of small k (a k past a row's length is undefined: drawn, rejected)
        return [f"topk:{k}:{a}:{b}:{i}" for k in (0, 1, 2) for a in (0, 1) for b in (0, 1) for i in (0, 1)]
    if kind == "dtype":      # a constant's dtype (an int or bool one undefined for most constants)
        return list(terms.CASTS)
    if kind == "cstval":     # a constant tensor's value: an int one's zero is written "0"
        return list(CONSTS) + ["0"]
    if kind == "count":      # a number of elements as a float text, or "" (not known)
        return [repr(float(n)) for n in range(9)] + [""]
    return list(CONSTS)


def _texts(lemma) -> list[str]:
    return [lemma.lhs, lemma.rhs, *lemma.when, *lemma.trigger]


def variable_sorts(lemma) -> tuple[dict[str, str], dict[str, str]]:
    """(sort of each variable, String kind of each String variable)."""
    sorts: dict[str, str] = {}
    kinds: dict[str, str] = {}

    def walk(e, want, where=None):
        if isinstance(e, Var):
            if e.name in ("true", "false"):
                return "bool"
            if want is not None:
                old = sorts.setdefault(e.name, want)
                if old != want and {old, want} != {"i64", "Dim"}:
                    raise TypeError(f"{lemma.name}: variable {e.name} is both {old} and {want}")
            if where in _STRING_KIND:
                kinds[e.name] = _STRING_KIND[where]
            return sorts.get(e.name)
        if isinstance(e, str):
            return "String"
        if isinstance(e, bool):
            return "bool"
        if isinstance(e, int):
            return "i64"
        if isinstance(e, float):
            return "f64"
        head = e[0].name
        args = e[1:]
        if head in ("=", "!="):
            s = [walk(a, None) for a in args]
            known = next((x for x in s if x is not None), None)
            for a in args:
                walk(a, known)
            return "bool"
        if head == "+" and any(isinstance(a, str) for a in args):    # egglog's string concatenation
            for a in args:
                walk(a, "String")
            return "String"
        if head in _FUNCS:
            argsorts, res = _FUNCS[head]
            for a, s in zip(args, argsorts):
                walk(a, s)
            return res
        c = terms.BY_NAME[head]
        for i, (a, s) in enumerate(zip(args, c.signature.split())):
            walk(a, s, (head, i))
        return c.sort

    parsed = [parse_sexpr(t) for t in _texts(lemma)]
    for _ in range(3):          # equalities propagate sorts in any order
        for p in parsed:
            walk(p, None)
    return sorts, kinds


def pattern_vars(text) -> set[str]:
    out = set()

    def go(e):
        if isinstance(e, Var) and e.name not in ("true", "false"):
            out.add(e.name)
        elif isinstance(e, tuple):
            for a in e[1:]:
                go(a)
    go(parse_sexpr(text) if isinstance(text, str) else text)
    return out


# ----------------------------------------------------------------------------- drawing

def _prod(xs):
    return math.prod(xs) if xs else 1


class _Ctx:
    """What one binding's draws share: a base shape, a concat dim, uneven part sizes."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        nd = rng.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
        self.base = [rng.choice([0, 1, 1, 2, 2, 3, 3, 4]) if rng.random() < 0.9 else rng.randint(1, 4)
                     for _ in range(nd)]
        self.cd = rng.randrange(nd) if nd else 0
        k = rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 5, 8])
        self.parts = [rng.choice([0, 1, 2, 2, 3, 4]) for _ in range(k)]
        self.dtype = rng.choices([torch.float64, torch.int64, torch.bool], [0.85, 0.1, 0.05])[0]
        self.ints: list[int] = list(range(-2, 6))
        self.sizes: list[int] = list(range(0, 7))
        self.shapes: list[list[int]] = []
        self.lists: list[list] = []

    def note(self, shape):
        shape = list(shape)
        self.shapes.append(shape)
        self.sizes += shape
        self.ints += shape + [len(shape)]


def _value(rng, shape, dtype):
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    if dtype == torch.bool:
        return torch.rand(tuple(shape), generator=g) < 0.5
    if dtype == torch.int64:
        return torch.randint(-3, 7, tuple(shape), generator=g)
    return torch.randn(tuple(shape), generator=g, dtype=torch.float64)


def _broadcast_shape(rng, shape):
    """A shape that broadcasts against ``shape``: a suffix, with some dims set to 1."""
    k = rng.randint(0, len(shape))
    s = list(shape[len(shape) - k:])
    for i in range(len(s)):
        if rng.random() < 0.3:
            s[i] = 1
    if rng.random() < 0.15:                     # more dims than shape: leading 1s or sizes
        s = [rng.choice([1, 1, 2])] + s
    return s


def _partner(rng, s):
    """A right operand of a matrix product with a left operand of shape s."""
    if len(s) < 2:
        return [rng.randint(0, 4) for _ in range(rng.randint(1, 3))]
    return list(s[:-2]) + [s[-1], rng.randint(0, 4)]


def _tensor_shape(ctx: _Ctx):
    rng = ctx.rng
    base = ctx.base
    if ctx.shapes and rng.random() < 0.3:       # related to the previous tensor drawn
        prev = ctx.shapes[-1]
        r = rng.random()
        if r < 0.4:
            return list(prev)
        if r < 0.7:
            return _partner(rng, prev)
        return list(prev[:rng.randint(0, len(prev))])          # a prefix (index shapes)
    mode = rng.random()
    if mode < 0.3:
        return list(base)
    if mode < 0.5 and base:                     # a part: the base with the concat dim resized
        s = list(base)
        s[ctx.cd] = rng.choice(ctx.parts) if ctx.parts else rng.randint(0, 4)
        return s
    if mode < 0.6 and base:                     # the whole of a concat of the parts
        s = list(base)
        s[ctx.cd] = sum(ctx.parts)
        return s
    if mode < 0.8:
        return _broadcast_shape(rng, base)
    if mode < 0.9 and ctx.shapes:
        return list(rng.choice(ctx.shapes))
    return [rng.randint(0, 4) for _ in range(rng.randint(0, 4))]


def _dtype(ctx):
    return ctx.dtype if ctx.rng.random() < 0.7 else ctx.rng.choices(
        [torch.float64, torch.int64, torch.bool], [0.8, 0.15, 0.05])[0]


def draw_tensor(ctx: _Ctx):
    s = _tensor_shape(ctx)
    ctx.note(s)
    return _value(ctx.rng, s, _dtype(ctx))


def draw_tlist(ctx: _Ctx):
    rng = ctx.rng
    dtype = _dtype(ctx)
    mode = rng.random()
    base = ctx.base
    if mode < 0.55 and base:                    # concat-compatible along cd, uneven
        sizes = list(ctx.parts) if rng.random() < 0.7 else [rng.randint(0, 4) for _ in range(rng.randint(0, 8))]
        shapes = []
        for n in sizes:
            s = list(base)
            s[ctx.cd] = n
            shapes.append(s)
        if rng.random() < 0.3 and shapes:       # aligned from the right, with fewer dims
            k = rng.randint(len(base) - ctx.cd, len(base))
            shapes = [s[len(s) - k:] for s in shapes]
        if rng.random() < 0.15 and shapes:      # one part off in another dim
            i = rng.randrange(len(shapes))
            j = rng.randrange(len(shapes[i]))
            shapes[i][j] = rng.randint(0, 4)
    elif mode < 0.65 and ctx.lists:             # partners of the previous list's parts (mm, matmul)
        shapes = [_partner(rng, list(p.shape)) for p in ctx.lists[-1]]
    elif mode < 0.8:                            # copies of one shape (ranks of a sum)
        s = _tensor_shape(ctx)
        shapes = [list(s) for _ in range(rng.choice([0, 1, 2, 2, 3, 4, 8]))]
    else:                                       # broadcast-ish shapes
        shapes = [_broadcast_shape(rng, base) for _ in range(rng.randint(0, 4))]
    for s in shapes:
        ctx.note(s)
    out = [_value(rng, s, dtype) for s in shapes]
    ctx.lists.append(out)
    return out


def draw_int(ctx: _Ctx):
    rng = ctx.rng
    r = rng.random()
    if r < 0.5:
        return rng.randint(-2, 5)
    if r < 0.65:
        return ctx.cd
    if r < 0.8:
        return rng.choice(ctx.ints) + rng.choice(ctx.ints)
    return rng.choice(ctx.ints)


def draw_size(ctx: _Ctx):
    rng = ctx.rng
    r = rng.random()
    if r < 0.4:
        return rng.randint(0, 6)
    if r < 0.55 and ctx.parts:
        i = rng.randint(0, len(ctx.parts))
        return sum(ctx.parts[:i])
    return rng.choice(ctx.sizes)


def draw_dlist(ctx: _Ctx):
    rng = ctx.rng
    src = list(rng.choice(ctx.shapes)) if ctx.shapes and rng.random() < 0.8 else list(ctx.base)
    r = rng.random()
    if r < 0.2:
        s = src
    elif r < 0.4 and len(src) >= 2:             # merge two adjacent dims
        i = rng.randrange(len(src) - 1)
        s = src[:i] + [src[i] * src[i + 1]] + src[i + 2:]
    elif r < 0.55 and src:                      # split a dim (by a divisor), or insert a 1
        i = rng.randrange(len(src))
        divs = [b for b in range(1, 5) if src[i] % b == 0] or [1]
        b = rng.choice(divs)
        s = src[:i] + [src[i] // b, b] + src[i + 1:]
    elif r < 0.7:                               # flatten a prefix / suffix
        i = rng.randint(0, len(src))
        s = ([_prod(src[:i])] + src[i:]) if rng.random() < 0.5 else (src[:i] + [_prod(src[i:])])
    elif r < 0.8:                               # one entry replaced
        s = list(src)
        ones = [i for i, v in enumerate(s) if v == 1]
        if ones and rng.random() < 0.5:         # a broadcast (size-1) dim expanded
            s[rng.choice(ones)] = rng.choice([1, 2, 4, 6])
        elif s:
            s[rng.randrange(len(s))] = draw_size(ctx)
    else:
        s = [rng.randint(0, 6) for _ in range(rng.randint(0, 4))]
    return s


def draw_ilist(ctx: _Ctx):
    rng = ctx.rng
    n = len(ctx.base) if rng.random() < 0.7 else rng.randint(0, 4)
    r = rng.random()
    if r < 0.35:
        p = list(range(n))
        rng.shuffle(p)
        return p
    if r < 0.75:
        return sorted(rng.sample(range(n), rng.randint(0, n))) if n else []
    return [rng.randint(-1, 4) for _ in range(rng.randint(0, 3))]


_DRAW = {"T": draw_tensor, "TList": draw_tlist, "i64": draw_int, "Dim": draw_size,
         "DList": draw_dlist, "IList": draw_ilist}
_ORDER = {"T": 0, "TList": 0, "DList": 1, "IList": 1, "Dim": 2, "i64": 2, "String": 3}


class Drawer:
    """Draws bindings for one lemma and checks them."""

    def __init__(self, lemma):
        self.lemma = lemma
        self.sorts, self.kinds = variable_sorts(lemma)
        self.lhs = parse_sexpr(lemma.lhs)
        self.rhs = parse_sexpr(lemma.rhs)
        self.when = [parse_sexpr(c) for c in lemma.when]
        self.trigger = [parse_sexpr(t) for t in lemma.trigger]
        matched = pattern_vars(self.lhs)
        for t in self.trigger:
            matched |= pattern_vars(t)
        self.matched = matched
        allv = set()
        for t in _texts(lemma):
            allv |= pattern_vars(t)
        missing = allv - set(self.sorts)
        if missing:
            raise TypeError(f"{lemma.name}: no sort inferred for {sorted(missing)}")
        # variables that occur in the right side but nowhere egglog could bind them
        unbound = pattern_vars(self.rhs) - matched
        for c in lemma.when:
            unbound -= pattern_vars(c)
        if unbound:
            raise TypeError(f"{lemma.name}: right-side variables {sorted(unbound)} are never bound")
        self.order = sorted(allv, key=lambda v: (_ORDER[self.sorts[v]], v))
        # (Cons x r) of two variables: often drawn as one list split into head and rest (not for
        # walk lemmas: they step through lists that other lemmas built)
        self.conses = {}
        for t in (_texts(lemma) if lemma.ruleset != "walks" else ()):
            _cons_pairs(parse_sexpr(t), self.conses)
        self.conses = {x: r for x, r in self.conses.items()
                       if self.sorts.get(x) == "T" and self.sorts.get(r) == "TList" and x != r}
        # i64 variables that are tensor dims (concat axis, ...): often a dim of the base shape
        self.dimvars = set()
        for t in _texts(lemma):
            _dim_vars(parse_sexpr(t), self.dimvars)
        # index variables of picks along the last dim (pick, mpick, a loss's targets): often drawn
        # as integer indices of the picked tensor's leading shape, mostly in range
        self.indexes = []
        _index_vars(self.lhs, self.indexes, self.sorts)
        self.places = []
        _place_vars(self.lhs, self.places, self.sorts)
        # conditions of where (and of its walk over parts): often drawn as bool tensors
        self.conds = set()
        for t in _texts(lemma):
            _cond_vars(parse_sexpr(t), self.conds)
        # tensors whose dtype the condition names ((= "bool" (dtype b))): often drawn of it
        self.dtypes = {}
        for c in self.when:
            _dtype_vars(c, self.dtypes)
        # op variables a condition names ((fcast op)): the named ops it may hold, never a call
        self.named_ops = set().union(*(pattern_vars(c) for c in self.when)) if self.when else set()
        # String variables of the left side a condition computes ((= op (clampop n)), (= p (replace
        # op ...))): often left undrawn, so the condition binds them as it would an unmatched one
        self.derived = {c[1].name for c in self.when if isinstance(c, tuple) and c[0] == Var("=")
                        and isinstance(c[1], Var) and self.sorts.get(c[1].name) == "String"
                        and isinstance(c[2], tuple) and c[2][0].name in terms.PRIMITIVES} & self.matched

    def draw(self, rng: random.Random) -> dict:
        ctx = _Ctx(rng)
        env = {}
        for x, r in self.conses.items():
            if x in env or r in env or rng.random() < 0.2:
                continue
            whole = draw_tlist(ctx)
            if whole:
                env[x], env[r] = whole[0], whole[1:]
        for v in self.order:
            if v in env:
                continue
            s = self.sorts[v]
            if s == "String" and self.kinds.get(v) == "count" and ctx.shapes and rng.random() < 0.7:
                env[v] = repr(float(math.prod(rng.choice(ctx.shapes))))    # the size of a drawn tensor
            elif s == "String" and self.kinds.get(v) in CALLS and v not in self.named_ops and rng.random() < 0.3:
                env[v] = rng.choice(CALLS[self.kinds[v]])         # a call of a pointwise op
            elif s == "String" and self.kinds.get(v, "const") == "const" and rng.random() < 0.3 and any(
                    isinstance(w, str) and ":" in w for w in env.values()):
                # the constant of a drawn op text ("norm:2.0" -> "2.0"): an op and its order drawn alike
                env[v] = rng.choice([w for w in env.values() if isinstance(w, str) and ":" in w]).partition(":")[2]
            elif s == "String":
                env[v] = rng.choice(string_domain(self.kinds.get(v, "const")))
            elif v in self.dimvars and ctx.base and rng.random() < 0.3:
                env[v] = rng.randrange(len(ctx.base))
            else:
                env[v] = _DRAW[s](ctx)
        for v in self.derived:
            if rng.random() < 0.5:
                env.pop(v)
        for v, name in self.dtypes.items():
            if isinstance(env.get(v), torch.Tensor) and rng.random() < 0.7:
                x = env[v]
                env[v] = (x > 0) if name == "bool" else x.to(getattr(torch, name, x.dtype))
        for v in self.conds:
            if v in env and rng.random() < 0.9:
                x = env[v]
                env[v] = [p > 0 for p in x] if isinstance(x, list) else x > 0
        for x, i in self.indexes:
            if rng.random() < 0.4:
                continue
            try:
                xv = evaluate(x, env)
            except EvalError:
                continue
            if isinstance(xv, list) and xv:        # a list of parts picked alike (map_mpick)
                xv = xv[0]
            if not isinstance(xv, torch.Tensor) or xv.dim() == 0:
                continue
            w = xv.shape[-1]
            lo, hi = (0, w) if rng.random() < 0.7 else (-2, w + 2)
            if hi > lo:
                env[i] = torch.randint(lo, hi, tuple(xv.shape[:-1]),
                                       generator=torch.Generator().manual_seed(rng.randrange(2**31)))
        for v, i, off, n in self.places:
            if rng.random() < 0.3:
                continue
            try:
                vv, nv = evaluate(v, env), evaluate(n, env)
                ov = 0 if off is None else evaluate(off, env)
            except EvalError:
                continue
            if not isinstance(vv, torch.Tensor) or not isinstance(nv, int) or not isinstance(ov, int):
                continue
            lo, hi = (ov, ov + nv) if rng.random() < 0.7 else (ov - 2, ov + nv + 2)
            if hi > lo:
                env[i] = torch.randint(lo, hi, tuple(vv.shape),
                                       generator=torch.Generator().manual_seed(rng.randrange(2**31)))
        return env

    def accepts(self, env: dict) -> bool:
        """The condition (egglog-style: unmatched variables are bound by equalities) and trigger
        (its terms defined, its relations true: the e-graph holds a relation only where it is)."""
        for t in self.trigger:
            try:
                if evaluate(t, env) is False:
                    return False
            except EvalError:
                return False
        return _holds(self.when, self.matched - (self.derived - set(env)), env)


_PICKS = ("pick", "mpick", "tpick", "tcount", "map_mpick")


def _index_vars(e, out: list, sorts: dict):
    """(picked term, index variable) of every pick along the last dim in a parsed term."""
    if not isinstance(e, tuple):
        return
    if e[0] in tuple(Var(p) for p in _PICKS) and isinstance(e[2], Var) and sorts.get(e[2].name) == "T":
        out.append((e[1], e[2].name))
    for a in e[1:]:
        _index_vars(a, out, sorts)


# placements (values, index, [offset,] width): indices of the values' shape in [offset, offset + width)
_PLACES = {"place": (1, 2, None, 3), "tplace": (1, 2, None, 4), "mplace": (1, 2, 3, 4)}


def _place_vars(e, out: list, sorts: dict):
    """(values term, index variable, offset term or None, width term) of every placement in a parsed term."""
    if not isinstance(e, tuple):
        return
    spec = _PLACES.get(e[0].name) if isinstance(e[0], Var) else None
    if spec and isinstance(e[spec[1]], Var) and sorts.get(e[spec[1]].name) == "T":
        out.append((e[spec[0]], e[spec[1]].name, None if spec[2] is None else e[spec[2]], e[spec[3]]))
    for a in e[1:]:
        _place_vars(a, out, sorts)


_CONDS = {"where": 1, "zip_where": 2}     # the condition's position in the term (head at 0)


def _cond_vars(e, out: set, cond=False):
    """Variables that are where conditions (tensors, or lists of them, with Cons heads and rests)."""
    if isinstance(e, Var):
        if cond:
            out.add(e.name)
        return
    if not isinstance(e, tuple):
        return
    head = e[0].name
    for i, a in enumerate(e[1:], 1):
        _cond_vars(a, out, _CONDS.get(head) == i or (cond and head == "Cons"))


def _dtype_vars(c, out: dict):
    """v -> the dtype name of a condition (= "name" (dtype v)) (either order) on a variable."""
    if not (isinstance(c, tuple) and c[0] == Var("=") and len(c) == 3):
        return
    for a, b in ((c[1], c[2]), (c[2], c[1])):
        if (isinstance(a, str) and isinstance(b, tuple) and b[0] == Var("dtype") and isinstance(b[1], Var)
                and isinstance(getattr(torch, a, None), torch.dtype)):
            out[b[1].name] = a


def _cons_pairs(e, out: dict):
    """x -> r for every (Cons x r) of two variables in a parsed term."""
    if not isinstance(e, tuple):
        return
    if e[0] == Var("Cons") and len(e) == 3 and isinstance(e[1], Var) and isinstance(e[2], Var):
        out.setdefault(e[1].name, e[2].name)
    for a in e[1:]:
        _cons_pairs(a, out)


def _dim_vars(e, out: set):
    """Variables in a constructor's dim argument positions (terms.DIM_ARGS)."""
    if not isinstance(e, tuple):
        return
    for i in terms.DIM_ARGS.get(e[0].name, ()):
        if i + 1 < len(e) and isinstance(e[i + 1], Var):
            out.add(e[i + 1].name)
    for a in e[1:]:
        _dim_vars(a, out)


def same(a, b, rtol=1e-6, atol=1e-8) -> str | None:
    """None if a and b agree in value (NaN-aware), shape and dtype; else why not."""
    if isinstance(a, list) or isinstance(b, list):
        if not (isinstance(a, list) and isinstance(b, list)):
            return f"list vs {type(b).__name__}"
        if len(a) != len(b):
            return f"lists of length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            why = same(x, y, rtol, atol)
            if why:
                return f"[{i}]: {why}"
        return None
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape:
            return f"shape {list(a.shape)} vs {list(b.shape)}"
        if a.dtype != b.dtype:
            return f"dtype {a.dtype} vs {b.dtype}"
        if a.dtype == torch.bool or not (a.is_floating_point() or a.is_complex()):
            return None if torch.equal(a, b) else "values differ"
        ok = torch.allclose(a.double(), b.double(), rtol=rtol, atol=atol, equal_nan=True)
        return None if ok else f"values differ (max |diff| {(a.double() - b.double()).abs().nan_to_num(0).max():.3g})"
    if a != b and not (isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, rel_tol=rtol)):
        return f"{a!r} vs {b!r}"
    return None


def describe(env: dict) -> str:
    out = []
    for k, v in sorted(env.items()):
        if isinstance(v, torch.Tensor):
            out.append(f"{k}: {str(v.dtype).replace('torch.', '')}{list(v.shape)}")
        elif isinstance(v, list) and v and isinstance(v[0], torch.Tensor):
            out.append(f"{k}: [" + ", ".join(f"{str(t.dtype).replace('torch.', '')}{list(t.shape)}" for t in v) + "]")
        else:
            out.append(f"{k}={v!r}")
    return "{" + ", ".join(out) + "}"


# ----------------------------------------------------------------------------- conditions

def _match(pat, val, env) -> bool:
    if isinstance(pat, Var):
        if pat.name in env:
            return same(env[pat.name], val) is None
        env[pat.name] = val
        return True
    if not isinstance(pat, tuple):
        return isinstance(val, type(pat)) and val == pat
    head = pat[0].name
    if head in ("Cons", "DCons", "ICons"):
        return isinstance(val, list) and len(val) > 0 and _match(pat[1], val[0], env) and _match(pat[2], val[1:], env)
    if head in ("Nil", "DNil", "INil"):
        return isinstance(val, list) and not val
    if head == "DLit":
        return isinstance(val, int) and _match(pat[1], val, env)
    return False


def _holds(conds, bound, env) -> bool:
    """Conditions in egglog's way: an equality with one unmatched variable binds it."""
    bound = set(bound)
    for c in conds:
        free = pattern_vars(c) - bound
        if free:
            if not _bind(c, free, env):
                return False
            bound |= free
            continue
        try:
            if not bool(evaluate(c, env)):
                return False
        except EvalError:
            return False
    return True


def _bind(c, free, env) -> bool:
    if not (isinstance(c, tuple) and c[0] == Var("=") and len(free) == 1):
        raise TypeError(f"cannot bind {sorted(free)} from {terms.to_sexpr(c)}")
    v = next(iter(free))
    for pat, other in ((c[1], c[2]), (c[2], c[1])):
        if pattern_vars(other) & free:
            continue
        if pat == Var(v) or (isinstance(pat, tuple) and pat[0] == Var("DLit") and pat[1] == Var(v)):
            try:
                val = evaluate(other, env)
            except EvalError:
                return False
            if isinstance(val, bool) or not isinstance(val, (int, str)):   # i64 / Dim, or a String
                return False
            env[v] = val
            return True
    raise TypeError(f"cannot bind {v} from {terms.to_sexpr(c)}")
