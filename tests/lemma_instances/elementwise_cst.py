"""Instances of the elementwise lemmas (entangle_py/lemmas/elementwise.py): a constant beside a concat,
zeros added, masks of rows, De Morgan."""
from __future__ import annotations

from entangle_py.lazy import torch

from lemma_instances.common import concat_parts, dlist, repeat, tensor


# ----------------------------------------------------------------------------- a constant beside a concat

def _concat_cst(rng, fit=True):
    """A concat along d of an n-D tensor and a constant of m <= n dims aligned from the right whose
    dim k (the concat axis) has the concat's size (others the concat's, or 1)."""
    n = rng.randint(1, 3)
    d = rng.randrange(n)
    l = concat_parts(rng, n, d, parts=rng.randint(1, 4))
    whole = list(l[0].shape)
    whole[d] = sum(p.shape[d] for p in l)
    m = rng.randint(n - d, n)
    k = d - (n - m)
    s = [v if i == k or rng.random() < 0.7 else 1 for i, v in enumerate(whole[n - m:])]
    if not fit:
        s[k] += 1
    return {"x": l[0], "r": l[1:], "d": d, "c": rng.choice(["0.1", "-2.0", "0.0", "3"]), "s": s,
            "t": "float64", "n": n, "m": m, "k": k, "op": rng.choice(["add", "sub", "mul", "div"])}


@repeat(8)
def binary_concat_cst(rng):
    return _concat_cst(rng)


@repeat(3)
def binary_concat_cst_bad(rng):
    """The constant one row longer than the concat along its axis (undefined: a broadcast error)."""
    return _concat_cst(rng, fit=False)


@repeat(4)
def cst_parts_cons(rng):
    inst = _concat_cst(rng)
    return {**{k: inst[k] for k in ("x", "r", "d", "c", "s", "t", "k")}, "v": inst["x"].shape[inst["d"]]}


@repeat(2)
def cst_parts_cons_bad(rng):
    inst = next(cst_parts_cons(rng))
    return {**inst, "v": inst["v"] + 1}


def cst_parts_nil(rng):
    return [{"c": "0.1", "s": [2, 3], "t": "float32", "k": 0, "d": 0}]


def add_zeros(side):
    """x (0-3 dims, float / int / bool) plus a zero constant of its shape and dtype, on ``side``."""
    @repeat(8)
    def gen(rng):
        shape = [rng.randint(0, 3) for _ in range(rng.randint(0, 3))]
        dt = rng.choice([torch.float64, torch.float32, torch.int64, torch.bool])
        x = tensor(rng, *shape).to(dt)
        s = [1 if rng.random() < 0.3 else v for v in shape]     # size-1 dims broadcast into x's
        return {"x": x, "s": s, "t": str(dt).removeprefix("torch."), "n": len(shape)}
    return gen


def add_zeros_bad(side):
    """A constant that broadcasts x to a larger shape, or of another dtype (a promotion)."""
    def gen(rng):
        x = tensor(rng, 2, 3)
        yield {"x": x, "s": [4, 2, 3], "t": "float64", "n": 2}
        yield {"x": x, "s": [2, 3], "t": "float64", "n": 3}
        yield {"x": tensor(rng, 1, 3), "s": [2, 3], "t": "float64", "n": 2}
        yield {"x": torch.tensor([1, 2]), "s": [2], "t": "float32", "n": 1}
    return gen


def add_zeros_terms(rng):
    """(vpfx x s n) asked for x added to a constant: true where x has s."""
    for xs, s in (([2, 3], [2, 3]), ([1, 3], [2, 3]), ([3], [2, 3]), ([2, 3], [3])):
        env = {"x": tensor(rng, *xs)}
        c = f'(cst "0.0" {dlist(s)} "float64")'
        for term in (f'(binary "add" x {c})', f'(binary "add" {c} x)'):
            yield term, env, [f"(vpfx x {dlist(s)} {len(s)})"]


@repeat(8)
def add_zeros_bcast(rng):
    """x (1-3 dims, float / int / bool) plus a zero constant of its last m < ndim dims and dtype."""
    shape = [rng.randint(0, 3) for _ in range(rng.randint(1, 3))]
    dt = rng.choice([torch.float64, torch.float32, torch.int64, torch.bool])
    m = rng.randrange(len(shape))
    return {"x": tensor(rng, *shape).to(dt), "s": shape[len(shape) - m:], "t": str(dt).removeprefix("torch."), "m": m}


