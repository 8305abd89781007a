"""Instances of the movement lemmas (entangle_py/lemmas/movement.py): views that keep, merge or regroup the
dims of a concat, slices and permutes of concats, transposes of views; the view rules' checks."""
from __future__ import annotations

from entangle_py.lazy import torch

from lemma_instances.common import dlist, ilist, repeat, tensor
from lemma_instances.movement_slices import _parts_on, _total, _with, _without


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


@repeat(6)
def map_view_scale(rng):
    inst = _regroup_instance(rng)
    l = inst["l"]
    return {"x": l[0], "r": l[1:], "s": inst["s"], "d": inst["d"], "t": inst["t"], "m": l[0].shape[inst["d"]],
            "p": inst["p"]}


def map_view_scale_bad(rng):
    """A part whose rows do not fill whole rows of the view: [3 | 1] rows of 2 viewed [2, 4] (the
    first part ends in the middle of row 1); and t = 0."""
    x = tensor(rng, 3, 2)
    yield {"x": x, "r": [tensor(rng, 1, 2)], "s": [2, 4], "d": 0, "t": 4, "m": 3, "p": 2}
    # [6 | 2] columns viewed [2, 4]: the first part ends inside the second row of 4
    yield {"x": tensor(rng, 2, 6), "r": [tensor(rng, 2, 2)], "s": [2, 2, 4], "d": 1, "t": 8, "m": 6, "p": 2}
    yield {"x": tensor(rng, 0, 2), "r": [], "s": [0, 1, 2], "d": 0, "t": 0, "m": 0, "p": 0}


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
