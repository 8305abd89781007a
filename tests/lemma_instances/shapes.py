"""Checks of the shape rules (entangle_py/lemmas/shapes.py): terms over random leaves, with the facts the rules
must derive for them (see entangle_py/lemmas/_instances/__init__.py for the two forms)."""
from __future__ import annotations

from lemma_instances.common import concat_parts, dlist, ilist, repeat, tensor

@repeat(3)
def elementwise_terms(rng):
    x = tensor(rng, rng.randint(1, 4), rng.randint(1, 4))
    return ('(unary "exp" x)', {"x": x})


@repeat(3)
def concat_terms(rng):
    d = rng.randrange(3)
    l = concat_parts(rng, 3, d, parts=rng.randint(1, 4))
    names = [f"p{i}" for i in range(len(l))]
    lst = "(Nil)"
    for n in reversed(names):
        lst = f"(Cons {n} {lst})"
    return (f"(concat {lst} {d})", dict(zip(names, l)))


@repeat(3)
def slice_terms(rng):
    x = tensor(rng, 6, rng.randint(1, 4))
    s = rng.randint(0, 5)
    e = rng.randint(s, 6)
    return (f"(slice x 0 (DLit {s}) (DLit {e}))", {"x": x})


@repeat(3)
def mm_terms(rng):
    return ("(mm a b)", {"a": tensor(rng, 2, 3), "b": tensor(rng, 3, 5)})


@repeat(3)
def transpose_terms(rng):
    return ("(transpose x 0 2)", {"x": tensor(rng, 2, 3, 4)})


@repeat(2)
def view_terms(rng):
    return ("(view x (DCons (DLit 6) (DCons (DLit 4) (DNil))))", {"x": tensor(rng, 2, 3, 4)})


@repeat(6)
def reduce_terms(rng):
    nd = rng.randint(1, 4)
    x = tensor(rng, *[rng.randint(1, 5) for _ in range(nd)])
    dims = sorted(rng.sample(range(nd), rng.randint(1, nd)))
    lst = "(INil)"
    for d in reversed(dims):
        lst = f"(ICons {d} {lst})"
    op = rng.choice(["sum", "mean", "amax"])
    return (f'(reduce "{op}" x {lst} {rng.randint(0, 1)})', {"x": x})


@repeat(3)
def layernorm_terms(rng):
    x = tensor(rng, rng.randint(1, 4), rng.randint(1, 4), 3)
    return ('(layernorm x w b 1 "1e-05")', {"x": x, "w": tensor(rng, 3), "b": tensor(rng, 3)})



@repeat(3)
def scalar_terms(rng):
    x = tensor(rng, *[rng.randint(1, 4) for _ in range(rng.randint(0, 3))])
    return (f'(scalar "{rng.choice(["mul", "add", "div"])}" x "0.5")', {"x": x})


@repeat(3)
def softmax_terms(rng):
    nd = rng.randint(1, 3)
    return (f"(softmax x {rng.randrange(nd)})", {"x": tensor(rng, *[rng.randint(1, 4) for _ in range(nd)])})


def _rank_sum_terms(op):
    @repeat(3)
    def gen(rng):
        shape = [rng.randint(1, 4) for _ in range(rng.randint(0, 3))]
        names = [f"p{i}" for i in range(rng.randint(1, 4))]
        lst = "(Nil)"
        for n in reversed(names):
            lst = f"(Cons {n} {lst})"
        return (f"({op} {lst})", {n: tensor(rng, *shape) for n in names})
    return gen


rsum_terms = _rank_sum_terms("rsum")
rmax_terms = _rank_sum_terms("rmax")
rlse_terms = _rank_sum_terms("rlse")
rmean_terms = _rank_sum_terms("rmean")


