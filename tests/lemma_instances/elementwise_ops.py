"""Instances of the elementwise lemmas (entangle_py/lemmas/elementwise.py): unary, scalar and binary ops
versus concat and sums over ranks, casts and integer comparisons."""
from __future__ import annotations

from entangle_py.lazy import torch

from entangle_py.semantics.terms import MASKED_FILL, UNARY_NAMES
from lemma_instances.common import concat_parts, repeat, tensor


_POSITIVE = {"log", "sqrt", "rsqrt", "reciprocal"}


_MASKED_FILL = MASKED_FILL + "-10000.0"   # masked_fill(x, mask, c) is the binary op masked_fill:<c>


@repeat(8)
def unary_concat(rng):
    op = rng.choice(sorted(set(UNARY_NAMES) - {"logical_not"}))
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    return {"op": op, "l": concat_parts(rng, nd, d, positive=op in _POSITIVE), "d": d}


@repeat(8)
def scalar_concat(rng):
    op = rng.choice(["add", "sub", "rsub", "mul", "div"])
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    return {"op": op, "l": concat_parts(rng, nd, d), "d": d, "c": rng.choice(["0.5", "-2.0", "3", "1e-05"])}


@repeat(6)
def map_unary(rng):
    op = rng.choice(["gelu", "exp", "neg", "tanh"])
    l = concat_parts(rng, 2, 0)
    return {"op": op, "x": l[0], "r": l[1:]}


@repeat(6)
def map_scalar(rng):
    l = concat_parts(rng, 2, 1)
    return {"op": rng.choice(["mul", "add"]), "x": l[0], "r": l[1:], "c": "0.25"}


def _aligned_pair(rng, op=None):
    """Two concats along the same axis k counted from the right, of any ndims (either operand the
    wider), 1-8 parts of uneven sizes (some empty), other dims broadcasting (1 in either operand),
    float64, float32 or int64."""
    nw = rng.randint(1, 4)
    nn = rng.randint(1, nw)
    k = rng.randint(1, nn)
    sizes = [rng.choice([0, 1, 1, 2, 3, 4]) for _ in range(rng.randint(1, 8))]
    other = [rng.randint(1, 4) for _ in range(nw)]
    one_w = [rng.random() < 0.2 for _ in range(nw)]     # dims of size 1 in the wider operand ...
    one_n = [rng.random() < 0.2 and not one_w[i] for i in range(nw)]   # ... or in the narrower
    dtype = rng.choice([torch.float64, torch.float32, torch.int64])
    dw = nw - k
    lw, ln = [], []
    for n in sizes:
        sw = [1 if one_w[i] else v for i, v in enumerate(other)]
        sn = [1 if one_n[i] else v for i, v in enumerate(other)][nw - nn:]
        sw[dw], sn[nn - k] = n, n
        lw.append(tensor(rng, *sw))
        ln.append(tensor(rng, *sn))
    if dtype == torch.int64:
        lw, ln = [(t * 4).round().long() for t in lw], [(t * 4).round().long() for t in ln]
    else:
        lw, ln = [t.to(dtype) for t in lw], [t.to(dtype) for t in ln]
    op = op or rng.choice(["add", "sub", "mul", "div", "maximum"])
    if op.startswith(MASKED_FILL):      # the second operand is a bool mask, no wider than the first
        lw, ln = [t.double() for t in lw], [t > 0 for t in ln]
    elif rng.random() < 0.5:            # the narrower operand first
        lw, ln = ln, lw
        return {"op": op, "l1": lw, "l2": ln, "d1": nn - k, "d2": dw, "n1": nn, "n2": nw, "k": k}
    return {"op": op, "l1": lw, "l2": ln, "d1": dw, "d2": nn - k, "n1": nw, "n2": nn, "k": k}


@repeat(12)
def _binary_concat(rng):
    return _aligned_pair(rng)