def add_zeros_bcast_bad(rng):
    """The constant's size-1 dim or extra dims grow x, or another dtype promotes it."""
    x = tensor(rng, 2, 3)
    yield {"x": x, "s": [4, 2, 3], "t": "float64", "m": 3}
    yield {"x": tensor(rng, 2, 1), "s": [3], "t": "float64", "m": 1}
    yield {"x": x, "s": [3], "t": "float32", "m": 1}
    yield {"x": torch.tensor([[1, 2]]), "s": [2], "t": "float64", "m": 1}


def add_zeros_bcast_terms(rng):
    """(vsfx x s m) asked for x added to a constant: true where x's last m dims are s's."""
    for xs, s in (([2, 3], [3]), ([2, 1], [3]), ([4, 2, 3], [2, 3]), ([2, 3], [2, 3])):
        env = {"x": tensor(rng, *xs)}
        c = f'(cst "0.0" {dlist(s)} "float64")'
        yield f'(binary "add" x {c})', env, [f"(vsfx x {dlist(s)} {len(s)})"]


@repeat(6)
def iscalar_zeros(rng):
    return {"s": [rng.randint(0, 3) for _ in range(rng.randint(0, 3))], "k": rng.choice([-100, -1, 0, 3, 2**40])}


def iscalar_zeros_big(rng):
    """A constant near int64's bounds (the sum wraps around)."""
    yield {"s": [2], "k": 2**63 - 1}
    yield {"s": [2], "k": -(2**63)}


@repeat(10)
def neg_rsum(rng):
    """Parts of one shape (a sum over ranks), floats at magnitudes where rounding matters, or ints
    (the least int64 too: its negation wraps alike on both sides)."""
    shape = [rng.randint(0, 3) for _ in range(rng.randint(0, 3))]
    l = [tensor(rng, *shape) * 10 ** rng.randint(0, 8) for _ in range(rng.randint(1, 6))]
    if rng.random() < 0.3:
        l = [(x * 4).round().long() for x in l]
        if rng.random() < 0.3 and shape:
            l[0] = torch.full(shape, -2 ** 63, dtype=torch.int64)
    return {"l": l}


@repeat(10)
def iscalar_strict(rng):
    """int64 values around the constant (equal to it, one either side), any shape (0-D, empty)."""
    c = rng.choice([-2**40, -7, -1, 0, 1, 5, 31, 2**40])
    shape = [rng.randint(0, 4) for _ in range(rng.randint(0, 3))]
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    return {"x": torch.randint(c - 2, c + 3, tuple(shape), generator=g, dtype=torch.int64), "c": c}


def iscalar_strict_bad(rng):
    """Another integer dtype (the next integer may not be one of its values), or a constant at
    int64's top (the next integer wraps around)."""
    yield {"x": torch.tensor([5, 6, 7], dtype=torch.int32), "c": 6}
    yield {"x": torch.tensor([True, False]), "c": 0}
    yield {"x": torch.tensor([2**63 - 1, 0]), "c": 2**63 - 1}


def _rows_mask(rng, dtype=None):
    """x and a bool mask of its rows (its leading shape), viewed with a trailing 1; op the cast of
    the mask to x's dtype f."""
    dtype = dtype or rng.choice([torch.float64, torch.float32, torch.float16])
    lead = [rng.randint(0, 4) for _ in range(rng.randint(0, 3))]
    x = tensor(rng, *lead, rng.randint(1, 4)).to(dtype)
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    m = torch.rand(tuple(lead), generator=g) < 0.5
    f = str(dtype).removeprefix("torch.")
    return {"x": x, "m": m, "s": lead + [1], "op": f"to_{f}", "f": f, "k": len(lead) + 1}


@repeat(10)
def mul_rows_mask(rng):
    return _rows_mask(rng)


def mul_rows_mask_bad(rng):
    """Each with an inf in a zeroed row (inf * 0 is nan: the finite_values counterexample), and
    each outside the condition: a cast to another dtype than x's (the product promotes), a mask
    over x's whole shape (not its rows), a float mask."""
    x = torch.tensor([[float("inf"), 1.0], [2.0, 3.0]], dtype=torch.float64)
    m = torch.tensor([False, True])
    yield {"x": x.float(), "m": m, "s": [2, 1], "op": "to_float64", "f": "float32", "k": 2}
    yield {"x": x, "m": torch.tensor([[False, True], [True, True]]), "s": [2, 2], "op": "to_float64", "f": "float64", "k": 2}
    yield {"x": x, "m": m.double(), "s": [2, 1], "op": "to_float64", "f": "float64", "k": 2}