def binary_terms(rng):
    """Operands of one shape: every dim derived.  Broadcasting operands (a size-1 dim, a missing
    leading dim): nothing wrong derived -- no ndim unless both agree, no dim where they differ --
    and every dim where they agree is derived."""
    for _ in range(3):
        shape = [rng.randint(1, 4) for _ in range(rng.randint(0, 3))]
        yield (f'(binary "{rng.choice(["add", "mul", "maximum"])}" a b)', {"a": tensor(rng, *shape),
                                                                          "b": tensor(rng, *shape)})
    for sa, sb in [((3, 1), (3, 4)), ((1, 4), (3, 4)), ((2, 1, 4), (2, 3, 1)), ((4,), (3, 4)), ((3, 4), (4,)),
                   ((), (2, 3)), ((1,), (5,))]:
        a, b = tensor(rng, *sa), tensor(rng, *sb)
        if len(sa) == len(sb):    # the ndim and the dims where they agree; not the size-1 one
            facts = [f"(= (ndim t) {len(sa)})"]
            facts += [f"(= (dim t {i}) (DLit {u}))" if u == v else f"(= (dim t {i}) (DLit 1))"
                      for i, (u, v) in enumerate(zip(sa, sb))]
        else:    # not the shorter operand's ndim, nor its dims at its own indices (aligned from the right)
            short = sa if len(sa) < len(sb) else sb
            facts = [f"(= (ndim t) {len(short)})"] + [f"(= (dim t {i}) (DLit {w}))" for i, w in enumerate(short)]
        yield ('(binary "add" a b)', {"a": a, "b": b}, facts)


def binary_bcast_terms(rng):
    """Operands of one ndim broadcasting along size-1 dims (on either side, or both): every dim."""
    for sa, sb in [((3, 1), (3, 4)), ((1, 4), (3, 4)), ((2, 1, 4), (2, 3, 1)), ((1, 1, 6), (4, 3, 6)),
                   ((4, 3, 6), (1, 1, 6)), ((1,), (5,)), ((1, 1), (1, 1))]:
        yield ('(binary "mul" a b)', {"a": tensor(rng, *sa), "b": tensor(rng, *sb)})
    for _ in range(3):
        out = [rng.randint(1, 4) for _ in range(rng.randint(1, 4))]
        a, b = ([rng.choice((1, v)) for v in out] for _ in range(2))
        yield ('(binary "sub" a b)', {"a": tensor(rng, *a), "b": tensor(rng, *b)})


def dlen_terms(rng):
    """Shape lists: (dlen s) and (dlast s), right and wrong values, and the empty list (no dlast)."""
    lists = [[], [6], [6, 4], [2, 3, 4], [rng.randint(1, 9) for _ in range(rng.randint(1, 5))]]
    for s in lists:
        facts = [f"(= (dlen t) {n})" for n in range(len(s) + 2)]
        facts += [f"(= (dlast t) (DLit {v}))" for v in sorted(set(s) | {0, 1})]
        yield (dlist(s), {}, facts)


def view_dat_terms(rng):
    """The view's shape list: (dat s i) for every i, right and wrong values (shape-view derives dat)."""
    for s in ([6, 4], [2, 3, 4], [24]):
        S = dlist(s)
        facts = [f"(= (dat {S} {i}) (DLit {v}))" for i in range(len(s) + 1) for v in sorted(set(s))]
        yield (f"(view x {S})", {"x": tensor(rng, 2, 3, 4)}, facts)


def view_and_dat_terms(rng):
    yield from view_terms(rng)
    yield from view_dat_terms(rng)


@repeat(6)
def ilist_query_terms(rng):
    """(reduce op x dims k): for each dim i of x, (ihas dims i) and (ibelow dims i) with every
    value in range, and (ilen dims)."""
    nd = rng.randint(1, 4)
    x = tensor(rng, *[rng.randint(1, 5) for _ in range(nd)])
    dims = sorted(rng.sample(range(nd), rng.randint(1, nd)))
    D = ilist(dims)
    facts = [f"(= (ihas {D} {i}) {h})" for i in range(nd) for h in (0, 1)]
    facts += [f"(= (ibelow {D} {i}) {b})" for i in range(nd) for b in range(len(dims) + 1)]
    facts += [f"(= (ilen {D}) {n})" for n in range(len(dims) + 2)]
    return (f'(reduce "{rng.choice(["sum", "mean", "amax"])}" x {D} {rng.randint(0, 1)})', {"x": x}, facts)