@repeat(4)
def binary_concat_misaligned(rng):
    """The concat axis of one operand moved (the narrower's need not align with the wider's)."""
    inst = _aligned_pair(rng)
    i = rng.choice((1, 2))
    if inst[f"n{i}"] < 2:
        return None
    inst[f"d{i}"] = (inst[f"d{i}"] + 1) % inst[f"n{i}"]
    return inst


@repeat(3)
def binary_concat_left_aligned(rng):
    """Axes equal counted from the left, not from the right: an n-D concat of rows and a 1-D
    concat, both of one-long parts (they line up), the 1-D one broadcast along the last dim.  Zipped
    part by part, row i would meet the 1-D operand's entry i, not entry j of every column j."""
    n, parts = rng.randint(2, 4), rng.randint(2, 8)
    shape = [rng.randint(1, 3) for _ in range(n - 1)] + [parts]
    rows = [tensor(rng, *([1] + shape[1:])) for _ in range(parts)]
    return {"op": rng.choice(["add", "mul", "sub"]), "l1": rows, "l2": [tensor(rng, 1) for _ in range(parts)],
            "d1": 0, "d2": 0, "n1": n, "n2": 1, "k": n}


@repeat(6)
def _zip_binary(rng):
    inst = _aligned_pair(rng)
    return {"op": inst["op"], "a": inst["l1"][0], "r1": inst["l1"][1:], "b": inst["l2"][0], "r2": inst["l2"][1:],
            "d1": inst["d1"], "d2": inst["d2"]}


def _zip_binary_masked(rng):
    inst = _aligned_pair(rng, op=_MASKED_FILL)
    return {"op": inst["op"], "a": inst["l1"][0], "r1": inst["l1"][1:], "b": inst["l2"][0], "r2": inst["l2"][1:],
            "d1": inst["d1"], "d2": inst["d2"]}


@repeat(3)
def zip_binary_mismatch(rng):
    a, b = tensor(rng, 2, 3), tensor(rng, 3, 3)
    return {"op": "add", "a": a, "r1": [], "b": b, "r2": [], "d1": 0, "d2": 0}


def _broadcast(rng, covered: bool, size_one: bool, op=None):
    """concat along d of parts, and a y that broadcasts over that axis (absent or of size 1)."""
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    l = concat_parts(rng, nd, d)
    k = nd - d                      # axis position from the right
    shape = list(l[0].shape)
    if covered:
        ny = rng.randint(k, nd)
        ys = shape[nd - ny:]
        ys[ny - k] = 1 if size_one else sum(p.shape[d] for p in l)
    else:
        ny = rng.randint(0, k - 1)
        ys = shape[nd - ny:] if ny else []
    op = op or rng.choice(["add", "mul", "sub", "div"])
    y = tensor(rng, *ys)
    return {"op": op, "l": l, "d": d, "y": y > 0 if op.startswith(MASKED_FILL) else y, "n": nd, "m": len(ys)}


@repeat(6)
def _bcast_absent(rng):
    return _broadcast(rng, covered=False, size_one=False)


@repeat(6)
def _bcast_one(rng):
    return _broadcast(rng, covered=True, size_one=True)


@repeat(4)
def bcast_full(rng):
    inst = _broadcast(rng, covered=True, size_one=False)
    return inst if inst["l"][0].shape[inst["d"]] != 1 or len(inst["l"]) > 1 else None


def _plus_masked_fill(gen, make, k=3):
    """Instances of ``gen`` followed by ``k`` with the op masked_fill (a bool mask operand)."""
    def out(rng):
        yield from gen(rng)
        for _ in range(k):
            inst = make(rng)
            if inst is not None:
                yield inst
    return out


binary_concat = _plus_masked_fill(_binary_concat, lambda rng: _aligned_pair(rng, op=_MASKED_FILL))
bcast_absent = _plus_masked_fill(_bcast_absent, lambda rng: _broadcast(rng, False, False, op=_MASKED_FILL))
bcast_one = _plus_masked_fill(_bcast_one, lambda rng: _broadcast(rng, True, True, op=_MASKED_FILL))
zip_binary = _plus_masked_fill(_zip_binary, _zip_binary_masked)


