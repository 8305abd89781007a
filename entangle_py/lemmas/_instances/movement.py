"""Instances of the movement lemmas (entangle_py/lemmas/movement.py): slice / concat / transpose / view algebra."""
from __future__ import annotations

import math

from entangle_py.lazy import torch

from entangle_py.lemmas._instances import concat_parts, dlist, ilist, repeat, tensor


@repeat(6)
def _transpose_concat(rng):
    nd = rng.randint(2, 4)
    d = rng.randrange(nd)
    a, b = rng.sample(range(nd), 2)
    l = concat_parts(rng, nd, d)
    return {"x": l[0], "r": l[1:], "d": d, "a": min(a, b), "b": max(a, b)}


def _with(cond):
    """Instances of _transpose_concat filtered to those satisfying ``cond``."""
    def gen(rng):
        n = 0
        while n < 6:
            inst = next(_transpose_concat(rng))
            if cond(inst):
                n += 1
                yield inst
    return gen


def _without(cond):
    return _with(lambda i: not cond(i))


@repeat(6)
def slice_first(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    l = concat_parts(rng, nd, d, parts=rng.randint(1, 6))
    n = l[0].shape[d]
    s = rng.randint(0, n - 1)
    e = rng.randint(s, n)
    return {"x": l[0], "r": l[1:], "d": d, "s": s, "e": e, "n": n}


@repeat(6)
def slice_rest(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    l = concat_parts(rng, nd, d, parts=rng.randint(2, 6))
    n = l[0].shape[d]
    total = sum(p.shape[d] for p in l)
    s = rng.randint(n, total - 1)
    e = rng.randint(s, total)
    return {"x": l[0], "y": l[1], "r": l[2:], "d": d, "s": s, "e": e, "n": n}


@repeat(4)
def slice_straddling(rng):
    """A slice that crosses the first part's end: neither slice lemma may fire."""
    d = 0
    l = concat_parts(rng, 1, d, parts=3)
    n = l[0].shape[0]
    return {"x": l[0], "y": l[1], "r": l[2:], "d": d, "s": n - 1 if n > 0 else 0, "e": n + 1, "n": n}


@repeat(6)
def full_slice(rng):
    nd = rng.randint(1, 3)
    x = tensor(rng, *[rng.randint(1, 5) for _ in range(nd)])
    d = rng.randrange(nd)
    return {"x": x, "d": d, "n": x.shape[d]}


@repeat(4)
def partial_slice(rng):
    x = tensor(rng, rng.randint(2, 5), 3)
    return {"x": x, "d": 0, "n": x.shape[0] - 1}


@repeat(4)
def single(rng):
    nd = rng.randint(1, 3)
    return {"x": tensor(rng, *[rng.randint(1, 4) for _ in range(nd)]), "d": rng.randrange(nd)}


@repeat(4)
def transpose_twice(rng):
    nd = rng.randint(2, 4)
    a, b = sorted(rng.sample(range(nd), 2))
    return {"x": tensor(rng, *[rng.randint(1, 4) for _ in range(nd)]), "a": a, "b": b}


@repeat(4)
def map_transpose(rng):
    nd = rng.randint(2, 3)
    a, b = sorted(rng.sample(range(nd), 2))
    l = concat_parts(rng, nd, 0)
    return {"x": l[0], "r": l[1:], "a": a, "b": b}


def _view_last_instance(rng, ok=True):
    """A concat along the last dim, viewed so that only the leading dims change."""
    lead = [rng.randint(1, 3) for _ in range(rng.randint(1, 3))]
    total = 1
    for x in lead:
        total *= x
    l = [tensor(rng, *lead, n) for n in [rng.randint(1, 4) for _ in range(rng.randint(1, 6))]]
    n = sum(p.shape[-1] for p in l)
    new_lead = [total] if len(lead) > 1 else [1, total]
    s = new_lead + [n if ok else n + 1]
    return {"l": l, "d": len(lead), "s": s, "k": len(s)}


@repeat(6)
def view_last(rng):
    return _view_last_instance(rng)


@repeat(3)
def view_last_bad(rng):
    inst = _view_last_instance(rng)
    inst["d"] = 0   # concat along a leading dim: the condition must reject it
    return inst


@repeat(4)
def map_view_last(rng):
    l = [tensor(rng, 2, 3, n) for n in (2, 4)]
    return {"x": l[0], "r": l[1:], "s": [6, 99], "n": 3, "v": 2}


@repeat(4)
def view_rsum(rng):
    shape = [rng.randint(1, 3) for _ in range(3)]
    l = [tensor(rng, *shape) for _ in range(rng.randint(1, 8))]
    return {"l": l, "s": [shape[0] * shape[1], shape[2]]}


@repeat(3)
def map_view(rng):
    l = [tensor(rng, 2, 3) for _ in range(3)]
    return {"x": l[0], "r": l[1:], "s": [3, 2]}


@repeat(3)
def dset_last_lists(rng):
    s = [rng.randint(1, 9) for _ in range(rng.randint(2, 4))]
    return {"x": s[0], "y": s[1], "r": s[2:], "v": 7}


def _cover_case(rng, ok=True):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    shape = [rng.randint(1, 4) for _ in range(nd)]
    shape[d] = rng.randint(3, 9)
    x = tensor(rng, *shape)
    a, b, c = sorted(rng.sample(range(shape[d] + 1), 3))
    if not ok:   # an empty piece: the condition must refuse it (it would only make churn)
        b = a
    return {"x": x, "d": d, "a": a, "b": b, "c": c}


def _tiling(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    shape = [rng.randint(1, 4) for _ in range(nd)]
    shape[d] = rng.randint(1, 9)
    x = tensor(rng, *shape)
    cuts = sorted(rng.sample(range(1, shape[d]), rng.randint(0, min(7, shape[d] - 1))))
    bounds = [0, *cuts, shape[d]]
    return x, d, bounds


@repeat(8)
def slice_tiles(rng):
    """x and its slices along d from 0 to its end (1-8 uneven pieces): l tiles x."""
    x, d, bounds = _tiling(rng)
    return {"x": x, "d": d, "l": [x.narrow(d, a, b - a) for a, b in zip(bounds, bounds[1:])]}


def stile_terms(rng):
    """x's slices along d (the parts of one concat, so in the e-graph): (stile x d a l) for each
    tail l of them, a its start, holds where l runs to x's end without a gap; not for a tail
    past a gap (a piece left out), nor for a first piece alone that stops before the end."""
    for gap in (False, True, False, True):
        x, d, bounds = _tiling(rng)
        spans = list(zip(bounds, bounds[1:]))
        if gap:
            spans = spans[:1] + spans[2:] if len(spans) > 2 else [(0, 1)] if x.shape[d] > 1 else spans
        pieces = [f"(slice x {d} (DLit {a}) (DLit {b}))" for a, b in spans]
        facts = [f"(stile x {d} {spans[k][0]} {_cons_of(pieces[k:])})" for k in range(len(pieces))]
        if len(pieces) > 1:
            facts.append(f"(stile x {d} 0 {_cons_of(pieces[:1])})")
        yield f"(concat {_cons_of(pieces)} {d})", {"x": x}, facts


def _cons_of(items) -> str:
    out = "(Nil)"
    for p in reversed(items):
        out = f"(Cons {p} {out})"
    return out


@repeat(8)
def cover(rng):
    return _cover_case(rng)


@repeat(4)
def cover_empty(rng):
    return _cover_case(rng, ok=False)


@repeat(6)
def flatten(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    l = concat_parts(rng, nd, d, parts=rng.randint(2, 8))
    j = rng.randint(1, len(l) - 1)
    return {"l1": l[:j], "z": l[j], "r": l[j + 1:], "d": d}


@repeat(8)
def flatten_last(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    l = concat_parts(rng, nd, d, parts=rng.randint(2, 8))
    return {"x": l[0], "l2": l[1:], "d": d}


def _group_head(rng, k):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    l = concat_parts(rng, nd, d, parts=rng.randint(k + 1, 8))
    return {**dict(zip("xyzw", l[:k + 1])), "r": l[k + 1:], "d": d}


@repeat(6)
def group_head2(rng):
    return _group_head(rng, 2)


def concat2_terms(rng):
    """(concat2 a0 a1 d) holds for the parts of a two-part concat along d; not for a part and a
    tensor of another rank, which no concat joins."""
    for parts in (2, 3):
        nd = rng.randint(1, 3)
        d = rng.randrange(nd)
        l = concat_parts(rng, nd, d, parts=parts)
        env = {f"a{i}": x for i, x in enumerate(l)}
        env["b"] = tensor(rng, *([2] * (nd + 1)))
        names = " ".join(f"(Cons a{i}" for i in range(parts)) + " (Nil)" + ")" * parts
        facts = [f"(concat2 a0 b {d})"] + ([f"(concat2 a0 a1 {d})"] if parts == 2 else [])
        yield f"(concat {names} {d})", env, facts


@repeat(6)
def group_tail(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    l = concat_parts(rng, nd, d, parts=rng.randint(3, 8))
    return {"x": l[0], "y": l[1], "z": l[2], "r": l[3:], "d": d}


@repeat(4)
def lappend(rng):
    l = [tensor(rng, 2) for _ in range(rng.randint(1, 6))]
    return {"x": l[0], "l": l[1:], "r": [tensor(rng, 3)]}


@repeat(4)
def transpose_rsum(rng):
    shape = [rng.randint(1, 4) for _ in range(3)]
    a, b = sorted(rng.sample(range(3), 2))
    return {"l": [tensor(rng, *shape) for _ in range(rng.randint(1, 8))], "a": a, "b": b}


@repeat(6)
def permute_rsum(rng):
    nd = rng.randint(1, 4)
    shape = [rng.randint(0, 3) for _ in range(nd)]
    return {"l": [tensor(rng, *shape) for _ in range(rng.randint(1, 8))], "p": rng.sample(range(nd), nd)}


def _parts_on(rng, shape, d, parts=None):
    """Concat parts of a tensor of ``shape`` along d (uneven)."""
    out = []
    for n in sizes_on(rng, parts or rng.randint(1, 6)):
        s = list(shape)
        s[d] = n
        out.append(tensor(rng, *s))
    return out


def sizes_on(rng, k, lo=1, hi=4):
    return [rng.randint(lo, hi) for _ in range(k)]


def _total(l, d):
    return sum(p.shape[d] for p in l)


@repeat(6)
def view_view(rng):
    x = tensor(rng, 2, 3, 4)
    s1 = rng.choice([[6, 4], [24], [2, 12], [4, 3, 2]])
    s2 = rng.choice([[3, 8], [2, 3, 4], [24, 1]])
    return {"x": x, "s1": s1, "s2": s2}


@repeat(6)
def view_self(rng):
    nd = rng.randint(1, 4)
    x = tensor(rng, *[rng.randint(1, 4) for _ in range(nd)])
    return {"x": x, "s": list(x.shape), "n": nd}


@repeat(4)
def view_not_self(rng):
    x = tensor(rng, 2, 3, rng.randint(2, 4))
    return {"x": x, "s": [3, 2, x.shape[2]], "n": 3}


@repeat(4)
def expand_not_self(rng):
    """Counterexamples: a broadcast dim expanded (same rank, another shape)."""
    x = tensor(rng, 2, 1, rng.randint(2, 4))
    return {"x": x, "s": [2, rng.randint(2, 4), x.shape[2]], "n": 3}


def _view_keep(rng, where):
    """A concat along d viewed so that dims [0..d] (prefix) or [d..] (suffix) are kept."""
    nd = rng.randint(2, 4)
    d = rng.randrange(nd)
    base = [rng.randint(1, 3) for _ in range(nd)]
    l = _parts_on(rng, base, d)
    full = list(base)
    full[d] = _total(l, d)
    if where == "prefix":
        rest = full[d + 1:]
        prod = 1
        for v in rest:
            prod *= v
        s = full[:d + 1] + (rng.choice([[prod], [1, prod], rest]) if rest else [])
    else:
        lead = full[:d]
        prod = 1
        for v in lead:
            prod *= v
        s = (rng.choice([[prod], [prod, 1], lead]) if lead else []) + full[d:]
    return {"l": l, "d": d, "s": s, "n": nd, "m": len(s), "e": d + len(s) - nd}


@repeat(6)
def _view_keep_prefix(rng):
    return _view_keep(rng, "prefix")


@repeat(6)
def _view_keep_suffix(rng):
    return _view_keep(rng, "suffix")


@repeat(4)
def _view_merge_into_axis(rng):
    """The concat axis merged with the dim before it: no keep/split/merge lemma may fire."""
    a, c = rng.randint(2, 3), rng.randint(1, 3)
    l = _parts_on(rng, [a, 1, c], 1, parts=2)
    n = _total(l, 1)
    return {"l": l, "d": 1, "s": [a * n, c], "n": 3, "m": 2, "e": 0}


def _regroup_instance(rng):
    """A concat along d (1-8 parts, uneven multiples of a unit, now and then an empty one; size-1
    dims) viewed with the dims before d kept and the region [d:] regrouped, d outermost: the
    region's unit a * R (R the dims after d) cut into f rows of the view's dim d, each of a random
    factorisation of a * R / f (split, merged, or both).  s[d] != t (keep-prefix's case)."""
    while True:
        nd = rng.randint(1, 4)
        d = rng.randrange(nd)
        before = [rng.randint(1, 3) for _ in range(d)]
        after = [rng.randint(1, 3) for _ in range(nd - 1 - d)]
        unit = rng.randint(1, 4)
        ks = [0 if rng.random() < 0.1 else rng.randint(1, 3) for _ in range(rng.randint(1, 8))]
        if not sum(ks):
            continue
        region = unit
        for v in after:
            region *= v
        f = rng.choice([k for k in range(1, region + 1) if region % k == 0])
        rest, factors = region // f, []
        for _ in range(rng.randint(0 if rest == 1 else 1, 3)):
            g = rng.choice([k for k in range(1, rest + 1) if rest % k == 0]) if len(factors) < 2 else rest
            factors.append(g)
            rest //= g
        if rest > 1:
            factors.append(rest)
        t = unit * sum(ks)
        p = sum(ks) * f
        if p == t:
            continue
        l = [tensor(rng, *before, k * unit, *after) for k in ks]
        return {"l": l, "d": d, "s": before + [p] + factors, "t": t, "p": p}


@repeat(12)
def _view_regroup(rng):
    return _regroup_instance(rng)


def _view_regroup_bad(rng):
    """The axis merged into the dim before it (no prefix kept); s[d] = t (keep-prefix's); every part
    empty along d (t = 0)."""
    for inst in _view_merge_into_axis(rng):
        yield {**inst, "t": _total(inst["l"], 1), "p": inst["s"][1]}
    l = _parts_on(rng, [2, 3], 0, parts=3)
    yield {"l": l, "d": 0, "s": [_total(l, 0), 3], "t": _total(l, 0), "p": _total(l, 0)}
    yield {"l": [tensor(rng, 0, 4), tensor(rng, 0, 4)], "d": 0, "s": [2, 0, 2], "t": 0, "p": 2}


_DTYPES = ("float64", "float32", "int64", "bool")


def _factor(rng, n, k):
    """n as a product of k factors (size-1 ones where it runs out; [] for k = 0, n = 1)."""
    out = []
    for _ in range(k - 1):
        f = rng.choice([f for f in range(1, n + 1) if n % f == 0]) if n else rng.choice([0, 1])
        out.append(f)
        n = n // f if f else n
    return out + [n] if k else out


def _regroup_prefix_instance(rng):
    """A regroup instance (_regroup_instance) whose dims before d are regrouped too: their product
    cut into j != d factors (split, merged, size-1 dims added or dropped), the parts of one random
    dtype."""
    while True:
        inst = _regroup_instance(rng)
        d = inst["d"]
        before = inst["s"][:d]
        q = 1
        for v in before:
            q *= v
        j = rng.choice([k for k in range(0, 4) if k != d and (k or q == 1)])
        dt = getattr(torch, rng.choice(_DTYPES))
        l = [x.to(dt) for x in inst["l"]]
        s = _factor(rng, q, j) + inst["s"][d:]
        j = max(i for i in range(len(s)) if math.prod(s[:i]) == q)     # past size-1 dims (spos)
        if j != d and s[j] != inst["t"]:
            return {**inst, "l": l, "s": s, "j": j, "q": q, "p": s[j]}


@repeat(12)
def _view_regroup_prefix(rng):
    return _regroup_prefix_instance(rng)


def _view_regroup_prefix_bad(rng):
    """The axis merged into the dim before it ([a, n, c] -> [a * n, c]: the first dim's product not
    the view's); the prefix kept (j = d: view-concat-regroup's); the axis kept whole (p = t: the
    keep lemmas'); the prefix's product found only past a dim that mixes the axis in; t = 0."""
    for inst in _view_merge_into_axis(rng):
        a = inst["l"][0].shape[0]
        yield {**inst, "j": 1, "q": a, "t": _total(inst["l"], 1), "p": inst["s"][0]}
    l = _parts_on(rng, [2, 3, 1], 1, parts=3)
    t = _total(l, 1)
    yield {"l": l, "d": 1, "s": [2, 3 * t], "j": 1, "q": 2, "t": t, "p": 3 * t}                # j = d
    yield {"l": l, "d": 1, "s": [1, 2, t], "j": 2, "q": 2, "t": t, "p": t}                     # p = t
    yield {"l": l, "d": 1, "s": [2 * t, 3], "j": 1, "q": 2, "t": t, "p": 2 * t}                # 2 != 2 t
    yield {"l": [tensor(rng, 2, 0, 4), tensor(rng, 2, 0, 4)], "d": 1, "s": [1, 2, 2, 0], "j": 2, "q": 2, "t": 0, "p": 2}


@repeat(6)
def map_view_scale(rng):
    inst = _regroup_prefix_instance(rng) if rng.random() < 0.5 else {**_regroup_instance(rng), "j": None}
    l, d = inst["l"], inst["d"]
    j = d if inst["j"] is None else inst["j"]
    return {"x": l[0], "r": l[1:], "s": inst["s"], "d": d, "j": j, "t": inst["t"], "m": l[0].shape[d],
            "p": inst["s"][j]}


def map_view_scale_bad(rng):
    """A part whose rows do not fill whole rows of the view: [3 | 1] rows of 2 viewed [2, 4] (the
    first part ends in the middle of row 1); and t = 0."""
    x = tensor(rng, 3, 2)
    yield {"x": x, "r": [tensor(rng, 1, 2)], "s": [2, 4], "d": 0, "j": 0, "t": 4, "m": 3, "p": 2}
    # [6 | 2] columns viewed [2, 4]: the first part ends inside the second row of 4
    yield {"x": tensor(rng, 2, 6), "r": [tensor(rng, 2, 2)], "s": [2, 2, 4], "d": 1, "j": 1, "t": 8, "m": 6, "p": 2}
    # ... and with the dims before merged ([1, 2, 6 | 2] viewed [2, 2, 4], the axis at j = 1)
    yield {"x": tensor(rng, 1, 2, 6), "r": [tensor(rng, 1, 2, 2)], "s": [2, 2, 4], "d": 2, "j": 1, "t": 8, "m": 6,
           "p": 2}
    yield {"x": tensor(rng, 0, 2), "r": [], "s": [0, 1, 2], "d": 0, "j": 0, "t": 0, "m": 0, "p": 0}


@repeat(4)
def map_view_at(rng):
    x = tensor(rng, 2, rng.randint(1, 3), 3)
    return {"x": x, "r": [tensor(rng, 2, 2, 3)], "s": [2, 99, 3], "d": 1, "j": 1, "v": x.shape[1]}


@repeat(4)
def dset(rng):
    s = [rng.randint(1, 9) for _ in range(rng.randint(2, 4))]
    i = rng.randrange(1, len(s))
    return {"a": s[0], "r": s[1:], "i": i, "v": 7}


@repeat(6)
def _slice_other(rng):
    nd = rng.randint(2, 3)
    d, k = rng.sample(range(nd), 2)
    base = [rng.randint(2, 5) for _ in range(nd)]
    l = _parts_on(rng, base, d)
    a = rng.randint(0, base[k] - 1)
    b = rng.randint(a, base[k])
    return {"l": l, "d": d, "k": k, "a": a, "b": b}


@repeat(3)
def _slice_same(rng):
    l = _parts_on(rng, [4, 3], 0, parts=2)
    return {"l": l, "d": 0, "k": 0, "a": 0, "b": 1}


@repeat(4)
def map_slice(rng):
    l = _parts_on(rng, [3, 4], 0)
    return {"x": l[0], "r": l[1:], "k": 1, "a": 1, "b": 3}


@repeat(6)
def _permute_concat_raw(rng):
    nd = rng.randint(2, 4)
    d = rng.randrange(nd)
    p = list(range(nd))
    rng.shuffle(p)
    return {"l": _parts_on(rng, [rng.randint(1, 3) for _ in range(nd)], d), "d": d, "p": p, "j": p.index(d)}


@repeat(3)
def _permute_concat_bad(rng):
    inst = next(_permute_concat_raw(rng))
    inst["j"] = (inst["j"] + 1) % len(inst["p"]) if len(inst["p"]) > 1 else 5
    return inst


@repeat(6)
def permute_slice(rng):
    nd = rng.randint(1, 4)
    x = tensor(rng, *[rng.randint(1, 4) for _ in range(nd)])
    d = rng.randrange(nd)
    a = rng.randint(0, x.shape[d])
    p = rng.sample(range(nd), nd)
    return {"x": x, "d": d, "a": a, "b": rng.randint(a, x.shape[d]), "p": p, "j": p.index(d)}


@repeat(3)
def permute_slice_bad(rng):
    """The slice kept at its old position (or moved wrong) after a permute that moves it."""
    inst = next(permute_slice(rng))
    inst = {**inst, "x": tensor(rng, 2, 3, 4), "d": 0, "a": 0, "b": 1, "p": [1, 2, 0]}
    return {**inst, "j": rng.choice([0, 1])}


def _transpose_slice(rng, where):
    nd = rng.randint(2, 4)
    x = tensor(rng, *[rng.randint(1, 4) for _ in range(nd)])
    a, b = rng.sample(range(nd), 2)         # either order: transpose(x, a, b) = transpose(x, b, a)
    others = [i for i in range(nd) if i not in (a, b)]
    d = {"a": a, "b": b}.get(where) if where != "other" else (rng.choice(others) if others else None)
    if d is None:
        return None
    s = rng.randint(0, x.shape[d])
    l = [x] + [tensor(rng, *x.shape) for _ in range(rng.randint(0, 3))]      # the ranks' terms of a sum
    return {"l": l, "d": d, "s": s, "e": rng.randint(s, x.shape[d]), "a": a, "b": b}


def transpose_slice(where):
    """A slice of a sum over ranks along dim a, b or another dim, then transposed (a, b)."""
    @repeat(6)
    def gen(rng):
        return _transpose_slice(rng, where)
    gen.__name__ = f"transpose_slice_{where}"
    return gen


def transpose_slice_bad(where):
    """The slice's dim is not the one the lemma is for."""
    wrong = {"a": ("b", "other"), "b": ("a", "other"), "other": ("a", "b")}[where]

    @repeat(4)
    def gen(rng):
        return _transpose_slice(rng, rng.choice(wrong))
    gen.__name__ = f"transpose_slice_bad_{where}"
    return gen


@repeat(4)
def map_permute(rng):
    l = _parts_on(rng, [2, 3, 4], 1)
    return {"x": l[0], "r": l[1:], "p": [2, 0, 1]}


def _transpose_view(rng, where):
    if where == "prefix":      # a < b both kept at the front; the tail is reshaped
        n = rng.randint(3, 4)
        x = tensor(rng, *[rng.randint(1, 3) for _ in range(n)])
        a, b = sorted(rng.sample(range(n - 1), 2))
        tail = list(x.shape[b + 1:])
        prod = 1
        for v in tail:
            prod *= v
        s = list(x.shape[:b + 1]) + rng.choice([[prod], tail, [1, prod]])
    else:                      # a < b both in the kept tail; the front is reshaped
        n = rng.randint(3, 4)
        x = tensor(rng, *[rng.randint(1, 3) for _ in range(n)])
        k = rng.randint(2, n - 1)            # kept tail length
        lead = list(x.shape[:n - k])
        prod = 1
        for v in lead:
            prod *= v
        front = rng.choice([[prod], lead, [prod, 1]])
        s = front + list(x.shape[n - k:])
        m = len(s)
        a, b = sorted(rng.sample(range(m - k, m), 2))
    return {"x": x, "s": s, "a": a, "b": b, "va": s[a], "vb": s[b], "n": x.dim(), "m": len(s)}


@repeat(6)
def transpose_view_prefix(rng):
    return _transpose_view(rng, "prefix")


@repeat(6)
def transpose_view_suffix(rng):
    return _transpose_view(rng, "suffix")


@repeat(3)
def transpose_view_mixing(rng):
    """transpose(view(x [2,3,4], [6,4]), 0, 1): the view merged dim 0 with dim 1."""
    x = tensor(rng, 2, 3, rng.randint(2, 4))
    s = [6, x.shape[2]]
    return {"x": x, "s": s, "a": 0, "b": 1, "va": s[0], "vb": s[1], "n": 3, "m": 2}


def _transpose_merged(rng, side, one=None):
    """x [.., A, B, C, ..]: the view merges B,C (side 'right') or A,B ('left') and the transpose
    swaps the merged dim with its neighbour.  The merged dims the lemma requires not to be 1 are
    drawn from 2..3 (``one``: that dim, 'first' or 'second' of the merged pair, is 1 instead)."""
    n = rng.randint(3, 5)
    sizes = [rng.randint(1, 3) for _ in range(n)]
    a = rng.randrange(n - 2)
    b = a + 1
    at = {"first": b if side == "right" else a}
    at["second"] = at["first"] + 1
    for which in ("first", "second") if side == "right" else ("first",):
        sizes[at[which]] = rng.randint(2, 3)
    if one is not None:
        sizes[at[one]] = 1
    x = tensor(rng, *sizes)
    sh = list(x.shape)
    if side == "right":        # s[a] = x[a], s[b] = x[b]*x[b+1]
        s = sh[:b] + [sh[b] * sh[b + 1]] + sh[b + 2:]
    else:                      # s[a] = x[a]*x[a+1], s[b] = x[a+2]
        s = sh[:a] + [sh[a] * sh[a + 1]] + sh[a + 2:]
    return {"x": x, "s": s, "a": a, "b": b, "va": s[a], "vb": s[b], "n": n, "m": len(s)}


@repeat(6)
def transpose_merged_right(rng):
    return _transpose_merged(rng, "right")


@repeat(6)
def transpose_merged_left(rng):
    return _transpose_merged(rng, "left")


# a size-1 dim merged: the view drops it, and transpose-view-front / -back or the other merged
# lemma state the same transpose (two readings of one view would build ever longer transposes)
def transpose_merged_right_one(rng):
    return [_transpose_merged(rng, "right", one) for one in ("first", "second")]


def transpose_merged_left_one(rng):
    return [_transpose_merged(rng, "left", "first")]


@repeat(6)
def scalar_view(rng):
    x = tensor(rng, 2, 3, 2)
    return {"op": rng.choice(["mul", "div", "add"]), "x": x, "s": rng.choice([[6, 2], [3, 4], [12]]), "c": "0.5"}


@repeat(4)
def iscalar_view(rng):
    x = torch.randint(-5, 6, (2, 3, 2), generator=torch.Generator().manual_seed(rng.randrange(2**31)))
    return {"op": rng.choice(["add", "sub", "mul", "lt", "ge"]), "x": x, "s": rng.choice([[6, 2], [3, 4], [12]]),
            "c": rng.randint(-3, 3)}


@repeat(4)
def unary_view(rng):
    x = tensor(rng, 2, 3, 2)
    return {"op": rng.choice(["exp", "tanh", "gelu"]), "x": x, "s": rng.choice([[6, 2], [3, 4], [12]])}


def _xr(gen):
    """Instances binding the concat parts as (Cons x r): lemmas match only concrete part lists, so
    that an unresolved helper list is never mapped over again (views can form cycles)."""
    def out(rng):
        for inst in gen(rng):
            inst = dict(inst)
            l = inst.pop("l")
            yield {**inst, "x": l[0], "r": l[1:]}
    return out


# bindings with the concat parts as (Cons x r)
view_keep_prefix, view_keep_suffix, view_merge_into_axis = map(_xr, (_view_keep_prefix, _view_keep_suffix,
                                                                     _view_merge_into_axis))
view_regroup_prefix, view_regroup_prefix_bad = map(_xr, (_view_regroup_prefix, _view_regroup_prefix_bad))
view_regroup, view_regroup_bad, slice_other, slice_same = map(_xr, (_view_regroup, _view_regroup_bad, _slice_other,
                                                                    _slice_same))
permute_concat, permute_concat_bad = map(_xr, (_permute_concat_raw, _permute_concat_bad))

# transpose of a concat, by where the concat axis d lies relative to the swapped dims a < b
transpose_concat_d_is_a = _with(lambda i: i["d"] == i["a"])
transpose_concat_d_not_a = _without(lambda i: i["d"] == i["a"])
transpose_concat_d_is_b = _with(lambda i: i["d"] == i["b"])
transpose_concat_d_not_b = _without(lambda i: i["d"] == i["b"])
transpose_concat_d_other = _with(lambda i: i["d"] not in (i["a"], i["b"]))
transpose_concat_d_swapped = _with(lambda i: i["d"] in (i["a"], i["b"]))


def lappend_nil(rng):
    return [{"r": [tensor(rng, 2)]}]


def map_view_last_bad(rng):
    return [{"x": tensor(rng, 2, 3), "r": [], "s": [6], "n": 3, "v": 3}]


def map_view_at_bad(rng):
    return [{"x": tensor(rng, 2, 3), "r": [], "s": [2, 3], "d": 1, "j": 1, "v": 2}]


def transpose_merged_left_bad(rng):
    return [{"x": tensor(rng, 2, 3, 4), "s": [2, 12], "a": 0, "b": 1, "va": 2, "vb": 12, "n": 3, "m": 2}] \
        + transpose_merged_left_one(rng)


def transpose_merged_right_bad(rng):
    return list(transpose_view_mixing(rng)) + transpose_merged_right_one(rng)


# ----------------------------------------------------------------------------- rule checks

_VIEWS = [((2, 3, 4), s) for s in ([6, 4], [2, 12], [2, 3, 4], [24], [2, 3, 2, 2], [1, 2, 3, 4], [4, 3, 2],
                                  [2, 1, 3, 4])]
_VIEWS += [((1, 2, 1), [2]), ((1, 2, 1), [1, 2, 1]), ((3, 1, 2), [3, 2]), ((2, 2), [2, 2, 1]), ((4,), [2, 2])]


def view_kept_dims_terms(rng):
    """(view x s) with every (vpfx x s i) / (vsfx x s i) up to past the end, true or not."""
    for shape, s in _VIEWS:
        S = dlist(s)
        facts = [f"(vpfx x {S} {i})" for i in range(len(s) + 2)] + [f"(vsfx x {S} {i})" for i in range(len(s) + 2)]
        yield (f"(view x {S})", {"x": tensor(rng, *shape)}, facts)
    # an expand's dims against its operand's (the same shape, or a broadcast dim grown)
    for shape, s in (([2, 1, 3], [2, 1, 3]), ([2, 1, 3], [2, 4, 3]), ([1, 3], [5, 2, 3])):
        S = dlist(s)
        yield (f"(expand x {S})", {"x": tensor(rng, *shape)}, [f"(vpfx x {S} {i})" for i in range(len(s) + 2)])


def ipos_terms(rng):
    """A permutation p: (ipos p d) = k for every d (one past the last too) and every k."""
    perms = [[0], [1, 0], [2, 0, 1, 3], [3, 1, 0, 2]]
    for _ in range(2):
        p = list(range(rng.randint(2, 5)))
        rng.shuffle(p)
        perms.append(p)
    for p in perms:
        yield (ilist(p), {}, [f"(= (ipos t {d}) {k})" for d in range(len(p) + 1) for k in range(len(p) + 1)])


@repeat(3)
def permute_terms(rng):
    return ("(permute x (ICons 2 (ICons 0 (ICons 1 (INil)))))", {"x": tensor(rng, 2, 3, 4)})


def _view_keeping(rng, keep_tail: bool):
    """x [A, B, F] viewed so the last dim stays (or not), and a bias y [F] (or [1])."""
    k = 1
    tail = [rng.randint(1, 4) for _ in range(k)]
    lead = [rng.randint(1, 3) for _ in range(rng.randint(1, 3))]
    x = tensor(rng, *lead, *tail)
    ys = [1 if rng.random() < 0.3 else v for v in tail]
    prod = 1
    for v in lead:
        prod *= v
    if keep_tail:
        s = rng.choice([[prod], lead[::-1], [1, prod]]) + tail
    else:                                   # the last dim merged with the one before it
        s = lead[:-1] + [lead[-1] * tail[0]] + tail[1:]
        if tail[0] == 1:
            return None
    return {"op": rng.choice(["add", "mul", "sub", "div"]), "x": x, "y": tensor(rng, *ys), "s": s, "n": x.dim()}


@repeat(8)
def binary_view_bcast(rng):
    return _view_keeping(rng, True)


@repeat(4)
def binary_view_bcast_merged(rng):
    return _view_keeping(rng, False)


# ----------------------------------------------------------------------------- expand of a concat

def _expand_concat_instance(rng, keep_axis=True):
    """Parts of a concat along d; s expands the concat (leading dims added, size-1 dims broadcast),
    keeping its size on d (keep_axis) or broadcasting a size-1 axis (not keep_axis)."""
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    base = [rng.choice([1, 1, 2, 3]) for _ in range(nd)]
    sizes = sizes_on(rng, rng.randint(1, 5), lo=0 if keep_axis else 1, hi=3) if keep_axis else [1]
    l = []
    for k in sizes:
        s = list(base)
        s[d] = k
        l.append(tensor(rng, *s))
    full = list(base)
    full[d] = _total(l, d)
    lead = [rng.randint(1, 3) for _ in range(rng.randint(0, 2))]
    s = lead + [v if (v != 1 or i == d) else rng.randint(1, 3) for i, v in enumerate(full)]
    if not keep_axis:
        s[len(lead) + d] = rng.randint(2, 4)
    return {"x": l[0], "r": l[1:], "s": s, "d": d, "n": nd, "m": len(s), "j": d + len(lead)}


@repeat(8)
def expand_concat(rng):
    return _expand_concat_instance(rng)


@repeat(4)
def expand_concat_axis(rng):
    """A size-1 concat axis broadcast by the expand: the parts cannot be expanded alike."""
    return _expand_concat_instance(rng, keep_axis=False)


@repeat(4)
def map_expand_at(rng):
    x = tensor(rng, 2, rng.randint(1, 3), 1)
    return {"x": x, "r": [tensor(rng, 2, 2, 1)], "s": [2, 99, 4], "d": 1, "j": 1, "v": x.shape[1]}


def map_expand_at_bad(rng):
    return [{"x": tensor(rng, 2, 3, 1), "r": [], "s": [2, 3, 4], "d": 1, "j": 1, "v": 2}]


def _expand_split_instance(rng, ok=True):
    """x with a size-1 dim (at j of the expanded shape s, after leading dims) expanded to p = k q
    there; t: s with q there (a smaller expand of x).  Not ok: the dim of x is not 1, p is not a
    multiple of q, or q is not below p."""
    nd = rng.randint(1, 3)
    shape = [rng.choice([1, 2, 3]) for _ in range(nd)]
    i = rng.randrange(nd)
    shape[i] = 1
    lead = [rng.randint(1, 3) for _ in range(rng.randint(0, 2))]
    s = lead + [v if v != 1 else rng.randint(1, 3) for v in shape]
    j = len(lead) + i
    q, k = rng.randint(1, 3), rng.randint(2, 4)
    p = q * k
    how = None if ok else rng.choice(["dim", "multiple", "same"])
    if how == "dim":      # x is not broadcast there: its size is p already
        shape[i] = p
    elif how == "multiple":
        q = rng.randint(2, 3)
        p = q * k + 1
    elif how == "same":
        p = q
    s[j] = p
    t = list(s)
    t[j] = q
    x = tensor(rng, *shape)
    return {"x": x, "s": s, "t": t, "j": j, "q": q, "p": p, "k": p // q, "n": nd, "m": len(s)}


@repeat(8)
def expand_split(rng):
    return _expand_split_instance(rng)


@repeat(6)
def expand_split_bad(rng):
    return _expand_split_instance(rng, ok=False)


@repeat(4)
def repl_more(rng):
    return {"x": tensor(rng, *[rng.randint(1, 3) for _ in range(rng.randint(0, 3))]), "k": rng.randint(1, 5)}


def repl_zero(rng):
    return [{"x": tensor(rng, 2, 3), "k": 0}]


@repeat(4)
def expand_terms(rng):
    shape = [rng.choice([1, 2, 3]) for _ in range(rng.randint(0, 3))]
    lead = [rng.randint(1, 3) for _ in range(rng.randint(0, 2))]
    s = lead + [v if v != 1 else rng.randint(1, 3) for v in shape]
    return (f"(expand x {dlist(s)})", {"x": tensor(rng, *shape)})


# ----------------------------------------------------------------------------- concat interchange

def _interchange(rng, same=False, last=False):
    """Two concats along e of parts lining up on e, to be concatenated along d (d == e: same;
    last: d is the last dim)."""
    nd = rng.randint(1, 3) if same else rng.randint(2, 4)
    e = rng.randrange(nd - 1) if last else rng.randrange(nd)
    d = e if same else nd - 1 if last else rng.choice([i for i in range(nd) if i != e])
    base = [rng.randint(1, 3) for _ in range(nd)]
    es = sizes_on(rng, rng.randint(1, 4), lo=0, hi=3)
    da, db = rng.randint(0, 3), rng.randint(0, 3)
    l1, l2 = [], []
    for k in es:
        for lst, w in ((l1, da), (l2, db)):
            s = list(base)
            s[e] = k
            if not same:
                s[d] = w
            lst.append(tensor(rng, *s))
    return {"l1": l1, "l2": l2, "d": d, "e": e}


def _ab(inst):
    l1, l2 = inst.pop("l1"), inst.pop("l2")
    return {**inst, "a": l1[0], "r1": l1[1:], "b": l2[0], "r2": l2[1:]}


def _more(rng, inst, k):
    """k - 2 more concats along e of parts lining up with l1's (uneven widths along d, some empty),
    as the tensors r3; q: the first column's blocks after a and b (the trigger's list)."""
    d, e, l1 = inst["d"], inst["e"], inst["l1"]
    more = []
    for _ in range(k - 2):
        w = rng.randint(0, 3)
        parts = [tensor(rng, *[w if i == d else n for i, n in enumerate(p.shape)]) for p in l1]
        more.append(parts)
    return {**_ab(inst), "r3": [torch.cat(m, e) for m in more], "q": [m[0] for m in more]}


@repeat(8)
def concat_interchange(rng):
    return _ab(_interchange(rng))


def _abc(inst):
    """The third concat's parts as c r3, the ones after it r4."""
    r3 = inst.pop("r3")
    e = inst["e"]
    sizes = [int(p.shape[e]) for p in [inst["a"]] + inst["r1"]]
    third = list(torch.split(r3[0], sizes, e))
    return {**inst, "c": third[0], "r3": third[1:], "r4": r3[1:]}


@repeat(10)
def concat_interchange_more(rng):
    return _abc(_more(rng, _interchange(rng), rng.randint(3, 8)))


@repeat(6)
def zip_concat_fold(rng):
    """acc: the blocks of the first concats (one per part along e), b r2: the parts of the next
    concat along e, r: the concats after it."""
    inst = _more(rng, _interchange(rng), rng.randint(2, 6))
    acc = [torch.cat([a, b], inst["d"]) for a, b in zip([inst["a"]] + inst["r1"], [inst["b"]] + inst["r2"])]
    r3 = inst["r3"]
    if not r3:
        return None
    e = inst["e"]
    first = list(torch.split(r3[0], [int(p.shape[e]) for p in acc], e))
    return {"l": acc, "b": first[0], "r2": first[1:], "r": r3[1:], "d": inst["d"], "e": e}


@repeat(3)
def zip_concat_fold_nil(rng):
    inst = _interchange(rng)
    return {"l": inst["l1"], "d": inst["d"], "e": inst["e"]}


def _nest(inst):
    l2 = inst.pop("l2")
    return {**inst, "r": [torch.cat(l2, inst["e"])]}


@repeat(6)
def concat_nest(rng):
    return _nest(_interchange(rng, last=True))


def _nest_more(rng, last):
    """A concat along d (the last dim or not) of a concat along e and two or more tensors."""
    while True:
        inst = _interchange(rng)
        n = inst["l1"][0].dim()
        if (inst["d"] == n - 1) == last:
            break
    inst = _more(rng, inst, rng.randint(3, 6))
    return {"l1": [inst["a"]] + inst["r1"], "y": torch.cat([inst["b"]] + inst["r2"], inst["e"]), "z": inst["r3"][0],
            "r": inst["r3"][1:], "d": inst["d"], "e": inst["e"]}


@repeat(6)
def concat_nest_more(rng):
    return _nest_more(rng, last=False)


def concat_nest_more_bad(rng):
    """The same dim (d == e); the last dim (concat-nest's)."""
    for _ in range(3):
        inst = _nest_more(rng, last=False)
        yield {**inst, "d": inst["e"]}
        yield _nest_more(rng, last=True)


def concat_nest_bad(rng):
    """The same dim (d == e), or an outer concat along a dim that is not the last."""
    for _ in range(3):
        yield _nest(_interchange(rng, same=True))
    for _ in range(3):
        inst = _nest(_interchange(rng))
        if inst["d"] != inst["r"][0].dim() - 1:
            yield inst


def _nest_cst(rng, fit=True):
    """A concat_nest whose second part is a constant of the shape of a concat along e."""
    inst = _interchange(rng, last=True)
    l2 = inst.pop("l2")
    s = list(torch.cat(l2, inst["e"]).shape)
    if not fit:                 # one row more than the first concat's along e
        s[inst["e"]] += 1
    l1 = inst.pop("l1")
    return {**inst, "a": l1[0], "r1": l1[1:], "c": rng.choice(["-100", "0", "7"]), "s": s, "t": "int64"}


def _long(inst):
    return {**inst, "a": inst["a"].long(), "r1": [p.long() for p in inst["r1"]]}


@repeat(6)
def concat_nest_cst(rng):
    return _long(_nest_cst(rng))


@repeat(3)
def concat_nest_cst_bad(rng):
    return _long(_nest_cst(rng, fit=False))


@repeat(4)
def zip_concat(rng):
    inst = _interchange(rng)
    l1, l2 = inst.pop("l1"), inst.pop("l2")
    return {**inst, "a": l1[0], "r1": l1[1:], "b": l2[0], "r2": l2[1:]}


def zip_concat_misaligned(rng):
    return [{"a": tensor(rng, 2, 3), "r1": [], "b": tensor(rng, 2, 2), "r2": [], "d": 0, "e": 1}]


@repeat(3)
def concat_interchange_same(rng):
    return _ab(_interchange(rng, same=True))


def _misalign(rng, inst):
    """b r2 regrouped: the second concat's first two parts joined, or its first part cut in two
    (its parts no longer line up with a r1's)."""
    e, parts = inst["e"], [inst["b"]] + inst["r2"]
    if len(parts) > 1:
        parts = [torch.cat(parts[:2], e)] + parts[2:]
    else:
        parts = [parts[0], parts[0].narrow(e, 0, 0)] if parts[0].shape[e] == 0 else \
            list(torch.split(parts[0], [1, parts[0].shape[e] - 1], e))
    return {**inst, "b": parts[0], "r2": parts[1:]}


def concat_interchange_more_bad(rng):
    """The same dim (d == e); parts that do not line up along e."""
    for _ in range(3):
        inst = _abc(_more(rng, _interchange(rng), rng.randint(3, 5)))
        yield {**inst, "d": inst["e"]}
    for _ in range(3):
        yield _misalign(rng, _abc(_more(rng, _interchange(rng), rng.randint(3, 5))))


@repeat(4)
def map_ccol(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    l = concat_parts(rng, nd, rng.randrange(nd))
    return {"x": l[0], "r": l[1:], "d": d}


def _ccol_pair(rng):
    """Columns (each already the concat of 1-3 blocks along d) and blocks lining up with them on e."""
    inst = _interchange(rng)
    d, e = inst["d"], inst["e"]
    cols = []
    for a in inst["l1"]:
        cols.append([a] + [tensor(rng, *[rng.randint(0, 2) if i == d else n for i, n in enumerate(a.shape)])
                           for _ in range(rng.randint(0, 2))])
    return cols, inst["l2"], d, e


@repeat(6)
def zip_ccol(rng):
    cols, l2, d, e = _ccol_pair(rng)
    return {"la": cols[0], "r1": [torch.cat(c, d) for c in cols[1:]], "b": l2[0], "r2": l2[1:], "d": d, "e": e}


def zip_ccol_misaligned(rng):
    for inst in zip_ccol(rng):
        b = inst["b"]
        yield {**inst, "b": torch.cat([b, b.narrow(inst["e"], 0, min(1, b.shape[inst["e"]]))], inst["e"])
               if b.shape[inst["e"]] else tensor(rng, *[1 if i == inst["e"] else n for i, n in enumerate(b.shape)])}


@repeat(4)
def unccol(rng):
    cols, _, d, _ = _ccol_pair(rng)
    return {"la": cols[0], "r": [torch.cat(c, d) for c in cols[1:]], "d": d}


def ccol_terms(rng):
    """A column of 1-3 blocks: its dims but the axis are its first block's (true), not one more."""
    for _ in range(4):
        cols, _, d, e = _ccol_pair(rng)
        col = cols[0]
        env = {f"a{i}": x for i, x in enumerate(col)}
        t = f"(ccol {' '.join(f'(Cons a{i}' for i in range(len(col)))} (Nil){')' * len(col)} {d})"
        v = int(col[0].shape[e])
        yield t, env, [f"(= (dim t {e}) (DLit {v}))", f"(= (dim t {e}) (DLit {v + 1}))", f"(= (ndim t) {col[0].dim()})"]


def zip_concat_fold_misaligned(rng):
    for inst in zip_concat_fold(rng):
        yield _misalign(rng, inst)


def concat_nest_zip_terms(rng):
    """A concat_nest and a zip_concat_fold of concats along e whose parts line up with the first
    list's or not (regrouped): (zipok l1 l2 e e) true exactly when they do."""
    for k in range(4):
        inst = _abc(_more(rng, _interchange(rng), 3))
        if k % 2:
            inst = _misalign(rng, inst)
        l1, l2 = [inst["a"]] + inst["r1"], [inst["b"]] + inst["r2"]
        env = {**{f"a{i}": x for i, x in enumerate(l1)}, **{f"b{i}": x for i, x in enumerate(l2)}, "c": inst["r4"][0]
               if inst["r4"] else torch.cat([inst["c"]] + inst["r3"], inst["e"])}
        t1 = " ".join(f"(Cons a{i}" for i in range(len(l1))) + " (Nil)" + ")" * len(l1)
        t2 = " ".join(f"(Cons b{i}" for i in range(len(l2))) + " (Nil)" + ")" * len(l2)
        d, e = inst["d"], inst["e"]
        rest = f"(Cons (concat {t2} {e}) (Cons c (Nil)))"
        facts = [f"(zipok {t1} {t2} {e} {e})"]
        yield f"(concat_nest {t1} {rest} {d} {e})", env, facts
        yield f"(zip_concat_fold {t1} {rest} {d} {e})", env, facts


# ----------------------------------------------------------------------------- zero padding

@repeat(8)
def concat_zpad(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    l = concat_parts(rng, nd, d)
    x, r = l[0], l[1:]
    return {"x": x, "r": r, "d": d, "t": sum(p.shape[d] for p in l), "h": 0}


@repeat(3)
def concat_zpad_bad(rng):
    inst = next(concat_zpad(rng))
    inst["t"] += rng.choice((-1, 1))                  # not the concat's size along d
    return inst


@repeat(8)
def slice_zpad_inner(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    x = tensor(rng, *[rng.randint(0 if i == d else 1, 4) for i in range(nd)])
    m = x.shape[d]
    lo, hi = rng.randint(0, 3), rng.randint(0, 3)
    s = rng.randint(lo, lo + m)
    e = rng.randint(s, lo + m)
    return {"x": x, "d": d, "lo": lo, "hi": hi, "s": s, "e": e, "m": m}


@repeat(6)
def slice_zpad_outer(rng):
    """A slice reaching into the padding (before or after x), or an empty reversed one."""
    x = tensor(rng, rng.randint(1, 4), 2)
    m, lo, hi = x.shape[0], rng.randint(1, 3), rng.randint(1, 3)
    s, e = rng.choice([(lo - 1, lo + m), (lo, lo + m + 1), (lo - 1, lo), (lo + 1, lo)])
    return {"x": x, "d": 0, "lo": lo, "hi": hi, "s": s, "e": e, "m": m}


def slice_zpad_straddle(side):
    """A slice reaching into the padding on the left, the right or both sides."""
    @repeat(8)
    def gen(rng):
        nd = rng.randint(1, 3)
        d = rng.randrange(nd)
        x = tensor(rng, *[rng.randint(1, 4) for _ in range(nd)])
        m = x.shape[d]
        lo = rng.randint(1, 3) if side in ("left", "around") else rng.randint(0, 3)
        hi = rng.randint(1, 3) if side in ("right", "around") else rng.randint(0, 3)
        s = rng.randint(0, lo - 1) if side != "right" else rng.randint(lo, lo + m - 1)
        e = rng.randint(lo + m + 1, lo + m + hi) if side != "left" else rng.randint(lo + 1, lo + m)
        return {"x": x, "d": d, "lo": lo, "hi": hi, "s": s, "e": e, "m": m}
    return gen


@repeat(6)
def slice_zpad_apart(rng):
    """A slice of the padding alone, or inside x (the other lemma), or past the end."""
    x = tensor(rng, rng.randint(1, 4), 2)
    m, lo, hi = x.shape[0], rng.randint(1, 3), rng.randint(1, 3)
    s, e = rng.choice([(0, lo), (lo + m, lo + m + hi), (lo, lo + m), (0, lo + m + hi + 1)])
    return {"x": x, "d": 0, "lo": lo, "hi": hi, "s": s, "e": e, "m": m}


@repeat(4)
def zpad_none(rng):
    nd = rng.randint(1, 3)
    return {"x": tensor(rng, *[rng.randint(0, 4) for _ in range(nd)]), "d": rng.randrange(nd)}


def _zpad_pair(rng, gap=0, other=None, dtype=None):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    base = [rng.randint(1, 4) for _ in range(nd)]
    m1, m2 = rng.randint(0, 3), rng.randint(0, 3)
    l1 = rng.randint(0, 2)
    l2 = l1 + m1 + gap
    total = max(l1 + m1, l2 + m2) + rng.randint(0, 2)
    xs, ys = list(base), list(other if other is not None else base)
    xs[d], ys[d] = m1, m2
    x, y = tensor(rng, *xs), tensor(rng, *ys[:len(xs)]).to(dtype or torch.float64)
    return {"x": x, "y": y, "d": d, "l1": l1, "h1": total - l1 - m1, "l2": l2, "h2": total - l2 - m2,
            "m": m1, "n": nd, "t": "float64"}


@repeat(8)
def zpad_add_adjacent(rng):
    return _zpad_pair(rng)


@repeat(6)
def zpad_add_apart(rng):
    """Blocks with a gap or overlapping, or of another dtype."""
    kind = rng.choice(["gap", "overlap", "dtype"])
    if kind == "dtype":
        return _zpad_pair(rng, dtype=torch.float32)
    inst = _zpad_pair(rng, gap=1 if kind == "gap" else -1)
    if inst["l2"] < 0 or inst["h2"] < 0 or inst["h1"] < 0:
        return None
    return inst


def zpad_add_bsame_terms(rng):
    """(binary "add" (zpad x ...) (zpad y ...)): bsame of the two padded blocks on every prefix,
    alike, of another padded size, or broadcasting a size-1 dim."""
    for _ in range(4):
        inst = _zpad_pair(rng)
        if rng.random() < 0.5 and inst["n"] > 1:      # broadcast: one size-1 dim of x (not d)
            k = next(i for i in range(inst["n"]) if i != inst["d"])
            shape = list(inst["x"].shape)
            shape[k] = 1
            inst["x"] = tensor(rng, *shape)
        a, b = f"(zpad x {inst['d']} {inst['l1']} {inst['h1']})", f"(zpad y {inst['d']} {inst['l2']} {inst['h2']})"
        yield (f'(binary "add" {a} {b})', {"x": inst["x"], "y": inst["y"]},
               [f"(bsame {a} {b} {i})" for i in range(inst["n"] + 1)])


@repeat(6)
def map_zpad(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    l = concat_parts(rng, nd, d)
    lo = rng.randint(0, 3)
    t = lo + sum(p.shape[d] for p in l) + rng.randint(0, 3)
    return {"x": l[0], "r": l[1:], "d": d, "lo": lo, "t": t, "n": l[0].shape[d]}


@repeat(3)
def map_zpad_bad(rng):
    inst = next(map_zpad(rng))
    inst["n"] += 1                                    # not the part's size along d
    return inst


def zpad_terms(rng):
    for _ in range(3):
        nd = rng.randint(1, 3)
        d = rng.randrange(nd)
        yield (f"(zpad x {d} {rng.randint(0, 3)} {rng.randint(0, 3)})", {"x": tensor(rng, *[rng.randint(1, 4) for _ in range(nd)])})


@repeat(6)
def scalar_expand(rng):
    x = tensor(rng, rng.choice([1, 3]), 1)
    s = [2, x.shape[0], rng.choice([1, 4])] if rng.random() < 0.5 else [x.shape[0], 5]
    return {"op": rng.choice(["mul", "div", "add", "rsub", "gt"]), "x": x, "s": s, "c": rng.choice(["0.5", "-3.0"])}


@repeat(4)
def scalar_transpose(rng):
    return {"op": rng.choice(["mul", "div", "sub", "pow"]), "x": tensor(rng, 2, 3, 4), "a": 0,
            "b": rng.choice([1, 2]), "c": rng.choice(["2.0", "0.25"])}


@repeat(4)
def scalar_slice(rng):
    x = tensor(rng, 5, 3)
    a = rng.randint(0, 4)
    return {"op": rng.choice(["mul", "div", "add", "le"]), "x": x, "d": 0, "a": a, "b": rng.randint(a, 5), "c": "1.5"}


@repeat(6)
def binary_expand(rng):
    """x expanded to s, the other operand (either side) of shape s."""
    s = [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]
    xs = [1 if rng.random() < 0.5 else v for v in s][rng.randint(0, len(s)):]
    op = rng.choice(["add", "mul", "sub", "div", "tanh_backward", "maximum"])
    return {"op": op, "x": tensor(rng, *xs), "s": s, "y": tensor(rng, *s), "n": len(s)}


@repeat(4)
def binary_expand_bcast(rng):
    """The other operand broadcasts too (fewer dims, or a size-1 dim): the result would shrink."""
    y = tensor(rng, 3) if rng.random() < 0.5 else tensor(rng, 1, 3)
    return {"op": "add", "x": tensor(rng, 1, 3), "s": [2, 3], "y": y, "n": y.dim()}


def binary_expand_terms(rng):
    """(vpfx y s n) asked for the other operand of a binary op with an expand: true where y has s."""
    e = f"(expand x {dlist([2, 3])})"
    for ys in ([2, 3], [1, 3], [3]):
        env = {"x": tensor(rng, 1, 3), "y": tensor(rng, *ys)}
        for term in (f'(binary "add" {e} y)', f'(binary "mul" y {e})'):
            yield term, env, [f"(vpfx y {dlist([2, 3])} 2)"]


def _inverse(p):
    return [p.index(i) for i in range(len(p))]


def permute_inverse(n):
    """x permuted by a random p, then by p's inverse (q_i: where p puts dim i)."""
    @repeat(4)
    def gen(rng):
        p = list(range(n))
        rng.shuffle(p)
        return {"x": tensor(rng, *[rng.randint(1, 3) for _ in range(n)]), "p": p, "n": n,
                **{f"q{i}": v for i, v in enumerate(_inverse(p))}}
    return gen


def permute_not_inverse(n):
    """p permuted by p again, or by a q that is not its inverse (a 3-cycle is not its own inverse)."""
    def gen(rng):
        for _ in range(3):
            p = list(range(n))
            rng.shuffle(p)
            q = list(p) if len(set(map(tuple, (p, _inverse(p))))) == 2 else p[1:] + p[:1]
            yield {"x": tensor(rng, *[rng.randint(1, 3) for _ in range(n)]), "p": p, "n": n,
                   **{f"q{i}": v for i, v in enumerate(q)}}
    return gen


def _expand_absent_instance(rng, ok=True):
    """x expanded to s, with p = k q at a leading dim j that x does not have; t: s with q there.
    Not ok: j is one of x's dims (size 2, not broadcast), p is not a multiple of q, or q is not below p."""
    shape = [rng.choice([1, 2, 3]) for _ in range(rng.randint(0, 2))]
    lead = [rng.randint(1, 3) for _ in range(rng.randint(1, 2))]
    j = rng.randrange(len(lead))
    q, k = rng.randint(1, 3), rng.randint(2, 4)
    p = q * k
    how = None if ok else rng.choice(["dim", "multiple", "same"])
    if how == "dim":
        shape = [2] + shape
        lead = []
        j = 0
        q, p = 1, 2
    elif how == "multiple":
        q = rng.randint(2, 3)
        p = q * k + 1
    elif how == "same":
        p = q
    s = lead + shape
    s[j] = p
    t = list(s)
    t[j] = q
    return {"x": tensor(rng, *shape), "s": s, "t": t, "j": j, "q": q, "p": p, "k": p // q, "n": len(shape),
            "m": len(s)}


@repeat(8)
def expand_split_absent(rng):
    return _expand_absent_instance(rng)


@repeat(6)
def expand_split_absent_bad(rng):
    return _expand_absent_instance(rng, ok=False)
@repeat(6)
def _zpad_concat_other(rng):
    nd = rng.randint(2, 3)
    d, k = rng.sample(range(nd), 2)
    l = _parts_on(rng, [rng.randint(1, 4) for _ in range(nd)], d)
    return {"l": l, "d": d, "k": k, "lo": rng.randint(0, 3), "hi": rng.randint(0, 3)}


@repeat(3)
def _zpad_concat_same(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    l = _parts_on(rng, [rng.randint(1, 4) for _ in range(nd)], d, parts=rng.randint(2, 3))
    return {"l": l, "d": d, "k": d, "lo": rng.randint(1, 3), "hi": rng.randint(0, 3)}   # along the axis itself


zpad_concat_other, zpad_concat_same = map(_xr, (_zpad_concat_other, _zpad_concat_same))


@repeat(4)
def map_zpad_each(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    l = _parts_on(rng, [rng.randint(1, 4) for _ in range(nd)], rng.randrange(nd))
    return {"x": l[0], "r": l[1:], "d": d, "lo": rng.randint(0, 3), "hi": rng.randint(0, 3)}


@repeat(4)
def zpad_rsum(rng):
    nd = rng.randint(1, 3)
    shape = [rng.randint(1, 3) for _ in range(nd)]
    return {"l": [tensor(rng, *shape) for _ in range(rng.randint(1, 6))], "d": rng.randrange(nd),
            "lo": rng.randint(0, 3), "hi": rng.randint(0, 3)}



def _reassoc_case(rng, order, gap=0):
    """a, y, x for (a + zpad y) + zpad x: x's block just before y's ("before") or after it, on one
    padded size along d; ``gap`` rows between them (the condition rejects any)."""
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    base = [rng.randint(1, 3) for _ in range(nd)]
    m, k = rng.randint(1, 3), rng.randint(1, 3)
    first = rng.randint(0, 2)
    if order == "before":
        l1, l2 = first, first + m + gap
    else:
        l2, l1 = first, first + k + gap
    total = max(l1 + m, l2 + k) + rng.randint(0, 2)
    xs, ys = list(base), list(base)
    xs[d], ys[d] = m, k
    a_shape = list(base)
    a_shape[d] = total
    if nd > 1 and rng.random() < 0.3:          # a broadcasting along another dim
        a_shape[(d + 1) % nd] = 1
    return {"a": tensor(rng, *a_shape), "x": tensor(rng, *xs), "y": tensor(rng, *ys), "d": d,
            "l1": l1, "h1": total - l1 - m, "l2": l2, "h2": total - l2 - k, "m": m, "k": k, "n": nd, "t": "float64"}


def zpad_reassoc(side, order):
    @repeat(8)
    def gen(rng):
        return _reassoc_case(rng, order)
    gen.__name__ = f"zpad_reassoc_{side}_{order}"
    return gen


def zpad_reassoc_apart(side):
    @repeat(6)
    def gen(rng):
        """Blocks with a gap or overlapping, or a of another dtype."""
        kind = rng.choice(["gap", "overlap", "dtype"])
        inst = _reassoc_case(rng, rng.choice(["before", "after"]), gap={"gap": 1, "overlap": -1}.get(kind, 0))
        if kind == "dtype":
            inst["a"] = inst["a"].to(torch.float32)
        if min(inst["l1"], inst["l2"], inst["h1"], inst["h2"]) < 0:
            return None
        return inst
    gen.__name__ = f"zpad_reassoc_apart_{side}"
    return gen


@repeat(6)
def slices_whole(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    x = tensor(rng, *[rng.randint(0, 6) if i == d else rng.randint(1, 3) for i in range(nd)])
    return {"x": x, "d": d, "b": rng.randint(0, x.shape[d]), "c": x.shape[d]}


@repeat(4)
def slices_not_whole(rng):
    inst = next(iter(slices_whole(rng)))
    if inst["c"] == 0:
        return None
    inst["c"] -= 1                                  # the last row left out
    inst["b"] = min(inst["b"], inst["c"])
    return inst


def _expand_split_rest_instance(rng, ok=True):
    """x expanded to s with leading dims x does not have; j one of them, p there and q not dividing
    it; t: s with q there.  Not ok: j a dim of x (not a new one), q dividing p, q = p, or q = 0."""
    nd = rng.randint(0, 2)
    shape = [rng.choice([1, 2, 3]) for _ in range(nd)]
    lead = [rng.randint(1, 3) for _ in range(rng.randint(1, 2))]
    s = lead + [v if v != 1 else rng.randint(1, 3) for v in shape]
    j = rng.randrange(len(lead))
    q = rng.randint(2, 4)
    p = q * rng.randint(1, 2) + rng.randint(1, q - 1)
    how = None if ok else rng.choice(["dim", "divides", "same", "zero"] if nd else ["divides", "same", "zero"])
    if how == "dim":          # j past the new dims: a dim of x (its size p there, not broadcast)
        j = len(lead) + rng.randrange(nd)
        shape[j - len(lead)] = p
    elif how == "divides":
        p = q * rng.randint(2, 3)
    elif how == "same":
        p = q
    elif how == "zero":
        q = 0
    s[j] = p
    t = list(s)
    t[j] = q
    return {"x": tensor(rng, *shape), "s": s, "t": t, "j": j, "q": q, "p": p, "n": nd, "m": len(s)}


@repeat(8)
def expand_split_rest(rng):
    return _expand_split_rest_instance(rng)


@repeat(6)
def expand_split_rest_bad(rng):
    return _expand_split_rest_instance(rng, ok=False)


@repeat(6)
def binary_expand_scalar(rng):
    s = [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]
    xs = [1 if rng.random() < 0.5 else v for v in s][rng.randint(0, len(s)):]
    op = rng.choice(["add", "mul", "sub", "div", "maximum"])
    dt = rng.choice([torch.float64, torch.float32])
    return {"op": op, "x": tensor(rng, *xs).to(dt), "s": s, "y": tensor(rng).to(dt), "t": str(dt).split(".")[-1]}


@repeat(4)
def binary_expand_not_scalar(rng):
    inst = next(iter(binary_expand_scalar(rng)))
    if rng.random() < 0.5:
        inst["y"] = tensor(rng, 1)                                  # not 0-D
    else:
        inst["y"] = inst["y"].to(torch.float16)                     # another dtype
    return inst


# ----------------------------------------------------------------------------- transposes of slices,
# moves of zero padding, zero blocks read as padding

def _zpad_raw(rng, nd_lo=1):
    nd = rng.randint(nd_lo, 4)
    d = rng.randrange(nd)
    x = tensor(rng, *[rng.randint(0 if i == d else 1, 3) for i in range(nd)])
    return {"x": x, "d": d, "lo": rng.randint(0, 3), "hi": rng.randint(0, 3)}


@repeat(8)
def permute_zpad(rng):
    inst = _zpad_raw(rng)
    nd = inst["x"].dim()
    p = rng.sample(range(nd), nd)
    return {**inst, "p": p, "j": p.index(inst["d"])}


@repeat(4)
def permute_zpad_bad(rng):
    """The padding left on its old dim (or moved wrong) after a permute that moves it."""
    x = tensor(rng, 2, 3, 4)
    return {"x": x, "d": 0, "lo": 1, "hi": 2, "p": [1, 2, 0], "j": rng.choice([0, 1])}


def _transpose_zpad_with(cond):
    def gen(rng):
        n = 0
        while n < 6:
            inst = _zpad_raw(rng, nd_lo=2)
            a, b = sorted(rng.sample(range(inst["x"].dim()), 2))
            inst = {**inst, "a": a, "b": b}
            if cond(inst):
                n += 1
                yield inst
    return gen


transpose_zpad_d_is_a = _transpose_zpad_with(lambda i: i["d"] == i["a"])
transpose_zpad_d_is_b = _transpose_zpad_with(lambda i: i["d"] == i["b"])
transpose_zpad_d_other = _transpose_zpad_with(lambda i: i["d"] not in (i["a"], i["b"]))
transpose_zpad_d_swapped = _transpose_zpad_with(lambda i: i["d"] in (i["a"], i["b"]))
transpose_zpad_d_not_a = _transpose_zpad_with(lambda i: i["d"] != i["a"])
transpose_zpad_d_not_b = _transpose_zpad_with(lambda i: i["d"] != i["b"])


def _zero_block(x, d, n):
    s = list(x.shape)
    s[d] = n
    return s


ZERO_TEXTS = ("0.0", "0")


def is_zero_text(v: str) -> str:
    """The condition that the constant text ``v`` is one of ZERO_TEXTS (egglog's string primitives)."""
    return f'(= 1 (count-matches ",{",".join(ZERO_TEXTS)}," (+ "," (+ {v} ","))))'


def with_zero_text(gen, nonzero_of=None):
    """Instances of a lemma over (cst z s t): ``gen``'s, z any zero text; with ``nonzero_of`` (a
    generator of accepted bindings), rejects: also its bindings with a nonzero text "1.0"."""
    def out(rng):
        for env in gen(rng) if gen else ():
            yield {**env, "z": rng.choice(ZERO_TEXTS)}
        for env in nonzero_of(rng) if nonzero_of else ():
            yield {**env, "z": "1.0"}
    out.__name__ = getattr(gen, "__name__", "with_zero_text")
    return out


def zeros_around(where, zero="0.0"):
    """x with zero blocks (a cst of x's dtype, zero) before it, after it or on both sides along d
    (sizes 0-3: a rank at the edge pads by an empty block)."""
    @repeat(8)
    def gen(rng):
        nd = rng.randint(1, 3)
        d = rng.randrange(nd)
        dt = rng.choice([torch.float64, torch.float32, torch.int64])
        x = tensor(rng, *[rng.randint(0 if i == d else 1, 3) for i in range(nd)]).to(dt)
        lo, hi = rng.randint(0, 3), rng.randint(0, 3)
        inst = {"x": x, "d": d, "t": str(dt).removeprefix("torch.")}
        if where in ("left", "around"):
            inst.update(s1=_zero_block(x, d, lo), lo=lo)
        if where in ("right", "around"):
            inst.update(s2=_zero_block(x, d, hi), hi=hi)
        return inst
    return gen


def zeros_around_bad(where):
    """The block's size read wrong (lo / hi not its size along d)."""
    @repeat(3)
    def gen(rng):
        inst = next(zeros_around(where)(rng))
        for k in ("lo", "hi"):
            if k in inst:
                inst[k] += 1
        return inst
    return gen


@repeat(8)
def zpad_zeros(rng):
    """A zero constant (1-3 dims, sizes 0-3, float / int / bool) padded along one of its dims."""
    nd = rng.randint(1, 3)
    s = [rng.randint(0, 3) for _ in range(nd)]
    d = rng.randrange(nd)
    return {"s": s, "d": d, "lo": rng.randint(0, 3), "hi": rng.randint(0, 3), "m": s[d],
            "t": rng.choice(["float64", "float32", "int64", "bool"])}


@repeat(3)
def zpad_zeros_bad(rng):
    """m read wrong (not the constant's size along d)."""
    inst = next(zpad_zeros(rng))
    return {**inst, "m": inst["m"] + 1}


def view_concat_prods_terms(rng):
    """(tprod c i), (sprod s i) for a view of a concat c to s that merges dims, c's axis not its last:
    the products of the first i dims, and of s's first i entries (true where they are, false for
    another value)."""
    n = 0
    while n < 4:
        inst = _regroup_prefix_instance(rng)
        l, d, s = inst["l"], inst["d"], inst["s"]
        if not d + 1 < l[0].dim() or not len(s) < l[0].dim():
            continue
        n += 1
        env = {f"a{i}": x for i, x in enumerate(l)}
        c = f"(concat {' '.join(f'(Cons a{i}' for i in range(len(l)))} (Nil){')' * len(l)} {d})"
        cat = torch.cat(l, d)
        facts = []
        for i in range(cat.dim() + 1):
            v = 1
            for n in cat.shape[:i]:
                v *= int(n)
            facts += [f"(= (tprod {c} {i}) {v})", f"(= (tprod {c} {i}) {v + 1})"]
        for i in range(len(s) + 1):
            v = 1
            for n in s[:i]:
                v *= n
            facts += [f"(= (sprod {dlist(s)} {i}) {v})", f"(= (sprod {dlist(s)} {i}) {v + 1})"]
        last = max(i for i in range(len(s)) if math.prod(s[:i]) == inst["q"])
        facts += [f"(= (spos {dlist(s)} {inst['q']}) {last})", f"(= (spos {dlist(s)} {inst['q']}) {last + 1})"]
        yield f"(view {c} {dlist(s)})", env, facts