def dtype_terms(rng):
    """Data movement over float, int and bool leaves: the term's dtype is its input's."""
    import torch
    for dt in (torch.float64, torch.int64, torch.bool, torch.float32):
        x = tensor(rng, 2, 3, 4).to(dt)
        y = tensor(rng, 2, 3, 4).to(dt)
        facts = [f'(= (dtype t) "{n}")' for n in ("float64", "int64", "bool", "float32")]
        for term in ("(view x (DCons (DLit 6) (DCons (DLit 4) (DNil))))",
                     "(expand x (DCons (DLit 2) (DCons (DLit 2) (DCons (DLit 3) (DCons (DLit 4) (DNil))))))",
                     "(slice x 1 (DLit 0) (DLit 2))", "(transpose x 0 2)", f"(permute x {ilist([2, 0, 1])})",
                     "(concat (Cons x (Cons y (Nil))) 1)", "(rmax (Cons x (Cons y (Nil))))", "(zpad x 1 2 1)"):
            yield term, {"x": x, "y": y}, facts
        # a pick (gather along the last dim) and a lookup (rows) move values: the dtype is x's
        i = torch.tensor([[0, 3], [1, 2], [3, 3]]).expand(2, 3, 2).contiguous()
        yield "(pick x i)", {"x": x, "i": i[:, :, :1].squeeze(-1)}, facts
        yield "(take x i)", {"x": x, "i": torch.tensor([1, 0, 1])}, facts
        if dt != torch.bool:       # a sum over ranks of bools is undefined
            yield "(rsum (Cons x (Cons y (Nil))))", {"x": x, "y": y}, facts
        if dt.is_floating_point:   # a log-sum-exp over ranks of ints too
            yield "(rlse (Cons x (Cons y (Nil))))", {"x": x, "y": y}, facts


from entangle_py.lemmas.shapes import FLOAT_UNARY  # noqa: E402


def dtype_float_arith_terms(rng):
    """Float arithmetic of one dtype (its dtype, derived) and of mixed or int dtypes (none derived,
    or torch's: the check compares any derived dtype with torch's)."""
    import torch
    for dt, dt2 in ((torch.float64, torch.float64), (torch.float32, torch.float32), (torch.float16, torch.float16),
                    (torch.float32, torch.float64), (torch.int64, torch.int64), (torch.bool, torch.bool),
                    (torch.float32, torch.int64)):
        x = tensor(rng, 2, 3).to(dt)
        y = tensor(rng, *rng.choice([[2, 3], [3], [], [1, 3]])).to(dt2)
        # one float dtype: exactly its dtype fact holds; otherwise no fact is claimed (a dtype
        # derived by another rule is still compared with torch's)
        facts = ([f'(= (dtype t) "{n}")' for n in ("float64", "float32", "float16", "int64")]
                 if dt == dt2 and dt.is_floating_point else [])
        for op in ("sum", "mean", "amax"):
            if dt.is_floating_point or op != "mean":
                yield f'(reduce "{op}" x (ICons {rng.randint(0, 1)} (INil)) {rng.randint(0, 1)})', {"x": x}, facts
        for op in ("add", "sub", "mul", "div"):
            if dt != torch.bool or op in ("add", "mul"):
                yield f'(binary "{op}" x y)', {"x": x, "y": y}, facts
        for op in ("add", "sub", "rsub", "mul", "div"):
            if dt != torch.bool:
                yield f'(scalar "{op}" x "{rng.choice(["2.0", "0.5", "inf"])}")', {"x": x}, facts
        for op in FLOAT_UNARY:     # the unary math ops (ints: torch's own, where it has them)
            if dt.is_floating_point or (op in ("neg", "abs", "relu") and dt != torch.bool):
                yield f'(unary "{op}" x)', {"x": x}, facts
        if dt == dt2 and dt != torch.bool:      # matrix products (of one dtype; torch has none of bools)
            w = tensor(rng, 3, rng.randint(1, 3)).to(dt2)
            yield "(mm x w)", {"x": x, "w": w}, facts
            yield "(bmm x w)", {"x": x.unsqueeze(0), "w": w.unsqueeze(0)}, facts
            yield "(matmul x w)", {"x": x.expand(2, 2, 3), "w": w.expand(2, 3, w.shape[1])}, facts


