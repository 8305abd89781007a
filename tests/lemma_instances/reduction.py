"""Instances of the reduction lemmas (entangle_py/lemmas/reduction.py): softmax, reductions over dims and layer
norm versus concat and sums over ranks."""
from __future__ import annotations

from entangle_py.lazy import torch

from entangle_py.semantics import terms
from lemma_instances.common import concat_parts, ilist, repeat, tensor

@repeat(6)
def softmax_other(rng):
    nd = rng.randint(2, 3)
    d, s = rng.sample(range(nd), 2)
    return {"l": concat_parts(rng, nd, d), "d": d, "s": s}


@repeat(3)
def softmax_same(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    return {"l": concat_parts(rng, nd, d, parts=2), "d": d, "s": d}


@repeat(4)
def map_softmax(rng):
    l = concat_parts(rng, 2, 0)
    return {"x": l[0], "r": l[1:], "s": 1}


def _reduce_concat(rng, ops, contains: bool, keepdim=None):
    nd = rng.randint(1, 4)
    d = rng.randrange(nd)
    l = concat_parts(rng, nd, d)
    others = [i for i in range(nd) if i != d]
    if contains:
        dims = sorted(rng.sample(others, rng.randint(0, len(others))) + [d])
    else:
        if not others:
            return None
        dims = sorted(rng.sample(others, rng.randint(1, len(others))))
    k = rng.randint(0, 1) if keepdim is None else keepdim
    return {"op": rng.choice(ops), "l": l, "d": d, "dims": dims, "k": k,
            "b": sum(1 for a in dims if a < d)}


def _gen(n, *args, **kw):
    def gen(rng):
        made = 0
        while made < n:
            inst = _reduce_concat(rng, *args, **kw)
            if inst is not None:
                made += 1
                yield inst
    return gen


@repeat(6)
def map_reduce(rng):
    l = concat_parts(rng, 3, 0)
    return {"op": rng.choice(["sum", "mean", "amax"]), "x": l[0], "r": l[1:], "dims": [1, 2], "k": rng.randint(0, 1)}


def _size1_case(rng, ok):
    nd = rng.randint(1, 4)
    shape = [rng.randint(0, 3) for _ in range(nd)]
    d = rng.randrange(nd)
    shape[d] = 1 if ok else rng.randint(2, 4)
    x = tensor(rng, *shape)
    if ok and rng.random() < 0.3:
        x = x.to(rng.choice([torch.float32, torch.float16]))
    if not ok and rng.random() < 0.5:        # size 1, but ints: a sum of int32 is int64
        shape[d] = 1
        x = torch.ones(shape, dtype=torch.int32)
    return {"x": x, "d": d, "t": str(x.dtype).removeprefix("torch."), "op": rng.choice(["sum", "mean", "amax", "logsumexp"])}


@repeat(6)
def reduce_size1(rng):
    return _size1_case(rng, True)


@repeat(6)
def reduce_not_size1(rng):
    inst = _size1_case(rng, rng.random() < 0.3)
    if inst["x"].shape[inst["d"]] == 1 and inst["x"].is_floating_point():   # a size-1 dim: an op not the identity there
        inst["op"] = rng.choice(["norm:2.0", "var:1.0", "nansum", "amin", "std:0.0"])
    return inst


@repeat(6)
def div_sum(rng):
    dt = rng.choice([torch.float64, torch.float32])
    nd = rng.randint(1, 3)
    shape = [rng.randint(0, 4) for _ in range(nd)]
    dims = sorted(rng.sample(range(nd), rng.randint(1, nd)))
    return {"a": tensor(rng, *shape).to(dt), "dims": dims, "k": rng.randint(0, 1),
            "c": rng.choice(["2.0", "24.0", "-0.5"]), "t": str(dt).removeprefix("torch.")}


def div_sum_bad(rng):
    """an int operand (its sum is int, the scaled operand float), a zero constant over mixed signs."""
    yield {"a": torch.ones(2, 3, dtype=torch.int64), "dims": [0], "k": 0, "c": "2.0", "t": "int64"}
    yield {"a": torch.tensor([1.0, -1.0], dtype=torch.float64), "dims": [0], "k": 0, "c": "0.0", "t": "float64"}


@repeat(6)
def reduce_rsum(rng):
    nd = rng.randint(1, 3)
    shape = [rng.randint(1, 4) for _ in range(nd)]
    dims = sorted(rng.sample(range(nd), rng.randint(1, nd)))
    return {"l": [tensor(rng, *shape) for _ in range(rng.randint(1, 8))], "dims": dims, "k": rng.randint(0, 1),
            "op": rng.choice(["sum", "mean"])}


def _layernorm_case(rng, ok):
    nd = rng.randint(2, 4)
    k = rng.randint(1, nd - 1)
    d = rng.randrange(nd - k) if ok else rng.randrange(nd - k, nd)
    l = concat_parts(rng, nd, d)
    norm = list(l[0].shape[nd - k:])
    if not ok:   # parts of different sizes along a normalised dim: layer norm of the whole
        norm[d - (nd - k)] = sum(p.shape[d] for p in l)
    return {"l": l, "d": d, "k": k, "n": nd, "w": tensor(rng, *norm), "b": tensor(rng, *norm),
            "e": rng.choice(["1e-05", "1e-06", "0.001"])}


@repeat(8)
def layernorm_concat(rng):
    return _layernorm_case(rng, ok=True)


@repeat(4)
def layernorm_concat_bad(rng):
    return _layernorm_case(rng, ok=False)


@repeat(4)
def map_layernorm(rng):
    l = concat_parts(rng, 3, 0)
    return {"x": l[0], "r": l[1:], "w": tensor(rng, l[0].shape[2]), "b": tensor(rng, l[0].shape[2]), "k": 1,
            "e": "1e-05"}



_ALL = ["sum", "mean", "amax"]
# a reduction of a concat along d over dims without d (other) or with d (with_d)
reduce_concat_other_keep = _gen(8, _ALL, False, keepdim=1)
reduce_concat_with_d_keep = _gen(4, _ALL, True, keepdim=1)
reduce_concat_other_drop = _gen(8, _ALL, False, keepdim=0)
reduce_concat_with_d_drop = _gen(4, _ALL, True, keepdim=0)
sum_concat_with_d = _gen(8, ["sum"], True)
sum_concat_other = _gen(4, ["sum"], False)
amax_concat_with_d = _gen(8, ["amax"], True)
amax_concat_other = _gen(4, ["amax"], False)


def map_layernorm_nil(rng):
    return [{"w": tensor(rng, 2), "b": tensor(rng, 2), "k": 1, "e": "1e-05"}]


def _merged_view(rng, merged=True):
    """x and s = x's shape with dims a, a+1 merged (merged) or with a dim split differently (not)."""
    nd = rng.randint(2, 4)
    shape = [rng.randint(1, 3) for _ in range(nd)]
    a = rng.randrange(nd - 1)
    x = tensor(rng, *shape)
    if merged:
        s = shape[:a] + [shape[a] * shape[a + 1]] + shape[a + 2:]
    else:      # the merged dim taken from the neighbours: s is x's shape with a+1 merged into a+2
        if nd < 3 or a + 2 >= nd:
            return None
        s = shape[:a + 1] + [shape[a + 1] * shape[a + 2]] + shape[a + 3:]
        if s[a] == shape[a] * shape[a + 1] and s[a + 1:] == shape[a + 2:]:
            return None
    return {"op": rng.choice(["sum", "mean", "amax"]), "x": x, "s": s, "a": a, "n": nd, "m": len(s)}


def reduce_view_merged(keepdim):
    def gen(rng):
        made = 0
        while made < 6:
            inst = _merged_view(rng)
            if inst is not None:
                made += 1
                yield inst
    gen.__name__ = f"reduce_view_merged_{keepdim}"
    return gen


def reduce_view_not_merged(keepdim):
    def gen(rng):
        made = 0
        while made < 3:
            inst = _merged_view(rng, merged=False)
            if inst is not None:
                made += 1
                yield inst
    gen.__name__ = f"reduce_view_not_merged_{keepdim}"
    return gen


def _topk_op(rng, n):
    k = rng.randint(0, n)
    return f"topk:{k}:{rng.randint(0, 1)}:{rng.randint(0, 1)}:{rng.randint(0, 1)}"


def _ties(rng, parts):
    """Parts with few distinct values (rows with equal entries: topk's choice among ties)."""
    return [p.round() if rng.random() < 0.7 else p for p in parts]


@repeat(8)
def rowwise_concat(rng):
    nd = rng.randint(2, 4)
    d = rng.randrange(nd - 1)
    l = _ties(rng, concat_parts(rng, nd, d))
    return {"op": _topk_op(rng, l[0].shape[-1]), "l": l, "d": d}


@repeat(4)
def rowwise_concat_last(rng):
    nd = rng.randint(1, 3)
    l = _ties(rng, concat_parts(rng, nd, nd - 1, parts=2))
    return {"op": f"topk:1:1:1:{rng.randint(0, 1)}", "l": l, "d": nd - 1}


@repeat(6)
def map_rowwise(rng):
    l = _ties(rng, concat_parts(rng, rng.randint(2, 3), 0))
    return {"op": _topk_op(rng, l[0].shape[-1]), "x": l[0], "r": l[1:]}


def _targets(rng, x, wrap=False):
    """Class ids of x's leading shape in [0, C) (or [-C, C): a pick wraps negative ids)."""
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    c = x.shape[-1]
    return torch.randint(-c if wrap else 0, c, tuple(x.shape[:-1]), generator=g)


@repeat(8)
def pick_concat_rows(rng):
    nd = rng.randint(2, 4)
    d = rng.randrange(nd - 1)
    l = concat_parts(rng, nd, d)
    wrap = rng.random() < 0.3
    return {"l": l, "m": [_targets(rng, p, wrap) for p in l], "d": d}


@repeat(6)
def zip_pick(rng):
    nd = rng.randint(2, 3)
    d = rng.randrange(nd - 1)
    l = concat_parts(rng, nd, d)
    m = [_targets(rng, p) for p in l]
    return {"a": l[0], "r1": l[1:], "b": m[0], "r2": m[1:], "d": d}


@repeat(3)
def zip_pick_misaligned(rng):
    """The first pair does not line up along d (rows 2 and 3): pick(a, b) is undefined."""
    nd = rng.randint(2, 3)
    d = rng.randrange(nd - 1)
    shape = [rng.randint(1, 3) for _ in range(nd)]
    shape[d] = 2
    a = tensor(rng, *shape)
    shape[d] = 3
    b = _targets(rng, tensor(rng, *shape))
    return {"a": a, "r1": [], "b": b, "r2": [], "d": d}


@repeat(8)
def cast_rmax_bool(rng):
    shape = [rng.randint(0, 3) for _ in range(rng.randint(0, 3))]
    t = rng.choice(["float16", "bfloat16", "float32", "float64"])
    return {"op": f"to_{t}", "l": [tensor(rng, *shape) > 0 for _ in range(rng.randint(1, 8))]}


def cast_rmax_float(rng):
    """What the condition refuses: float parts (only bool parts are asked for), a cast to an int, and
    an op that is not a cast (neg reverses the order: -max is not max of -)."""
    yield {"op": "to_float16", "l": [torch.tensor([0.5, -1.5]), torch.tensor([-0.5, 2.5])]}
    yield {"op": "to_int64", "l": [torch.tensor([True, False]), torch.tensor([False, False])]}
    yield {"op": "neg", "l": [torch.tensor([True, False]), torch.tensor([False, False])]}


def amax_dtype_terms(rng):
    """A max over dims keeps its operand's dtype (float, int or bool)."""
    x = tensor(rng, 2, 3)
    facts = [f'(= (dtype t) "{n}")' for n in ("float64", "int64", "bool")]
    for v in (x, x.to(torch.int64), x > 0):
        for dims, k in (([1], 1), ([0, 1], 0)):
            yield f'(reduce "amax" x {ilist(dims)} {k})', {"x": v}, facts


def _log_softmax_case(rng):
    nd = rng.randint(1, 3)
    shape = [rng.randint(1, 4) for _ in range(nd)]
    x = tensor(rng, *shape) * rng.choice([1.0, 5.0, 20.0])     # float64: the identity is a real one
    return {"x": x, "t": _targets(rng, x), "k": nd - 1, "f": "float64"}


@repeat(8)
def pick_log_softmax(rng):
    return _log_softmax_case(rng)


def pick_log_softmax_overflow(rng):
    """What the condition refuses, on a square x: the shift along dim 0 (each column's max) is not the
    picked row's; and with logits past exp's range (float64: 709), what the assumption excludes: the
    shifted form stays finite, exp(x) overflows."""
    for big in (0.0, 0.0, 1000.0):
        n = rng.randint(2, 4)
        x = tensor(rng, n, n) * 5.0 + big
        yield {"x": x, "t": (torch.arange(n) + 1) % n, "k": 0, "f": "float64"}


def _slots(rng, x, n):
    """Indices of x's shape in [0, n) (where a placement puts each of x's elements)."""
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    return torch.randint(0, n, tuple(x.shape), generator=g)


@repeat(8)
def place_concat_rows(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    n = rng.randint(1, 4)
    l = concat_parts(rng, nd, d)
    return {"l": l, "m": [_slots(rng, p, n) for p in l], "n": n, "d": d}


@repeat(6)
def zip_place(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    n = rng.randint(1, 4)
    l = concat_parts(rng, nd, d)
    m = [_slots(rng, p, n) for p in l]
    return {"a": l[0], "r1": l[1:], "b": m[0], "r2": m[1:], "n": n, "d": d}


@repeat(3)
def zip_place_misaligned(rng):
    """The first pair does not line up along d (2 and 3): place(a, b, n) is undefined."""
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    shape = [rng.randint(1, 3) for _ in range(nd)]
    shape[d] = 2
    a = tensor(rng, *shape)
    shape[d] = 3
    b = _slots(rng, tensor(rng, *shape), 2)
    return {"a": a, "r1": [], "b": b, "r2": [], "n": 2, "d": d}


def _softmax_case(rng):
    nd = rng.randint(1, 3)
    shape = [rng.randint(1, 4) for _ in range(nd)]
    x = tensor(rng, *shape) * rng.choice([1.0, 5.0, 20.0, 300.0])
    if rng.random() < 0.3:              # infinities: -inf logits, a +inf one (nan rows)
        x.view(-1)[rng.randrange(x.numel())] = rng.choice([float("-inf"), float("inf")])
    c = tensor(rng, *shape[:-1]) * rng.choice([1.0, 1e3])
    if rng.random() < 0.2:
        c.view(-1)[0] = rng.choice([float("inf"), float("nan"), 0.0])
    return {"x": x, "k": nd - 1, "s": shape[:-1] + [1], "f": "float64", "c": c, "m": nd - 1}


@repeat(10)
def exp_log_softmax(rng):
    return _softmax_case(rng)


def exp_log_softmax_int(rng):
    """Integer logits: x - max(x) wraps (int8: -128 - 1 is 127), exp overflows, inf / inf."""
    x = torch.tensor([[-128, 1]], dtype=torch.int8)
    yield {"x": x, "k": 1, "s": [1, 1], "f": "int8", "c": torch.ones(1), "m": 1}


@repeat(10)
def softmax_mul(rng):
    return _softmax_case(rng)


def softmax_mul_bad(rng):
    """A factor of another shape than the sums (broadcast against them, or more of them)."""
    for _ in range(3):
        inst = _softmax_case(rng)
        inst["c"] = tensor(rng, *(list(inst["c"].shape) + [2]))
        yield inst
    yield from exp_log_softmax_int(rng)


_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _amin_case(rng, empty=False):
    nd = rng.randint(1, 3)
    shape = [rng.randint(0, 3) for _ in range(nd)]
    d = rng.randrange(nd)
    shape[d] = 0 if empty else rng.randint(1, 4)
    b = tensor(rng, *shape) > (rng.choice([-3.0, 0.0]))     # often all true along d
    return {"op": f"to_{rng.choice(_FLOATS)}", "b": b, "d": d, "k": rng.randint(0, 1), "s": shape[d]}


@repeat(10)
def amin_cast_bool(rng):
    return _amin_case(rng)


def amin_cast_bool_bad(rng):
    """What the condition refuses: an empty reduced dim (min of nothing +inf, all of nothing 1), float
    values (min 0.5; all of nonzero values is 1), a cast to an int, and an op that is not a cast."""
    yield _amin_case(rng, empty=True)
    yield {"op": "to_float32", "b": torch.tensor([[0.5, 1.0]]), "d": 1, "k": 0, "s": 2}
    yield {"op": "to_int64", "b": torch.tensor([[True, False]]), "d": 1, "k": 0, "s": 2}
    yield {"op": "exp", "b": torch.tensor([[True, False]]), "d": 1, "k": 0, "s": 2}


def _count_case(rng, op=None, n=None):
    op = op or f"to_{rng.choice(_FLOATS)}"
    nd = rng.randint(1, 3)
    shape = [rng.randint(0, 3) for _ in range(nd)]
    d = rng.randrange(nd)
    shape[d] = rng.randint(0, 9) if n is None else n
    b = tensor(rng, *shape) > rng.choice([-3.0, 0.0])
    return {"op": op, "b": b, "d": d, "k": rng.randint(0, 1), "s": shape[d], "m": terms.FLOAT_EXACT.get(op, 0)}


@repeat(10)
def cast_count(rng):
    return _count_case(rng)


def cast_count_past_exact(rng):
    """Counts past the dtype's exact integers: 2 ** 8 + 1 ones in bfloat16 (257 is not a bfloat16), and
    an int mask (counts of ints are not counts of ones), a cast to an int, exp (not a cast)."""
    inst = _count_case(rng, "to_bfloat16", 2 ** 8 + 1)
    inst["b"] = torch.ones_like(inst["b"])
    yield inst
    yield {**_count_case(rng, "to_float32", 3), "b": torch.tensor([[2, 3, 4]])}
    yield {**_count_case(rng, "to_int32", 3), "m": 0}
    yield {**_count_case(rng, "exp", 3), "m": 0}


def _loss_targets(rng):
    n = rng.randint(0, 6)
    w = rng.randint(1, 5)
    c = rng.choice([-100, 0, w - 1])
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    return {"L": tensor(rng, n, w).to(getattr(torch, rng.choice(_FLOATS))),
            "t": torch.randint(0, w, (n,), generator=g), "c": c, "n": repr(float(n))}


def tcount_count(rng):
    for _ in range(8):
        inst = _loss_targets(rng)
        f = rng.choice(terms.FLOAT_DTYPES)
        inst["L"] = inst["L"].to(getattr(torch, f))
        yield {**inst, "f": f}


def tcount_count_bad(rng):
    """Log-probabilities of an int dtype (no float count), and a 0-D target (a loss over one row
    of log-probabilities: nothing to sum over)."""
    inst = _loss_targets(rng)
    yield {**inst, "L": (inst["L"] * 4).to(torch.int64), "f": "int64"}
    yield {"L": tensor(rng, 4).to(torch.float32), "t": torch.tensor(1), "c": 0, "n": "1.0", "f": "float32"}


@repeat(8)
def tpick_concat_rows(rng):
    nd = rng.randint(2, 3)
    d = rng.randrange(nd - 1)
    l = concat_parts(rng, nd, d)
    m = [_targets(rng, p) for p in l]
    return {"l": l, "m": m, "d": d, "c": rng.choice([-100, 0, 1])}


@repeat(6)
def zip_tpick(rng):
    inst = tpick_concat_rows(rng).__next__()
    l, m = inst["l"], inst["m"]
    return {"a": l[0], "r1": l[1:], "b": m[0], "r2": m[1:], "c": inst["c"], "d": inst["d"]}


@repeat(3)
def zip_tpick_misaligned(rng):
    inst = zip_pick_misaligned(rng).__next__()
    return {**inst, "c": 0}


def int_sum_dtype_terms(rng):
    """A sum of bools or ints is int64; of floats, their dtype (another rule's)."""
    x = tensor(rng, 2, 3)
    facts = [f'(= (dtype t) "{n}")' for n in ("float64", "int32", "int64", "bool")]
    for v in (x, x > 0, x.to(torch.int32), x.to(torch.int64)):
        for dims, k in (([1], 1), ([0, 1], 0)):
            yield f'(reduce "sum" x {ilist(dims)} {k})', {"x": v}, facts


def _drop_view_case(rng):
    nd = rng.randint(1, 4)
    shape = [rng.randint(0, 3) for _ in range(nd)]
    d = rng.randrange(nd)
    op = rng.choice(["sum", "mean", "amax"])
    if op == "amax":
        shape[d] = max(shape[d], 1)
    x = tensor(rng, *shape)
    if rng.random() < 0.3:
        x = (x * 3).round().to(rng.choice([torch.int64, torch.float16]))
        op = "sum" if op == "mean" else op
    s = list(shape)
    s[d] = 1
    return {"op": op, "x": x, "d": d, "s": s, "m": nd - 1}


@repeat(10)
def reduce_drop_view(rng):
    return _drop_view_case(rng)


def reduce_drop_view_bad(rng):
    """The 1 put at another place than the reduced dim, the other dims not kept (a transposed view),
    and a view that merges dims."""
    yield {"op": "sum", "x": tensor(rng, 2, 3), "d": 1, "s": [1, 2], "m": 1}
    yield {"op": "sum", "x": tensor(rng, 2, 3, 4), "d": 1, "s": [4, 1, 2], "m": 2}
    yield {"op": "amax", "x": tensor(rng, 2, 3, 4), "d": 2, "s": [6, 1], "m": 2}
    yield {"op": "mean", "x": tensor(rng), "d": 0, "s": [1], "m": 0}


def _tslots(rng, x, n, c):
    """Targets of x's shape in [0, n), about a quarter of them the ignore index c."""
    t = _slots(rng, x, n)
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    return t.masked_fill(torch.rand(tuple(x.shape), generator=g) < 0.25, c)


@repeat(8)
def tplace_concat_rows(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    n = rng.randint(1, 4)
    c = rng.choice([-100, 0, n - 1])
    l = concat_parts(rng, nd, d)
    return {"l": l, "m": [_tslots(rng, p, n, c) for p in l], "c": c, "n": n, "d": d}


@repeat(6)
def zip_tplace(rng):
    inst = next(tplace_concat_rows(rng))
    l, m = inst["l"], inst["m"]
    return {"a": l[0], "r1": l[1:], "b": m[0], "r2": m[1:], "c": inst["c"], "n": inst["n"], "d": inst["d"]}


def zip_tplace_misaligned(rng):
    """The first pair does not line up along d (2 and 3): tplace(a, b, c, n) is undefined."""
    for inst in zip_place_misaligned(rng):
        yield {**inst, "c": 0}


# -- a scaled softmax, shifted by the row max or not (softmax-mul-unshifted: no_exp_overflow)

def _unshifted_case(rng, big=0.0):
    nd = rng.randint(1, 3)
    shape = [rng.randint(1, 4) for _ in range(nd)]
    x = tensor(rng, *shape) * rng.choice([1.0, 5.0, 20.0]) + big     # float64: exp finite below 709
    c = tensor(rng, *shape[:-1]) * rng.choice([1.0, 1e3])
    return {"x": x, "k": nd - 1, "s": shape[:-1] + [1], "f": "float64", "c": c, "m": nd - 1}


@repeat(10)
def softmax_mul_unshifted(rng):
    return _unshifted_case(rng)


def softmax_mul_unshifted_bad(rng):
    """What the condition refuses: the sums along dim 0 of a square x, viewed as a column, meet other
    rows' maxima, and so do sums viewed with two trailing 1s; with logits past exp's range (float64:
    709), what the assumption excludes too: the shifted form stays finite, exp(x) overflows."""
    for big in (0.0, 1000.0):
        n = rng.randint(2, 4)
        x = tensor(rng, n, n) * 5.0 + big
        yield {"x": x, "k": 0, "s": [n, 1], "f": "float64", "c": tensor(rng, n), "m": 1}
    # the sums viewed with two trailing 1s: [n, 1, 1] against x [n, n] pairs every row's sum with
    # every row
    n = rng.randint(2, 4)
    yield {"x": tensor(rng, n, n) * 5.0, "k": 1, "s": [n, 1, 1], "f": "float64", "c": tensor(rng, n), "m": 1}


# the reduction class's table rows (COMBINE_OVER_PARTS; registry/reduction.py): log-sum-exp
lse_concat_with_d = _gen(8, ["logsumexp"], True)
lse_concat_other = _gen(4, ["logsumexp"], False)


def _norm_case(rng, nd=None):
    nd = rng.randint(0, 4) if nd is None else nd
    shape = [rng.choice([0, 1, 2, 3, 4]) for _ in range(nd)]
    dims = sorted(rng.sample(range(max(nd, 1)), rng.randint(1, max(nd, 1))))
    x = tensor(rng, *shape).to(rng.choice([torch.float64, torch.float64, torch.float32]))
    return {"x": x, "dims": dims, "k": rng.randint(0, 1), "t": str(x.dtype).removeprefix("torch.")}


@repeat(10)
def norm_pow(rng):
    p = rng.choice(["1.0", "2.0", "3.0", "0.5", "1.5", "4.0"])
    return {**_norm_case(rng), "op": f"norm:{p}", "p": p}


def norm_pow_bad(rng):
    """an order 0 (a count), inf (a max), a negative one, a pow of another order, not a norm, ints."""
    for op, p in (("norm:0.0", "0.0"), ("norm:inf", "inf"), ("norm:-1.0", "-1.0"), ("norm:2.0", "3.0"),
                  ("sum", "2.0"), ("amax", "1.0")):
        yield {**_norm_case(rng, 2), "op": op, "p": p}
    yield {"x": torch.ones(2, 3, dtype=torch.int64), "dims": [0], "k": 0, "t": "int64", "op": "norm:2.0", "p": "2.0"}


@repeat(8)
def abs_norm(rng):
    case = _norm_case(rng)
    ops = ["norm:2.0", "norm:1.0", "norm:0.0", "norm:3.0"]
    if case["x"].numel():       # torch has no inf or negative norm of nothing
        ops += ["norm:inf", "norm:-1.0", "norm:-inf"]
    return {**case, "op": rng.choice(ops)}


def abs_not_norm(rng):
    for op in ("sum", "amax", "logsumexp", "mean"):
        yield {**_norm_case(rng, 2), "op": op}


def _unsqueezed(rng, op):
    nd = rng.randint(0, 3)
    shape = [rng.randint(0, 4) for _ in range(nd)]
    d = rng.randint(0, nd)
    x = tensor(rng, *shape).to(rng.choice([torch.float64, torch.float32]))
    s = shape[:d] + [1] + shape[d:]
    return {"op": op, "x": x, "s": s, "d": d, "m": nd, "t": str(x.dtype).removeprefix("torch.")}


@repeat(10)
def reduce_unsqueezed(rng):
    return _unsqueezed(rng, rng.choice(["sum", "mean", "amax", "logsumexp"]))


def reduce_unsqueezed_bad(rng):
    """a norm (|x|), a variance (0), nansum (0 at a nan), an int sum (int64), a dim not of size 1."""
    for op in ("norm:2.0", "var:1.0", "nansum", "amin", "prod"):
        yield _unsqueezed(rng, op)
    yield {"op": "sum", "x": torch.ones(2, 3, dtype=torch.int32), "s": [2, 1, 3], "d": 1, "m": 2, "t": "int32"}
    yield {"op": "sum", "x": tensor(rng, 2, 3), "s": [1, 2, 3], "d": 1, "m": 2, "t": "float64"}


@repeat(8)
def norm_any(rng):
    return _norm_case(rng)


def norm_inf(rng):
    """x of some elements in every reduced dim: torch has no inf-norm of nothing."""
    made = 0
    while made < 8:
        case = _norm_case(rng)
        if all(case["x"].shape[d] for d in case["dims"] if d < case["x"].dim()) and case["x"].numel():
            made += 1
            yield case


def norm_inf_int(rng):
    """ints: torch's norms take none (the amax of |x| would be an int)."""
    yield {"x": torch.tensor([[1, -3], [2, 0]]), "dims": [0, 1], "k": 0, "t": "int64"}