@repeat(6)
def map_binary(rng):
    l = concat_parts(rng, 2, 0)
    return {"op": "add", "x": l[0], "r": l[1:], "y": tensor(rng, l[0].shape[1])}


def _mirrored(covered: bool, size_one: bool, ok=lambda inst: True):
    """``_broadcast`` cases with y as the first operand (the concat on the right)."""
    @repeat(6)
    def gen(rng):
        inst = _broadcast(rng, covered, size_one, op=rng.choice(["add", "sub", "div", "gt", "lt"]))
        return inst if ok(inst) else None
    return gen


bcast_absent_r = _mirrored(False, False)
bcast_one_r = _mirrored(True, True)
bcast_full_r = _mirrored(True, False, ok=lambda inst: inst["l"][0].shape[inst["d"]] != 1 or len(inst["l"]) > 1)


@repeat(6)
def rsum_scalar(rng):
    shape = [rng.randint(1, 4), rng.randint(1, 4)]
    return {"op": rng.choice(["mul", "div"]), "l": [tensor(rng, *shape) for _ in range(rng.randint(1, 8))],
            "c": rng.choice(["0.5", "3", "-0.125"])}


def rsum_scalar_with(*consts):
    def gen(rng):
        for c in consts:
            yield {**next(iter(rsum_scalar(rng))), "c": c}
    return gen


def add_rsum(least):
    """x plus a sum of k >= least terms a, b (, c, r...)."""
    @repeat(6)
    def gen(rng):
        shape = [rng.randint(1, 3) for _ in range(rng.randint(0, 2))]
        k = 2 if least == 2 else rng.randint(3, 8)
        inst = {"x": tensor(rng, *shape), "a": tensor(rng, *shape), "b": tensor(rng, *shape)}
        if least == 2:
            return inst
        return {**inst, "c": tensor(rng, *shape), "r": [tensor(rng, *shape) for _ in range(k - 3)]}
    return gen


def rsum_rsum(op):
    """Two sums over the same number of ranks; the operands broadcast against each other."""
    @repeat(8)
    def gen(rng):
        s1 = [rng.randint(1, 3) for _ in range(rng.randint(0, 3))]
        s2 = [1 if rng.random() < 0.3 else v for v in s1[rng.randint(0, len(s1)):]]
        if rng.random() < 0.5:
            s1, s2 = s2, s1
        k = rng.randint(1, 8)
        return {"l1": [tensor(rng, *s1) for _ in range(k)], "l2": [tensor(rng, *s2) for _ in range(k)]}
    gen.__name__ = f"rsum_rsum_{op}"
    return gen


@repeat(6)
def zip_ranks(rng):
    shape = [rng.randint(1, 3) for _ in range(rng.randint(0, 2))]
    k = rng.randint(1, 6)
    return {"op": rng.choice(["add", "sub", "mul"]), "a": tensor(rng, *shape), "b": tensor(rng, *shape),
            "r1": [tensor(rng, *shape) for _ in range(k - 1)], "r2": [tensor(rng, *shape) for _ in range(k - 1)]}


def map_binary_l_nil(rng):
    return [{"op": "add", "y": tensor(rng, 2)}]


@repeat(6)
def neg_sub(rng):
    a = tensor(rng, 2, 3)
    b = tensor(rng, *rng.choice([[2, 3], [3], [1, 3], []]))
    if rng.random() < 0.3:
        a, b = (a * 4).round().long(), (b * 4).round().long()
    return {"a": a, "b": b}


_LINEAR = ["mul", "div", "gelu_backward", "gelu_tanh_backward", "silu_backward", "sigmoid_backward", "tanh_backward",
           "threshold_backward:0.0"]