def binary_0d_terms(rng):
    """A 0-D operand on either side (any op, masks and backward ops too): the other operand's shape."""
    import torch
    for op in ("mul", "add", "div", "tanh_backward", "gelu_backward", "masked_fill:0.0", "threshold_backward:0.0", "lt"):
        shape = [rng.randint(1, 4) for _ in range(rng.randint(0, 3))]
        a, b = tensor(rng, ), tensor(rng, *shape)
        if op.startswith("masked_fill"):
            yield f'(binary "{op}" a m)', {"a": a, "m": b > 0}
            yield f'(binary "{op}" b m)', {"b": b, "m": torch.tensor(True)}
            continue
        yield f'(binary "{op}" a b)', {"a": a, "b": b}
        yield f'(binary "{op}" b a)', {"a": a, "b": b}


def where_terms(rng):
    """Operands of one shape: every dim derived.  Broadcasting operands (a size-1 dim, a missing
    dim): the widest operand's ndim, and nothing wrong derived -- no dim where they differ."""
    for _ in range(3):
        shape = [rng.randint(1, 4) for _ in range(rng.randint(0, 3))]
        yield ("(where c a b)", {"c": tensor(rng, *shape) > 0, "a": tensor(rng, *shape), "b": tensor(rng, *shape)})
    for sc, sa, sb in [((3, 1), (3, 4), (3, 4)), ((3, 4), (1, 4), (3, 4)), ((3, 4), (3, 4), (3, 1)),
                       ((4,), (3, 4), (3, 4)), ((3, 4), (3, 4), ()), ((2, 3), (1,), (2, 3))]:
        c, a, b = tensor(rng, *sc) > 0, tensor(rng, *sa), tensor(rng, *sb)
        if len(sc) == len(sa) == len(sb):
            facts = [f"(= (ndim t) {len(sc)})"]
            facts += [f"(= (dim t {i}) (DLit {u}))" if u == v == w else f"(= (dim t {i}) (DLit 1))"
                      for i, (u, v, w) in enumerate(zip(sc, sa, sb))]
        else:     # the widest operand's ndim; not the shorter one's, nor its dims at its own indices
            short = min((sc, sa, sb), key=len)
            facts = [f"(= (ndim t) {max(len(sc), len(sa), len(sb))})", f"(= (ndim t) {len(short)})"]
            facts += [f"(= (dim t {i}) (DLit {w}))" for i, w in enumerate(short)]
        yield ("(where c a b)", {"c": c, "a": a, "b": b}, facts)


def where_bcast_terms(rng):
    """Operands of other ndims and size-1 dims, broadcast: every dim derived is torch's (a causal
    mask [s, s] over scores [b, h, s, s] with a 0-D fill; a [s, 1] column against [h, 1, s]; an
    empty dim)."""
    import torch
    for sc, sa, sb in [((5, 5), (2, 3, 5, 5), ()), ((4, 1), (2, 1, 4), (1, 4)), ((), (3, 1), (2, 1, 4)),
                       ((1,), (2, 3), (3,)), ((2, 1, 3), (3,), (1, 4, 1)), ((0, 1), (2, 1, 1, 3), (1,))]:
        c, a, b = tensor(rng, *sc) > 0, tensor(rng, *sa), tensor(rng, *sb)
        out = torch.where(c, a, b).shape
        # a dim of 1 is not derived (every operand having it 1 is not looked for): not asked
        facts = [f"(= (dim t {i}) (DLit {w}))" for i, w in enumerate(out) if w != 1]
        facts += [f"(= (dim t {i}) (DLit 1))" for i, w in enumerate(out) if w != 1]
        yield ("(where c a b)", {"c": c, "a": a, "b": b}, facts)
