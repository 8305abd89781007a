"""Instances of the movement lemmas (entangle_py/lemmas/movement.py): slices, covers and tilings, flattens,
groups of parts, transposes and views of concats and sums over ranks."""
from __future__ import annotations

from lemma_instances.common import concat_parts, repeat, tensor


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