@repeat(8)
def div_binary(rng):
    """Operands of one floating dtype (b may broadcast), a finite non-zero constant."""
    s = [rng.randint(1, 3) for _ in range(rng.randint(0, 3))]
    dt = rng.choice([torch.float64, torch.float32])
    return {"op": rng.choice(_LINEAR), "a": tensor(rng, *s).to(dt), "b": tensor(rng, *s[rng.randint(0, len(s)):]).to(dt),
            "c": rng.choice(["2.0", "8.0", "-0.5", "3.0"]), "t": str(dt).removeprefix("torch.")}


def div_binary_bad(rng):
    """int operands (a * b wraps before the division), mixed precision (a / c overflows in float16),
    an op not linear in a (add), a zero constant (0 * inf)."""
    big = torch.tensor([2 ** 62, 3], dtype=torch.int64)
    yield {"op": "mul", "a": big, "b": torch.tensor([4, 5]), "c": "2.0", "t": "int64"}
    yield {"op": "mul", "a": torch.tensor([60000.0], dtype=torch.float16), "b": torch.tensor([1e-3]), "c": "0.001",
           "t": "float16"}
    yield {"op": "add", "a": tensor(rng, 3), "b": tensor(rng, 3), "c": "2.0", "t": "float64"}
    yield {"op": "mul", "a": tensor(rng, 3), "b": tensor(rng, 3), "c": "0.0", "t": "float64"}


@repeat(8)
def add_comm(rng):
    """Operands that broadcast against each other (either may be the larger), of one dtype or
    mixed (promotion), int and bool too."""
    s = [rng.randint(0, 3) for _ in range(rng.randint(0, 3))]
    t = [1 if rng.random() < 0.3 else v for v in s[rng.randint(0, len(s)):]]
    a, b = tensor(rng, *s), tensor(rng, *t)
    if rng.random() < 0.5:
        a, b = b, a
    kind = rng.choice(["float", "mixed", "int", "bool"])
    if kind == "mixed":
        a = a.to(torch.float32)
    elif kind == "int":
        a, b = (a * 4).round().long(), (b * 4).round().long()
    elif kind == "bool":
        a, b = a > 0, b > 0
    return {"a": a, "b": b}


@repeat(6)
def rsum_pair(rng):
    s = [rng.randint(1, 3) for _ in range(rng.randint(0, 3))]
    dt = rng.choice([torch.float64, torch.float32, torch.int64])
    return {"a": tensor(rng, *s).to(dt), "b": tensor(rng, *s).to(dt)}


@repeat(8)
def rsum_fold(rng):
    """A list of 3-8 0-D parts of one dtype, float or int."""
    s = []
    dt = rng.choice([torch.float64, torch.float32, torch.int64])
    a, b, c, *r = (tensor(rng, *s).to(dt) for _ in range(rng.randint(3, 8)))
    return {"a": a, "b": b, "c": c, "r": r}


def rsum_fold_not_0d(rng):
    """Parts with dims (the fold holds, but is not asked of them: cost, not soundness)."""
    yield {"a": torch.ones(2), "b": torch.ones(2), "c": torch.ones(2), "r": []}


@repeat(4)
def add_zero(rng):
    return {"x": tensor(rng, *[rng.randint(0, 3) for _ in range(rng.randint(0, 2))]), "t": "float64"}


def add_zero_int(rng):
    """int x: x + 0.0 is a float tensor."""
    yield {"x": torch.tensor([1, 2]), "t": "int64"}
    yield {"x": torch.tensor([True]), "t": "bool"}


@repeat(6)
def div_rsum(rng):
    shape = [rng.randint(1, 3) for _ in range(rng.randint(0, 2))]
    y = tensor(rng, *shape[rng.randint(0, len(shape)):], positive=True)
    return {"l": [tensor(rng, *shape) for _ in range(rng.randint(1, 5))], "y": y, "t": "float64"}


def div_rsum_zero(rng):
    """A zero divisor (the assumption's counterexample: (1 + 0) / 0 = inf, 1 / 0 + 0 / 0 = nan), of
    another dtype than the parts (which the condition rejects)."""
    l = [torch.tensor([1.0], dtype=torch.float64), torch.tensor([0.0], dtype=torch.float64)]
    yield {"l": l, "y": torch.tensor([0]), "t": "float64"}
    yield {"l": l, "y": torch.tensor([0.0], dtype=torch.float32), "t": "float64"}


