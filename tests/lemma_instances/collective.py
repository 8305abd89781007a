"""Instances of the collective lemmas (entangle_py/lemmas/collective.py): sums and maxima over ranks."""
from __future__ import annotations

from entangle_py.lazy import torch

from lemma_instances.common import concat_parts, repeat, tensor


@repeat(4)
def single(rng):
    return {"x": tensor(rng, rng.randint(1, 4), rng.randint(1, 4))}


def _bounds(rng, n):
    s = rng.randint(0, n)
    return s, rng.randint(s, n)


@repeat(8)
def slice_rsum_concat(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    m = concat_parts(rng, nd, d, parts=rng.randint(1, 4))
    shape = list(torch.cat(m, d).shape)
    s, e = _bounds(rng, shape[d])
    return {"m": m, "r": [tensor(rng, *shape) for _ in range(rng.randint(0, 3))], "d": d, "s": s, "e": e}


@repeat(8)
def slice_rsum_fold(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    shape = [rng.randint(1, 5) for _ in range(nd)]
    s, e = _bounds(rng, shape[d])
    x = tensor(rng, *shape)
    r2 = [tensor(rng, *shape) for _ in range(rng.randint(0, 3))]
    r1 = [t.narrow(d, s, e - s) for t in r2]
    return {"x": x, "r2": r2, "r1": r1, "d": d, "s": s, "e": e}


@repeat(8)
def slice_rsum_part(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    shape = [rng.randint(1, 5) for _ in range(nd)]
    s, e = _bounds(rng, shape[d])
    return {"x": tensor(rng, *shape), "r": [tensor(rng, *shape) for _ in range(rng.randint(0, 3))],
            "d": d, "s": s, "e": e}


@repeat(8)
def view_unary_rsum(rng):
    from entangle_py.semantics.terms import UNARY_NAMES
    shape = [rng.randint(0, 3) for _ in range(rng.randint(0, 3))]
    l = [tensor(rng, *shape) for _ in range(rng.randint(1, 5))]
    op = rng.choice(sorted(UNARY_NAMES))
    if rng.random() < 0.3:
        l = [(x * 3).round().long() for x in l]
        op = rng.choice(["neg", "abs", "to_float16", "to_bool", "exp"])
    n = 1
    for v in shape:
        n *= v
    s = rng.choice([[n], [n, 1], [1, n]] + ([shape[::-1]] if shape else [[]]))
    return {"op": op, "l": l, "s": s}


def _shared(rng, n, dtype=None):
    """n ranks' parts of one shape, and a tensor that broadcasts with them (either way); float64
    unless ``dtype`` says otherwise."""
    dtype = dtype or torch.float64
    shape = [rng.randint(1, 4) for _ in range(rng.randint(0, 3))]
    y_shape = rng.choice([shape, shape[rng.randint(0, len(shape)):], [1] * len(shape), [2] + shape])
    l = [tensor(rng, *shape).to(dtype) for _ in range(n)]
    return l, tensor(rng, *y_shape).to(dtype)




@repeat(12)
def add_rsum_shared(rng):
    # float64: the condition accepts every floating dtype (exact for reals), but float32's and
    # float16's rounding of y / n is past the tolerance of a numeric check
    n = rng.randint(1, 8)
    l, y = _shared(rng, n)
    return {"l": l, "y": y, "n": n, "c": repr(float(n)), "t": "float64"}


def add_rsum_shared_bad(rng):
    """The divisor is not the number of ranks; or y and the parts are ints, or of two dtypes."""
    for _ in range(4):
        n = rng.randint(1, 6)
        l, y = _shared(rng, n)
        yield {"l": l, "y": y, "n": n, "c": repr(float(rng.choice([n + 1, 2 * n, n - 0.5]))), "t": "float64"}
        yield {"l": l, "y": y, "n": n, "c": repr(float(n)) + "0", "t": "float64"}     # not the divisor's text
        li, yi = _shared(rng, n, torch.int64)
        yield {"l": li, "y": yi, "n": n, "c": repr(float(n)), "t": "int64"}
        yield {"l": l, "y": y.float(), "n": n, "c": repr(float(n)), "t": "float32"}


def tlen_terms(rng):
    """The length of the list of ranks a sum plus a tensor shared by them has, and its divisor text."""
    for n in (1, 2, 3, 4):
        names = [f"a{i}" for i in range(n)]
        shape = [rng.randint(1, 3), rng.randint(1, 3)]
        env = {a: tensor(rng, *shape) for a in names}
        env["y"] = tensor(rng, shape[1])
        lst = "(Nil)"
        for a in reversed(names):
            lst = f"(Cons {a} {lst})"
        c = repr(float(n))
        term = f'(binary "add" (binary "add" (rsum {lst}) y) (scalar "div" y "{c}"))'
        facts = [f"(= (tlen {lst}) {n})", f"(= (tlen {lst}) {n + 1})", f'(= (ntext {n}) "{c}")',
                 f'(= (ntext {n}) "{n}")']
        yield term, env, facts



def _zero_pair(rng, name):
    """A part (0-3 dims, float or int) and a zero constant of its shape and dtype."""
    shape = [rng.randint(0, 3) for _ in range(rng.randint(0, 3))]
    dt = rng.choice([torch.float64, torch.float32, torch.int64])
    return {"s": shape, "t": str(dt).removeprefix("torch."), name: tensor(rng, *shape).to(dt)}


@repeat(6)
def rsum_zero_first(rng):
    return _zero_pair(rng, "y")


@repeat(6)
def rsum_zero_second(rng):
    return _zero_pair(rng, "x")


@repeat(8)
def rsum_nested(rng):
    """A part and a list of 1-4 parts, the first a write into a tensor at a 1-D tensor's nonzero,
    all of one shape (1-3 dims, some empty) and dtype."""
    s = [rng.randint(0, 3) for _ in range(rng.randint(1, 3))]
    dt = rng.choice([torch.float64, torch.float32, torch.int64])
    part = lambda *shape: (tensor(rng, *shape) * 4).to(dt)
    i = torch.nonzero(torch.tensor([rng.randint(0, 1) for _ in range(s[0])], dtype=torch.int64))
    return {"a": part(*s), "z": part(*s), "i": i, "x": part(i.shape[0], 1, *s[1:]),
            "r": [part(*s) for _ in range(rng.randint(0, 3))]}


def _part_plus(rng, grow=False, dtype=None):
    """Parts of one shape (0-3 dims, sizes 1-3), the first one x + y with y broadcasting into x
    (or, with ``grow``, x of a size-1 dim y enlarges: the other parts of the grown shape)."""
    shape = [rng.randint(1, 3) for _ in range(rng.randint(1 if grow else 0, 3))]
    y_shape = rng.choice([shape, shape[rng.randint(0, len(shape)):], [1] * len(shape)])
    x_shape = list(shape)
    if grow:
        k = rng.randrange(len(shape))
        x_shape[k], shape[k] = 1, shape[k] + 1
        y_shape = list(shape)
    dt = dtype or rng.choice([torch.float64, torch.float32, torch.int64])
    x, y = (tensor(rng, *x_shape) * 4).to(dt), (tensor(rng, *y_shape) * 4).to(dtype or dt)
    r = [(tensor(rng, *shape) * 4).to(torch.promote_types(x.dtype, y.dtype)) for _ in range(rng.randint(0, 3))]
    return {"x": x, "y": y, "r": r, "n": len(x_shape), "t": str(x.dtype).removeprefix("torch.")}


def _peer_pair(rng, n=2):
    """``n`` tensors of one shape and dtype (float or int): one node's value on neighbouring ranks."""
    s = [rng.randint(0, 3) for _ in range(rng.randint(0, 3))]
    dt = rng.choice([torch.float64, torch.float32, torch.int64])
    return [(tensor(rng, *s) * 4).to(dt) for _ in range(n)]


@repeat(8)
def rsum_peer_add(rng):
    a, b = _peer_pair(rng)
    return {"a": a, "b": b}


def rsum_peer_add_bad(rng):
    """Not peers: bools (added as an or), two dtypes (promotion), two shapes (broadcast)."""
    yield {"a": torch.tensor([True, False]), "b": torch.tensor([True, True])}
    yield {"a": torch.tensor([1.5, 2.0]), "b": torch.tensor([1, 2])}
    yield {"a": torch.ones(2, 3), "b": torch.ones(3)}
    yield {"a": torch.ones(1, 3), "b": torch.ones(2, 3)}


@repeat(8)
def rsum_peer_extend(rng):
    a, b, *r = _peer_pair(rng, rng.randint(2, 6))
    return {"a": a, "b": b, "r": r}


def rsum_peer_extend_bad(rng):
    yield {"a": torch.tensor([True, False]), "b": torch.tensor([True, True]), "r": []}
    yield {"a": torch.ones(3), "b": torch.ones(2, 3), "r": [torch.ones(2, 3)]}
    yield {"a": torch.ones(2, dtype=torch.float64), "b": torch.ones(2), "r": [torch.ones(2)]}


def _assoc_operands(rng, kinds):
    """a, b of one dtype that broadcast together, and the kind drawn."""
    s = [rng.randint(0, 3) for _ in range(rng.randint(0, 3))]
    kind = rng.choice(kinds)
    xs = []
    for _ in range(2):
        t = tensor(rng, *[1 if rng.random() < 0.3 else v for v in s[rng.randint(0, len(s)):]])
        xs.append((t * 4).round().long() if kind == "int" else t > 0 if kind == "bool" else t)
    return xs, kind


def _like(rng, y, kind):
    t = tensor(rng, *y.shape)
    return (t * 4).round().long() if kind == "int" else t > 0 if kind == "bool" else t


@repeat(10)
def add_assoc_peer(rng):
    """a, b of one dtype (float, int or bool) that broadcast together; x the peer of a + b (its
    shape and dtype, the next rank's value)."""
    (a, b), kind = _assoc_operands(rng, ["float", "int", "bool"])
    return {"x": _like(rng, a + b, kind), "a": a, "b": b}


def add_assoc_peer_mixed(rng):
    """Mixed dtypes: True + True is True, True + (True + 0.0) is 2.0; int + (int + float) rounds
    the int sum in float."""
    t = torch.tensor([True])
    yield {"x": t, "a": t, "b": torch.tensor([0.0])}
    yield {"x": torch.tensor([1.0]), "a": torch.tensor([2]), "b": torch.tensor([3])}


@repeat(10)
def add_assoc_peer_rsum(rng):
    """As add_assoc_peer, x a sum over ranks (float or int parts) that starts at the peer w of a + b."""
    (a, b), kind = _assoc_operands(rng, ["float", "int"])
    return {"w": _like(rng, a + b, kind), "a": a, "b": b, "r": [_like(rng, a + b, kind) for _ in range(rng.randint(0, 3))]}


def add_assoc_peer_rsum_mixed(rng):
    """Mixed dtypes: a float sum over ranks plus ints added first in int64 (wrapping) or in float."""
    yield {"w": torch.tensor([1.0]), "r": [], "a": torch.tensor([2]), "b": torch.tensor([3])}
    yield {"w": torch.tensor([1]), "r": [torch.tensor([1])], "a": torch.tensor([2]), "b": torch.tensor([0.5])}


def add_rsum_part(pos):
    """A sum over ranks plus y, where the part at ``pos`` (0, 1) plus y is of that part's shape
    and dtype (y broadcasts into it, one dtype); the other parts alike."""
    @repeat(10)
    def gen(rng):
        env = _part_plus(rng, dtype=rng.choice([torch.float64, torch.int64]))   # (float32 cancels past allclose)
        x = env["x"]
        others = [(tensor(rng, *x.shape) * 4).to(x.dtype) for _ in range(rng.randint(pos, 3))]
        t = str(x.dtype).removeprefix("torch.")
        if pos == 0:
            return {"a": x, "r": others, "y": env["y"], "t": t, "n": env["n"]}
        return {"a": others[0], "b": x, "r": others[1:], "y": env["y"], "t": t, "n": env["n"]}
    return gen


def add_rsum_part_bad(pos):
    """y grows the part by broadcasting, or promotes it (an int part plus a float y), or bools."""
    @repeat(4)
    def gen(rng):
        k = rng.randrange(3)
        env = _part_plus(rng, grow=k == 0, dtype=torch.int64 if k == 1 else torch.float64)
        x, y = env["x"], env["y"].to(torch.float64) if k == 1 else env["y"]
        if k == 2:
            x, y = x > 0, y > 0
        others = [torch.zeros_like(x + y) for _ in range(pos + 1)]
        if pos == 0:
            return {"a": x, "r": others, "y": y, "t": str(x.dtype).removeprefix("torch."), "n": env["n"]}
        return {"a": others[0], "b": x, "r": others[1:], "y": y, "t": str(x.dtype).removeprefix("torch."), "n": env["n"]}
    return gen


def add_rsum_part_bsame_terms(rng):
    """(binary "add" (rsum (Cons x r)) y) beside x + y: bsame of x and x + y on every prefix."""
    for grow in (False, True, False, True):
        env = _part_plus(rng, grow=grow, dtype=torch.float64)
        w = torch.zeros_like(env["x"])         # the other rank's part, of x's shape
        yield ('(binary "add" (binary "add" (rsum (Cons x (Cons w (Nil)))) y) (binary "add" x y))',
               {"x": env["x"], "y": env["y"], "w": w},
               [f'(bsame x (binary "add" x y) {i})' for i in range(env["n"] + 1)])


@repeat(10)
def add_assoc_rsum(rng):
    """x, a, b of one dtype (float or int), a + b of x's shape: the accumulation (x + a) + b."""
    (a, b), kind = _assoc_operands(rng, ["float", "int"])
    return {"x": _like(rng, a + b, kind), "a": a, "b": b, "t": str(a.dtype).removeprefix("torch.")}


def add_assoc_rsum_bad(rng):
    """Mixed dtypes (an int sum rounded in float), bools (a sum over ranks of bools is undefined)."""
    yield {"x": torch.tensor([1.0]), "a": torch.tensor([2]), "b": torch.tensor([3]), "t": "float32"}
    yield {"x": torch.tensor([True]), "a": torch.tensor([True]), "b": torch.tensor([False]), "t": "bool"}


def _parts(rng, k, dtype=None):
    shape = [rng.randint(1, 3) for _ in range(rng.randint(0, 2))]
    parts = [tensor(rng, *shape) for _ in range(k)]
    return [p.to(dtype) if dtype is not None else p for p in parts]


@repeat(8)
def rank_mean(rng):
    """A sum over k ranks (1-8) divided by k, as "k.0" (the text lowering writes for / k)."""
    k = rng.randint(1, 8)
    x, *r = _parts(rng, k)
    return {"x": x, "r": r, "n": k, "c": repr(float(k)), "t": "float64"}


def rank_mean_bad(rng):
    """The divisor is not the number of ranks (or not its text), or the parts are ints."""
    for _ in range(4):
        k = rng.randint(1, 6)
        x, *r = _parts(rng, k)
        for c in (repr(float(k + 1)), repr(float(2 * k)), str(k), repr(k - 0.5)):
            yield {"x": x, "r": r, "n": k, "c": c, "t": "float64"}
        xi, *ri = _parts(rng, k, torch.int64)
        yield {"x": xi, "r": ri, "n": k, "c": repr(float(k)), "t": "int64"}


@repeat(8)
def rank_mean_scaled(rng):
    """sum_i (x_i / c) over k ranks, c = k * a for an exact a != 1 (a global mean's count over
    k equal shards of a rows each)."""
    k = rng.randint(1, 8)
    a = rng.choice([2.0, 3.0, 0.5, 6.0, 1.5, 128.0])
    x, *r = _parts(rng, k)
    return {"x": x, "r": r, "n": k, "w": repr(float(k)), "c": repr(k * a), "a": repr(a), "t": "float64"}


def rank_mean_scaled_bad(rng):
    """c / k not a float exactly (1 / 3), the quotient 1 (rmean-rsum-div's case), the wrong
    quotient, or int parts."""
    for _ in range(3):
        x, *r = _parts(rng, 3)
        yield {"x": x, "r": r, "n": 3, "w": "3.0", "c": "1.0", "a": repr(1.0 / 3.0), "t": "float64"}
        yield {"x": x, "r": r, "n": 3, "w": "3.0", "c": "3.0", "a": "1.0", "t": "float64"}
        yield {"x": x, "r": r, "n": 3, "w": "3.0", "c": "12.0", "a": "3.0", "t": "float64"}
        xi, *ri = _parts(rng, 3, torch.int64)
        yield {"x": xi, "r": ri, "n": 3, "w": "3.0", "c": "6.0", "a": "2.0", "t": "int64"}


@repeat(6)
def div_fold_one(rng):
    return {"x": tensor(rng, rng.randint(1, 3)), "c": rng.choice(["2.0", "0.5", "-3.0", "6.0"])}


@repeat(6)
def div_fold(rng):
    x, *m = _parts(rng, rng.randint(1, 8))
    return {"x": x, "m": m, "c": rng.choice(["2.0", "0.5", "-3.0", "6.0"])}


def ask_rmean_terms(rng):
    """A sum over k ranks divided by k, and a sum of parts each divided by c: the engine answers
    the list's length, its text and the exact quotient c / k (none for an inexact one)."""
    for k, c in ((2, "6.0"), (3, "1.0"), (4, "2.0")):
        names = [f"a{i}" for i in range(k)]
        env = {a: tensor(rng, 2, 3) for a in names}
        lst = "(Nil)"
        for a in reversed(names):
            lst = f"(Cons {a} {lst})"
        w = repr(float(k))
        term = f'(binary "add" (scalar "div" (rsum {lst}) "{w}") (rsum (map_scalar "div" {lst} "{c}")))'
        facts = [f"(= (tlen {lst}) {k})", f'(= (ntext {k}) "{w}")',
                 f'(= (cdiv "{c}" "{w}") {_quotient_text(c, w)})', f'(= (cdiv "{c}" "{w}") "7.0")']
        yield term, env, facts


def _quotient_text(c, w):
    from entangle_py.semantics.terms import const_quotient
    try:
        return f'"{const_quotient(c, w)}"'
    except ValueError:      # no exact quotient: the fact naming the float nearest is false
        return f'"{float(c) / float(w)!r}"'