@repeat(8)
def not_and_bool(rng):
    shape = [rng.randint(0, 4) for _ in range(rng.randint(0, 3))]
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    return {"a": torch.rand(tuple(shape), generator=g) < 0.5, "b": torch.rand(tuple(shape[rng.randint(0, len(shape)):]), generator=g) < 0.5}


def not_and_ints(rng):
    """Integer operands: bitwise and of ints is not a logical and (not of 1 & 2 = 0 is true)."""
    yield {"a": torch.tensor([1, 2]), "b": torch.tensor([2, 2])}
    yield {"a": torch.tensor([True, False]), "b": torch.tensor([3, 0])}


@repeat(8)
def not_compare(rng):
    c = rng.choice([-2**40, -3, 0, 7, 2**40])
    shape = [rng.randint(0, 4) for _ in range(rng.randint(0, 3))]
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    dtype = rng.choice([torch.int64, torch.int32]) if abs(c) < 2**31 else torch.int64
    return {"x": torch.randint(c - 2, c + 3, tuple(shape), generator=g, dtype=torch.int64).to(dtype), "c": c}


def mul_rows_mask_terms(rng):
    """(vpfx x s n) asked for x multiplied by a cast mask viewed to s: true where x has s's dims."""
    for xs, s in (([2, 3], [2, 1]), ([2, 3, 4], [2, 3, 1]), ([2, 3], [1, 1])):
        m = torch.ones(s[:-1], dtype=torch.bool)
        env = {"x": tensor(rng, *xs), "m": m}
        for term in (f'(binary "mul" x (unary "to_float64" (view m {dlist(s)})))',
                     f'(binary "mul" (unary "to_float64" (view m {dlist(s)})) x)'):
            yield term, env, [f"(vpfx x {dlist(s)} {len(s) - 1})"]


@repeat(6)
def not_not_bool(rng):
    shape = [rng.randint(0, 4) for _ in range(rng.randint(0, 3))]
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    return {"m": torch.rand(tuple(shape), generator=g) < 0.5}


def not_not_other(rng):
    """Not bool: logical_not of ints or floats is a bool (not not 3 is True, not 3)."""
    yield {"m": torch.tensor([3, 0])}
    yield {"m": torch.tensor([0.5, 0.0])}


@repeat(8)
def div_add(rng):
    """Operands of one floating dtype that broadcast together, a finite non-zero constant."""
    s = [rng.randint(0, 3) for _ in range(rng.randint(0, 3))]
    dt = rng.choice([torch.float64, torch.float32])
    a, b = tensor(rng, *s).to(dt), tensor(rng, *s[rng.randint(0, len(s)):]).to(dt)
    if rng.random() < 0.5:
        a, b = b, a
    return {"a": a, "b": b, "c": rng.choice(["2.0", "8.0", "-0.5", "3.0", "6.0"]), "t": str(dt).removeprefix("torch.")}


def div_add_bad(rng):
    """int operands (their sum wraps, the quotients do not), mixed dtypes, a zero or inf constant."""
    big = torch.tensor([2 ** 62, 3], dtype=torch.int64)
    yield {"a": big, "b": big, "c": "2.0", "t": "int64"}
    yield {"a": tensor(rng, 3), "b": tensor(rng, 3).to(torch.float32), "c": "2.0", "t": "float64"}
    yield {"a": tensor(rng, 3), "b": tensor(rng, 3), "c": "0.0", "t": "float64"}
    yield {"a": tensor(rng, 3), "b": tensor(rng, 3), "c": "inf", "t": "float64"}


def add_zeros_bsame_terms(rng):
    """(bsame x (x + zeros) i) asked for x added to zeros: true where x and the sum agree, size-1
    dims of the zeros broadcast (alike) and x's grown (not)."""
    for xs, s in (([2, 3], [2, 3]), ([2, 3], [1, 3]), ([1, 3], [2, 3]), ([2, 1], [2, 3])):
        env = {"x": tensor(rng, *xs)}
        c = f'(cst "0.0" {dlist(s)} "float64")'
        for text in (f'(binary "add" x {c})', f'(binary "add" {c} x)'):
            yield text, env, [f"(bsame x {text} {i})" for i in range(3)]