@repeat(8)
def mul_rsum(rng):
    """Parts of one float dtype and shape, y broadcasting against them (a suffix of their shape,
    some dims 1), as the left or the right operand."""
    shape = [rng.randint(0, 3) for _ in range(rng.randint(0, 3))]
    ys = [1 if rng.random() < 0.3 else n for n in shape[rng.randint(0, len(shape)):]]
    dt = rng.choice([torch.float64, torch.float32])
    return {"l": [tensor(rng, *shape).to(dt) for _ in range(rng.randint(1, 8))], "y": tensor(rng, *ys).to(dt),
            "t": str(dt).removeprefix("torch.")}


def mul_rsum_inf(rng):
    """The assumption's counterexample (inf * (1 + -0.5) = inf, inf * 1 + inf * -0.5 = nan), with y
    of another dtype than the parts, so that the condition rejects it too."""
    l = [torch.tensor([1.0], dtype=torch.float64), torch.tensor([-0.5], dtype=torch.float64)]
    for dt in (torch.float32, torch.float16):
        yield {"l": l, "y": torch.tensor([float("inf")], dtype=dt), "t": "float64"}


_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _mask(rng, shape):
    return tensor(rng, *shape) > 0


@repeat(8)
def cast_not(rng):
    t = rng.choice(_FLOATS)
    return {"op": f"to_{t}", "b": _mask(rng, [rng.randint(0, 3) for _ in range(rng.randint(0, 3))])}


def cast_not_bad(rng):
    """A float b (1 - float(not 0.5) = 1), a cast to an int (not a float dtype), and exp (not a cast)."""
    yield {"op": "to_float32", "b": torch.tensor([0.5, 0.0])}
    yield {"op": "to_int64", "b": torch.tensor([True, False])}
    yield {"op": "exp", "b": torch.tensor([True, False])}


def logical_not_dtype_terms(rng):
    """logical_not's dtype is bool, whatever its operand's dtype."""
    x = tensor(rng, 2, 3)
    facts = [f'(= (dtype t) "{n}")' for n in ("float64", "int64", "bool")]
    for v in (x, x > 0, x.to(torch.int64)):
        yield '(unary "logical_not" x)', {"x": v}, facts


def neg_neg(rng):
    for shape in ([2, 3], [], [0, 2], [4]):
        x = tensor(rng, *shape)
        yield {"x": x}
        yield {"x": (x * 4).round().long()}
    yield {"x": torch.tensor([float("inf"), float("-inf"), float("nan"), -0.0], dtype=torch.float64)}


def _int_parts(rng, nd, d):
    """Integer concat parts (ids, targets) along d: uneven sizes, values in [-3, 6)."""
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    return [torch.randint(-3, 6, tuple(p.shape), generator=g) for p in concat_parts(rng, nd, d)]


