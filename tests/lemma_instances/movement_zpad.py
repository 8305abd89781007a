"""Instances of the movement lemmas (entangle_py/lemmas/movement.py): zero padding, expands and
permutes of splits, transposes of slices, zero blocks read as padding."""
from __future__ import annotations

from entangle_py.lazy import torch

from entangle_py.lemmas.conditions import ZERO_TEXTS
from lemma_instances.common import concat_parts, dlist, repeat, tensor
from lemma_instances.movement_slices import _parts_on
from lemma_instances.movement_views import _xr


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
