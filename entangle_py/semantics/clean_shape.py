"""The shape and dtype of a clean term (a certificate over G_d tensors), computed from its leaves
alone, independent of the e-graph's shape facts (check/outputs.py checks each certificate with it)."""
from __future__ import annotations

import math

from entangle_py.semantics.sexpr import Var
from entangle_py.semantics.terms import EvalError


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
    if head in ("rsum", "rmax", "rmean", "concat"):
        ps = parts(a[0])
        check(ps, "no parts")
        shape, dtype = ps[0]
        check(all(dt == dtype for _, dt in ps), f"parts of dtypes {[dt for _, dt in ps]}")
        check(all(len(s) == len(shape) for s, _ in ps), "parts of different ranks")
        if head != "concat":
            check(all(all(same(x, y) for x, y in zip(s, shape)) for s, _ in ps), "parts of different shapes")
            check(head != "rmean" or "float" in dtype, f"a mean over ranks of {dtype} parts")
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