@repeat(8)
def iscalar_concat(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    return {"op": rng.choice(["ne", "eq", "lt", "le", "gt", "ge"]), "l": _int_parts(rng, nd, d), "d": d,
            "c": rng.randint(-2, 4)}


@repeat(3)
def iscalar_concat_arith(rng):
    """An arithmetic op (true, but left to the ranks' own terms: see the lemma)."""
    return {**next(iscalar_concat(rng)), "op": rng.choice(["add", "sub", "mul"])}


@repeat(4)
def map_iscalar(rng):
    l = _int_parts(rng, 2, 0)
    return {"op": rng.choice(["ne", "add"]), "x": l[0], "r": l[1:], "c": rng.randint(-1, 3)}


def compare_dtype_terms(rng):
    """A comparison with a constant is a bool tensor, whatever its operand's dtype."""
    x = tensor(rng, 2, 3)
    i = x.mul(3).round().to(torch.int64)
    facts = [f'(= (dtype t) "{n}")' for n in ("float64", "int64", "bool")]
    for op in ("eq", "ne", "lt", "le", "gt", "ge"):
        yield f'(iscalar "{op}" x 1)', {"x": i}, facts
        yield f'(scalar "{op}" x "0.5")', {"x": x}, facts


def _any_dtype(rng, dtype):
    """x of the given dtype: empty, 0-D and broadcast-free shapes; bools and ints from floats."""
    shape = [rng.randint(0, 3) for _ in range(rng.randint(0, 3))]
    x = tensor(rng, *shape) * 4
    if dtype == "bool":
        return x > 0
    return x.round().to(getattr(torch, dtype)) if dtype.startswith("int") else x.to(getattr(torch, dtype))


def cast_same(dtype):
    def gen(rng):
        for _ in range(6):
            yield {"x": _any_dtype(rng, dtype)}
        if dtype in _FLOATS:
            yield {"x": torch.tensor([float("inf"), float("nan"), -0.0, 1e-30]).to(getattr(torch, dtype))}
    gen.__name__ = f"cast_same_{dtype}"
    return gen


def cast_other(dtype):
    """x of every other dtype (a cast to float16 rounds a float32, to bool tests for nonzero, to an
    int truncates)."""
    def gen(rng):
        for other in ("float16", "bfloat16", "float32", "float64", "int32", "int64", "bool"):
            if other != dtype:
                yield {"x": torch.tensor([0.3, -2.7, 70000.0, 0.0]).to(getattr(torch, other))}
    gen.__name__ = f"cast_other_{dtype}"
    return gen


def _count(rng, shape, big=False):
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    hi = 2 ** 40 if big else 20
    return torch.randint(-hi, hi, tuple(shape), generator=g)


def _div_case(rng, f):
    """x of dtype f over an int64 y, either one 0-D or broadcast (size-1 or absent dims), y with
    zeros (x / 0 is inf or nan on both sides) and counts past the dtype's exact integers."""
    nd = rng.randint(0, 3)
    shape = [rng.randint(0, 3) for _ in range(nd)]
    yshape = [rng.choice([1, s]) for s in shape][rng.randint(0, nd):]
    if rng.random() < 0.3:
        shape, yshape = yshape, shape
    x = (tensor(rng, *shape) * 100).to(getattr(torch, f))
    return {"x": x, "y": _count(rng, yshape, big=rng.random() < 0.3)}


def div_int_cast(f):
    def gen(rng):
        for _ in range(8):
            yield _div_case(rng, f)
        yield {"x": torch.tensor([1.0, -1.0, 0.0]).to(getattr(torch, f)), "y": torch.tensor([0, 0, 0])}
        yield {"x": torch.tensor(3.0).to(getattr(torch, f)), "y": torch.tensor([2 ** 53 + 1, 70000, 257])}
    gen.__name__ = f"div_int_cast_{f}"
    return gen


def div_int_cast_bad(f):
    """x of another dtype (a float64 x over float32(y) != x / y; an int x divides in float32) and a
    y that is not int64 (a float64 y cast to float16 rounds)."""
    def gen(rng):
        for other in _FLOATS + ("int64",):
            if other != f:
                yield {"x": torch.tensor([1.0, 3.0]).to(getattr(torch, other)), "y": torch.tensor([2 ** 53 + 1, 3])}
        yield {"x": torch.tensor([1.0, 3.0]).to(getattr(torch, f)), "y": torch.tensor([70000.1, 3.3], dtype=torch.float64)}
        yield {"x": torch.tensor([1.0, 3.0]).to(getattr(torch, f)), "y": torch.tensor([True, False])}
    gen.__name__ = f"div_int_cast_bad_{f}"
    return gen


def cast_dtype_terms(rng):
    """A cast's dtype is its target's, whatever its operand's."""
    x = tensor(rng, 2, 3)
    facts = [f'(= (dtype t) "{n}")' for n in ("float16", "float64", "int64", "bool")]
    for v in (x, x > 0, x.to(torch.int64)):
        for t in ("float16", "int64", "bool"):
            yield f'(unary "to_{t}" x)', {"x": v}, facts


@repeat(10)
def add_mul_neg(rng):
    """Broadcast operands of mixed dtypes, ints, and values where rounding matters."""
    shapes = rng.choice([[[2, 3], [3], [1, 3], [], [2, 1]], [[0, 3], [3], [1, 3], [], [0, 1]]])
    a, b, c = (tensor(rng, *rng.choice(shapes)) * 1e3 for i in range(3))
    if rng.random() < 0.3:
        a, b, c = ((v * 4).round().long() for v in (a, b, c))
    elif rng.random() < 0.3:
        a, c = a.to(torch.float16), c.to(torch.float32)
    return {"a": a, "b": b, "c": c}


def add_mul_neg_bool(rng):
    yield {"a": torch.tensor([True, False]), "b": torch.tensor([1.0, 2.0]), "c": torch.tensor([0.5, 1.0])}


@repeat(10)
def sub_rsum_neg(rng):
    """Parts of one shape (a sum over ranks), a broadcasting a; ints; values where rounding matters."""
    shape = [rng.randint(0, 3) for _ in range(rng.randint(0, 3))]
    l = [tensor(rng, *shape) * 10 ** rng.randint(0, 8) for _ in range(rng.randint(1, 6))]
    a = tensor(rng, *shape[rng.randint(0, len(shape)):]) * 1e4
    if rng.random() < 0.3:
        l, a = [(x * 4).round().long() for x in l], (a * 4).round().long()
    return {"a": a, "l": l}

def _cons_text(names):
    out = "(Nil)"
    for n in reversed(names):
        out = f"(Cons {n} {out})"
    return out


def zip_aligned_terms(rng):
    """binary(concat(l1, d1), concat(l2, d2)) of parts that line up or not (other sizes, another
    count, a part of size 0), each (zipok l1 l2 d1 d2) true exactly when they do."""
    cases = [  # (sizes of l1, sizes of l2) along the axis
        ([2, 1], [2, 1]), ([2, 1], [1, 2]), ([3], [1, 2]), ([1, 2], [3]), ([2, 0, 1], [2, 0, 1]),
        ([2, 0, 1], [2, 1]), ([1, 1, 1], [1, 1, 1]), ([4], [4])]
    for s1, s2 in cases:
        for nd2 in (2, 1):                 # the second operand of as many dims, or fewer (broadcast)
            other = [rng.randint(1, 3), 3]
            d1, d2 = 1, nd2 - 1            # the last dim, counted from the right in both
            env, n1, n2 = {}, [], []
            for i, n in enumerate(s1):
                env[f"a{i}"] = tensor(rng, other[0], n)
                n1.append(f"a{i}")
            for i, n in enumerate(s2):
                env[f"b{i}"] = tensor(rng, *([other[0], n] if nd2 == 2 else [n]))
                n2.append(f"b{i}")
            l1, l2 = _cons_text(n1), _cons_text(n2)
            yield (f'(binary "add" (concat {l1} {d1}) (concat {l2} {d2}))', env,
                   [f"(zipok {l1} {l2} {d1} {d2})"])


@repeat(4)
def binary_concat_misparted(rng):
    """Concats of one shape along one axis whose parts do not line up (zip_binary would not finish)."""
    inst = _aligned_pair(rng)
    if len(inst["l1"]) < 2:
        return None
    whole = torch.cat(inst["l2"], inst["d2"])
    n = whole.shape[inst["d2"]]
    cut = rng.randint(0, n)
    if [cut, n - cut] == [p.shape[inst["d1"]] for p in inst["l1"]]:
        return None
    inst["l2"] = list(torch.split(whole, [cut, n - cut], inst["d2"]))
    return inst


def binary_concat_rejected(rng):
    """Concat axes that differ, or parts that do not line up."""
    yield from binary_concat_misaligned(rng)
    yield from binary_concat_misparted(rng)
    yield from binary_concat_left_aligned(rng)
