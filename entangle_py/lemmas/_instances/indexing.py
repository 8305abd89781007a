"""Instances of the indexing lemmas (entangle_py/lemmas/indexing.py): table lookups and their masked forms."""
from __future__ import annotations

from entangle_py.lazy import torch

from entangle_py.lemmas._instances import concat_parts, dlist, repeat, shard_count, tensor


def _ids(rng, shape, lo, hi):
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    return torch.randint(lo, hi, tuple(shape), generator=g, dtype=torch.int64)


def _lead(rng):
    return [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]


@repeat(8)
def take_valid(rng):
    n = rng.randint(1, 9)
    return {"W": tensor(rng, n, rng.randint(1, 4)), "ids": _ids(rng, _lead(rng), 0, n)}


@repeat(4)
def take_negative(rng):
    """Counterexample: negative ids wrap in W[ids] but are masked out of the masked lookup."""
    n = rng.randint(1, 9)
    ids = _ids(rng, _lead(rng), 0, n)
    ids.view(-1)[0] = -rng.randint(1, n)
    return {"W": tensor(rng, n, rng.randint(1, 4)), "ids": ids}


def _take_concat(rng, d):
    nd = rng.randint(2, 3)
    d = rng.randint(1, nd - 1) if d is None else d
    l = concat_parts(rng, nd, d)
    n = l[0].shape[0]
    ids = _ids(rng, _lead(rng) if rng.random() < 0.8 else [], -n, n)   # negatives wrap; 0-D ids too
    return {"x": l[0], "r": l[1:], "d": d, "ids": ids, "e": d + ids.dim() - 1}


@repeat(8)
def take_concat_other(rng):
    return _take_concat(rng, None)


@repeat(4)
def take_concat_rows(rng):
    """Parts along the looked-up rows (d = 0): each part would be looked up at ids of the whole."""
    return _take_concat(rng, 0)


@repeat(4)
def map_take(rng):
    l = concat_parts(rng, 2, 1)
    n = l[0].shape[0]
    return {"x": l[0], "r": l[1:], "ids": _ids(rng, _lead(rng), -n, n)}


def map_take_nil(rng):
    return [{"ids": _ids(rng, [3], 0, 4)}]


def _mtake_instance(rng):
    n = rng.randint(1, 9)
    lo = rng.randint(-4, 20)
    lead = _lead(rng)
    ids = _ids(rng, lead, lo - 6, lo + n + 6)        # many ids outside [lo, lo + n), some negative
    return {"W": tensor(rng, n, rng.randint(1, 4)), "ids": ids, "lo": lo, "hi": lo + n, "n": n,
            "s": lead + [1]}


@repeat(10)
def mtake_intro(rng):
    return _mtake_instance(rng)


def mtake_intro_bad(rng):
    for k in range(6):
        inst = _mtake_instance(rng)
        if k % 3 == 0:
            inst["hi"] = inst["hi"] + 1                         # the mask is not the rank's rows
        elif k % 3 == 1:
            inst["s"] = inst["s"][:-1]                          # the mask is not a trailing unsqueeze
        else:
            inst["W"] = tensor(rng, inst["n"], 2, 3)            # a table with more than one row dim
        yield inst


@repeat(8)
def mtake_concat(rng):
    l = concat_parts(rng, 2, 0)
    total = sum(p.shape[0] for p in l)
    lo = rng.randint(-5, 5)
    return {"l": l, "d": 0, "ids": _ids(rng, _lead(rng), lo - 4, lo + total + 4), "lo": lo}


def mtake_concat_bad(rng):
    """Parts along dim 1, or a bool table (its sum over ranks is undefined)."""
    for _ in range(3):
        inst = next(mtake_concat(rng))
        inst["d"] = 1
        yield inst
    inst = next(mtake_concat(rng))
    yield {**inst, "l": [p > 0 for p in inst["l"]]}


@repeat(6)
def map_mtake(rng):
    l = concat_parts(rng, 2, 0)
    lo = rng.randint(-5, 5)
    return {"x": l[0], "r": l[1:], "ids": _ids(rng, _lead(rng), lo - 3, lo + 12), "lo": lo, "n": l[0].shape[0]}


@repeat(3)
def map_mtake_bad(rng):
    inst = next(map_mtake(rng))
    inst["n"] += 1
    return inst


def _mpick_instance(rng):
    lead = _lead(rng)
    w = rng.randint(1, 9)
    lo = rng.randint(-4, 20)
    return {"L": tensor(rng, *lead, w), "t": _ids(rng, lead, lo - 6, lo + w + 6), "lo": lo, "hi": lo + w,
            "w": w, "k": len(lead) + 1}


@repeat(10)
def mpick_intro(rng):
    return _mpick_instance(rng)


@repeat(4)
def mpick_intro_bad(rng):
    inst = _mpick_instance(rng)
    inst["hi"] = inst["hi"] - 1
    return inst


@repeat(8)
def mpick_concat(rng):
    lead = _lead(rng)
    d = len(lead)
    l = [tensor(rng, *lead, rng.randint(1, 5)) for _ in range(shard_count(rng))]
    total = sum(p.shape[-1] for p in l)
    lo = rng.randint(-5, 5)
    return {"l": l, "d": d, "t": _ids(rng, lead, lo - 4, lo + total + 4), "lo": lo}


def mpick_concat_bad(rng):
    """Parts along a dim other than the last, or bool logits (their sum over ranks is undefined)."""
    for _ in range(3):
        lead = [rng.randint(2, 4), rng.randint(2, 4)]
        l = [tensor(rng, n, lead[1], 3) for n in (1, 2)]
        yield {"l": l, "d": 0, "t": _ids(rng, [3, lead[1]], 0, 3), "lo": 0}
    inst = next(mpick_concat(rng))
    yield {**inst, "l": [p > 0 for p in inst["l"]]}


@repeat(6)
def map_mpick(rng):
    lead = _lead(rng)
    l = [tensor(rng, *lead, rng.randint(1, 5)) for _ in range(rng.randint(1, 6))]
    lo = rng.randint(-5, 5)
    return {"x": l[0], "r": l[1:], "t": _ids(rng, lead, lo - 3, lo + 15), "lo": lo, "w": l[0].shape[-1],
            "k": len(lead) + 1}


@repeat(3)
def map_mpick_bad(rng):
    inst = next(map_mpick(rng))
    inst["w"] += 1
    return inst


@repeat(3)
def take_terms(rng):
    n = rng.randint(1, 5)
    w = tensor(rng, n, 3) if rng.random() < 0.5 else tensor(rng, n, 2, 3)
    return ("(take w i)", {"w": w, "i": _ids(rng, _lead(rng), 0, n)})


@repeat(3)
def mtake_terms(rng):
    n = rng.randint(1, 5)
    return ("(mtake w i 2)", {"w": tensor(rng, n, 3), "i": _ids(rng, _lead(rng), -3, 9)})


@repeat(3)
def pick_terms(rng):
    lead = _lead(rng)
    return ("(pick x i)", {"x": tensor(rng, *lead, 4), "i": _ids(rng, lead, 0, 4)})


@repeat(3)
def mpick_terms(rng):
    lead = _lead(rng)
    return ("(mpick x i 1)", {"x": tensor(rng, *lead, 4), "i": _ids(rng, lead, -2, 9)})


@repeat(2)
def iscalar_terms(rng):
    return ('(iscalar "sub" i 2)', {"i": _ids(rng, _lead(rng), -3, 9)})


@repeat(2)
def cst_terms(rng):
    return ('(cst "0.0" (DCons (DLit 2) (DCons (DLit 3) (DNil))) "float32")', {})



def map_mtake_nil(rng):
    return [{"ids": _ids(rng, [3], -2, 4), "lo": 1}]


def map_mpick_nil(rng):
    return [{"t": _ids(rng, [3], -2, 4), "lo": 1}]


# ----------------------------------------------------------------------------- embedding backward

def _rows(rng, ids):
    return tensor(rng, *ids.shape, rng.randint(1, 4))


@repeat(8)
def scatter_valid(rng):
    n = rng.randint(1, 9)
    ids = _ids(rng, _lead(rng), 0, n)
    return {"g": _rows(rng, ids), "ids": ids, "n": n}


@repeat(4)
def scatter_invalid(rng):
    """Counterexample: an id outside [0, n) (the plain scatter is undefined there)."""
    n = rng.randint(1, 9)
    ids = _ids(rng, _lead(rng), 0, n)
    ids.view(-1)[0] = rng.choice((-rng.randint(1, n), n + rng.randint(0, 3)))
    return {"g": _rows(rng, ids), "ids": ids, "n": n}


def _mscatter_instance(rng):
    inst = _mtake_instance(rng)
    return {"g": _rows(rng, inst["ids"]), "ids": inst["ids"], "lo": inst["lo"], "hi": inst["hi"], "n": inst["n"],
            "s": inst["s"]}


def mscatter_intro(rng):
    for k in range(10):
        yield _mscatter_instance(rng)
    yield from mscatter_intro_bcast(rng)


@repeat(3)
def mscatter_intro_bcast(rng):
    """The gradient broadcast against the mask (a row of its own per id): still exact."""
    inst = _mscatter_instance(rng)
    inst["g"] = tensor(rng, *([1] * rng.randint(0, inst["ids"].dim())), 3)
    return inst


def mscatter_intro_bad(rng):
    for k in range(6):
        inst = _mscatter_instance(rng)
        if k % 2 == 0:
            inst["hi"] = inst["hi"] + 1                         # the mask is not the rank's rows
        else:
            inst["s"] = inst["s"][:-1]                          # the mask is not a trailing unsqueeze
        yield inst


def _split_instance(rng):
    lo = rng.randint(-4, 6)
    n = rng.randint(2, 9)
    lo2 = lo + rng.randint(1, n - 1)
    ids = _ids(rng, _lead(rng), lo - 3, lo + n + 3)
    return {"g": _rows(rng, ids), "ids": ids, "lo": lo, "n": n, "lo2": lo2, "m": lo + n - lo2}


@repeat(8)
def mscatter_split(rng):
    return _split_instance(rng)


def mscatter_split_bad(rng):
    for k in range(4):
        inst = _split_instance(rng)
        if k % 2 == 0:
            inst["m"] += 1                                      # the block does not end where the rows do
        else:
            inst["lo2"], inst["m"] = inst["lo"], inst["n"]      # no split (the same block)
        yield inst


def _slice_instance(rng):
    inst = _split_instance(rng)
    a = rng.randint(0, inst["n"])
    return {**inst, "a": a, "b": rng.randint(a, inst["n"])}


@repeat(8)
def slice_mscatter(rng):
    return _slice_instance(rng)


def slice_mscatter_bad(rng):
    """Counterexamples: a window that starts before the rows or ends after them."""
    for k in range(4):
        inst = _slice_instance(rng)
        if k % 2 == 0:
            inst["a"] = -1                                  # a row before the block
        else:
            inst["b"] = inst["n"] + 1                       # a row past the block
        yield inst


def scatter_terms(rng):
    for _ in range(3):
        n = rng.randint(1, 5)
        ids = _ids(rng, _lead(rng), 0, n)
        g = _rows(rng, ids)
        yield (f"(scatter g i {n})", {"g": g, "i": ids})
        yield (f"(mscatter g i 2 {n})", {"g": g, "i": ids})


def place_terms(rng):
    """A pick's gradient: values placed at valid indices along a new last dim (0-D values too)."""
    for _ in range(3):
        n = rng.randint(1, 5)
        for lead in (_lead(rng), []):
            ids = _ids(rng, lead, 0, n)
            yield (f"(place v i {n})", {"v": tensor(rng, *ids.shape), "i": ids})


# -- plain picks with valid indices, a loss's target pick and count, picks through a broadcast op

def _pick_instance(rng):
    lead = _lead(rng)
    w = rng.randint(1, 9)
    return {"L": tensor(rng, *lead, w), "t": _ids(rng, lead, 0, w), "w": w}


@repeat(8)
def pick_valid(rng):
    return _pick_instance(rng)


@repeat(4)
def pick_negative(rng):
    """Counterexample: a negative index wraps in a pick but is masked out of the masked one."""
    inst = _pick_instance(rng)
    inst["t"].view(-1)[0] = -rng.randint(1, inst["w"])
    return inst


@repeat(8)
def tpick_valid(rng):
    inst = _pick_instance(rng)
    inst["c"] = rng.choice([-100, -1, -rng.randint(1, 20)])
    return inst


def tpick_ignored(rng):
    """Targets equal to the ignore index, a class: the loss reads zero, the pick the class (the
    condition c < 0 excludes it; a negative c on such targets is what the assumption excludes)."""
    for _ in range(4):
        inst = _pick_instance(rng)
        inst["c"] = rng.randrange(inst["w"])
        inst["t"].view(-1)[0] = inst["c"]
        yield inst


@repeat(8)
def tcount_div(rng):
    inst = _pick_instance(rng)
    inst["c"] = rng.choice([-100, -1])
    nd = inst["t"].dim()
    inst["dims"] = sorted(rng.sample(range(nd), rng.randint(1, nd)))
    inst["n"] = repr(float(inst["t"].numel()))
    inst["f"] = str(inst["L"].dtype).removeprefix("torch.")
    return inst


def tcount_div_bad(rng):
    """An ignore index that is a class and is among the targets (the condition excludes it); a
    half-precision count (2049 targets count 2048 in float16)."""
    for _ in range(4):
        inst = next(tcount_div(rng))
        inst["t"].view(-1)[0] = inst["c"] = 0
        yield inst
    yield {"L": tensor(rng, 2049, 3).half(), "t": torch.zeros(2049, dtype=torch.int64), "c": -100, "n": "2049.0",
           "dims": [0], "f": "float16"}


def _pick_bcast_instance(rng):
    lead = _lead(rng)
    w = rng.randint(1, 6)
    return {"a": tensor(rng, *lead, w), "y": tensor(rng, *lead), "s": lead + [1], "t": _ids(rng, lead, 0, w),
            "op": rng.choice(["sub", "add", "mul", "maximum"]), "k": len(lead) + 1}


@repeat(10)
def pick_bcast(rng):
    return _pick_bcast_instance(rng)


@repeat(4)
def pick_bcast_bad(rng):
    """a broadcast along a leading dim: a's is 1 where y's is not (the pick's index has y's shape,
    so the pick of a alone is undefined)."""
    inst = _pick_bcast_instance(rng)
    lead = list(inst["y"].shape)
    lead[0] += 1
    w = inst["a"].shape[-1]
    inst.update(a=tensor(rng, 1, *lead[1:], w), y=tensor(rng, *lead), s=lead + [1], t=_ids(rng, lead, 0, w))
    return inst


@repeat(3)
def tpick_terms(rng):
    lead = _lead(rng)
    return ("(tpick x i -100)", {"x": tensor(rng, *lead, 4), "i": _ids(rng, lead, 0, 4)})


@repeat(2)
def tcount_terms(rng):
    lead = _lead(rng)
    return ('(tcount x i -100 "")', {"x": tensor(rng, *lead, 4), "i": _ids(rng, lead, 0, 4)})


def pick_bsame_terms(rng):
    """(pick (binary op a (view y s)) t): (bsame a y i) exactly where a and y agree on i dims."""
    for a_shape, y_shape in (((2, 3, 4), (2, 3)), ((1, 3, 4), (2, 3)), ((2, 3, 4), (2, 1)), ((3, 5), (3,))):
        a, y = tensor(rng, *a_shape), tensor(rng, *y_shape)
        s = dlist(list(y_shape) + [1])
        lead = [max(p, q) for p, q in zip(a_shape[:-1], y_shape)]
        i = _ids(rng, lead, 0, a_shape[-1])
        yield (f'(pick (binary "sub" a (view y {s})) i)', {"a": a, "y": y, "i": i},
               [f"(bsame a y {i})" for i in range(len(y_shape) + 1)])


# -- a loss's target gradient (tplace) and its vocab-parallel blocks (mplace)

def _place_instance(rng, lo=0, spread=0):
    lead = _lead(rng)
    n = rng.randint(1, 7)
    return {"v": tensor(rng, *lead), "t": _ids(rng, lead, lo - spread, lo + n + spread), "n": n}


@repeat(8)
def tplace_valid(rng):
    inst = _place_instance(rng)
    inst["c"] = rng.choice([-100, -1, -rng.randint(1, 20)])
    return inst


def tplace_ignored(rng):
    """Targets equal to the ignore index, a class: the loss gradient's row is zero, the placement's
    is not (the condition c < 0 excludes it)."""
    for _ in range(4):
        inst = _place_instance(rng)
        inst["c"] = rng.randrange(inst["n"])
        inst["t"].view(-1)[0] = inst["c"]
        yield inst


@repeat(8)
def place_mplace(rng):
    return _place_instance(rng)


def _mplace_instance(rng):
    lead = _lead(rng)
    w = rng.randint(1, 7)
    lo = rng.randint(-4, 20)
    return {"v": tensor(rng, *lead), "t": _ids(rng, lead, lo - 6, lo + w + 6), "lo": lo, "hi": lo + w, "w": w}


def mplace_intro(rng):
    for _ in range(10):
        yield _mplace_instance(rng)
    for _ in range(3):           # the values broadcast against the targets (one gradient for all)
        inst = _mplace_instance(rng)
        inst["v"] = tensor(rng, *([1] * rng.randint(0, inst["t"].dim())))
        yield inst


@repeat(4)
def mplace_intro_bad(rng):
    inst = _mplace_instance(rng)
    inst["hi"] = inst["hi"] + rng.choice([-1, 1])              # the mask is not the rank's columns
    return inst


def _mplace_split_instance(rng):
    lo = rng.randint(-4, 6)
    n = rng.randint(2, 9)
    lo2 = lo + rng.randint(1, n - 1)
    lead = _lead(rng)
    return {"v": tensor(rng, *lead), "t": _ids(rng, lead, lo - 3, lo + n + 3), "lo": lo, "n": n, "lo2": lo2,
            "m": lo + n - lo2, "k": len(lead)}


@repeat(8)
def mplace_split(rng):
    return _mplace_split_instance(rng)


def mplace_split_bad(rng):
    for k in range(4):
        inst = _mplace_split_instance(rng)
        if k % 2 == 0:
            inst["m"] += 1                                      # the block does not end where the columns do
        else:
            inst["lo2"], inst["m"] = inst["lo"], inst["n"]      # no split (the same block)
        yield inst


def place_sum(rng):
    for _ in range(8):
        inst = _place_instance(rng)
        yield {**inst, "k": inst["v"].dim(), "f": "float64"}
    inst = _place_instance(rng)                                 # one value per row: 0-D values
    yield {"v": tensor(rng), "t": _ids(rng, [], 0, inst["n"]), "n": inst["n"], "k": 0, "f": "float64"}


def place_sum_bad(rng):
    """Integer values (a sum of int32 is int64) and a sum over another dim than the placed one."""
    for _ in range(2):
        inst = _place_instance(rng)
        yield {**inst, "v": (inst["v"] * 4).round().int(), "k": inst["v"].dim(), "f": "int32"}
        yield {**inst, "k": 0, "f": "float64"}


@repeat(8)
def tcount_div_any(rng):
    inst = next(tcount_div(rng))
    inst["x"] = tensor(rng, *_lead(rng)[: rng.randint(0, 2)])
    inst["f"] = "float64"
    return inst


def tcount_div_any_bad(rng):
    """A class among the targets as the ignore index; half-precision counts (2049 is 2048 in float16)."""
    for _ in range(2):
        inst = next(tcount_div_any(rng))
        inst["t"].view(-1)[0] = inst["c"] = 0
        yield inst
    t = torch.zeros(2049, dtype=torch.int64)
    yield {"L": tensor(rng, 2049, 3).half(), "t": t, "c": -100, "n": "2049.0", "x": tensor(rng, 3).half(),
           "f": "float16"}


def tplace_terms(rng):
    for _ in range(3):
        n = rng.randint(1, 5)
        for lead in (_lead(rng), []):
            ids = _ids(rng, lead, 0, n)
            yield (f"(tplace v i -100 {n})", {"v": tensor(rng, *ids.shape), "i": ids})
            yield (f"(mplace v i 2 {n})", {"v": tensor(rng, *ids.shape), "i": ids})
            yield (f"(place v i {n})", {"v": tensor(rng, *ids.shape).float(), "i": ids})


def _local_target_instance(rng, form, c=None, fill=None):
    """A rank's block [lo, lo + w) of w classes and its loss's local targets: t - lo where it owns
    t, the ignore index c elsewhere (fill: another value in its place)."""
    inst = _mpick_instance(rng)
    c = rng.choice([-100, -1, -7]) if c is None else c
    t = inst["t"]
    if rng.random() < 0.3:
        t = t.masked_fill(t == t.flatten()[0], c)     # targets at the ignore index too
    inst.update({"t": t, "c": c})
    if form == "where":
        inst.update({"v": str(fill if fill is not None else c), "s": list(t.shape), "f": "int64", "n": t.dim()})
    else:
        inst["op"] = "masked_fill:" + str(fill if fill is not None else c)
    return inst


def tpick_local(form):
    def gen(rng):
        for _ in range(8):
            yield _local_target_instance(rng, form)
    gen.__name__ = f"tpick_local_{form.replace('-', '_')}"
    return gen


def tpick_local_bad(form):
    """The foreign targets filled with a class (0: every rank picks its class 0) or with another
    value than the ignore index, a non-negative ignore index (it may be a local target), a block
    narrower than the mask's, and (where) a constant broadcasting t."""
    def gen(rng):
        yield _local_target_instance(rng, form, fill=0)
        yield _local_target_instance(rng, form, c=-100, fill=-1)
        yield _local_target_instance(rng, form, c=2, fill=2)
        inst = _local_target_instance(rng, form)
        inst["hi"] += 1
        yield inst
        if form == "where":
            inst = _local_target_instance(rng, form)
            inst["s"] = [2] + inst["s"]
            yield inst
    gen.__name__ = f"tpick_local_bad_{form.replace('-', '_')}"
    return gen


def itext_terms(rng):
    """The text and the masked_fill op of a loss's ignore index, asked by its target pick."""
    lead = _lead(rng)
    for c in (-100, 0, 3):
        facts = [f'(= (itext {c}) "{c}")', f'(= (fillop {c}) "masked_fill:{c}")',
                 f'(= (itext {c}) "{c}0")', f'(= (fillop {c}) "masked_fill:{c}.0")']
        yield (f"(tpick x i {c})", {"x": tensor(rng, *lead, 4), "i": _ids(rng, lead, 0, 4)}, facts)


def tplace_local(form):
    def gen(rng):
        for inst in tpick_local(form)(rng):
            yield _tplace_instance(inst)
    gen.__name__ = f"tplace_local_{form.replace('-', '_')}"
    return gen


def tplace_local_bad(form):
    def gen(rng):
        for inst in tpick_local_bad(form)(rng):
            yield _tplace_instance(inst)
    gen.__name__ = f"tplace_local_bad_{form.replace('-', '_')}"
    return gen


def _tplace_instance(inst):
    inst = dict(inst)
    L = inst.pop("L")
    inst.pop("k", None)
    if "v" in inst:                       # where: the constant's text is u, v the values
        inst["u"] = inst.pop("v")
    inst["v"] = L[..., 0] * 3
    return inst


# -- a placement is linear in its values (place-rsum)

@repeat(6)
def place_rsum(rng):
    inst = _place_instance(rng)
    v = inst["v"]
    return {"l": [v] + [tensor(rng, *v.shape) for _ in range(rng.randint(0, 3))], "i": inst["t"], "n": inst["n"]}


@repeat(4)
def map_place_each(rng):
    inst = _place_instance(rng)
    v = inst["v"]
    return {"x": v, "r": [tensor(rng, *v.shape) for _ in range(rng.randint(0, 3))], "i": inst["t"], "n": inst["n"]}


def map_place_each_nil(rng):
    inst = _place_instance(rng)
    yield {"i": inst["t"], "n": inst["n"]}


# ----------------------------------------------------------------------------- nonzero dispatch

_IPUT_DTYPES = ("float64", "float32", "int64")      # torch dtypes, by name


def _iput_env(rng, same=False, ndim_v=1):
    """A zero buffer [n, *rest] (``s``, ``t``), ids ``v`` (values -1..3, 1-D: one per row), two ids
    ``a`` != ``b`` (equal with ``same``) and the values written at each one's rows, of the rows'
    shape or broadcast to it."""
    n = rng.randint(0, 6)
    rest = [rng.randint(0, 3) for _ in range(rng.randint(0, 2))]
    dt = getattr(torch, rng.choice(_IPUT_DTYPES))
    v = _ids(rng, [n] if ndim_v == 1 else [n, 2], -1, 4)
    a = rng.randint(-1, 3)
    b = a if same else rng.choice([k for k in range(-1, 4) if k != a])

    def values(c):
        u = int((v == c).sum())
        shape = rng.choice([[u, 1] + rest, [1] + rest, rest])
        return (tensor(rng, *shape) * 4).to(dt)
    return {"s": [n] + rest, "t": str(dt).removeprefix("torch."), "v": v, "a": a, "b": b,
            "x": values(a), "y": values(b)}


@repeat(10)
def iput_disjoint(rng):
    return _iput_env(rng)


@repeat(4)
def iput_disjoint_bad(rng):
    """The same id twice (the second write replaces the first), or 2-D ids (a nonzero of 2
    columns indexes rows by both coordinates: positions repeat and overlap)."""
    return _iput_env(rng, same=True) if rng.random() < 0.5 else {**_iput_env(rng), "v": _ids(rng, [3, 2], -1, 4)}


@repeat(10)
def iput_rsum_disjoint(rng):
    env = _iput_env(rng)
    return {**env, "w": (tensor(rng, *env["s"]) * 4).to(getattr(torch, env["t"]))}


@repeat(4)
def iput_rsum_disjoint_bad(rng):
    env = _iput_env(rng, same=True) if rng.random() < 0.5 else {**_iput_env(rng), "v": _ids(rng, [3, 2], -1, 4)}
    return {**env, "w": (tensor(rng, *env["s"]) * 4).to(getattr(torch, env["t"]))}


@repeat(4)
def nonzero_terms(rng):
    shape = [rng.randint(0, 4) for _ in range(rng.randint(1, 3))]
    return ("(nonzero x)", {"x": _ids(rng, shape, 0, 2)})


@repeat(4)
def iput_terms(rng):
    n = rng.randint(1, 5)
    v = _ids(rng, [n], 0, 2)
    u = int((v == 1).sum())
    return ("(iput x (nonzero (iscalar \"eq\" v 1)) y)", {"x": tensor(rng, n, 3), "v": v, "y": tensor(rng, u, 1, 3)})


@repeat(6)
def add_iput(rng):
    env = _iput_env(rng)
    return {**env, "i": torch.nonzero(env["v"] == env["a"]), "j": torch.nonzero(env["v"] == env["b"])}


@repeat(8)
def take_iput_disjoint(rng):
    """x [n, *rest], y the values written at the rows where v is a, read at the rows where it is b."""
    env = _iput_env(rng)
    return {**env, "y": env["x"], "x": (tensor(rng, *env["s"]) * 4).to(getattr(torch, env["t"]))}


@repeat(4)
def take_iput_disjoint_bad(rng):
    env = _iput_env(rng, same=True)
    return {**env, "y": env["x"], "x": (tensor(rng, *env["s"]) * 4).to(getattr(torch, env["t"]))}


@repeat(3)
def add_iput_bad(rng):
    """A bool buffer: two writes added are a logical or, and a sum over ranks of bools is undefined."""
    env = next(add_iput(rng))
    return {**env, "t": "bool", "x": env["x"] > 0, "y": env["y"] > 0}


def _scatter_pair(rng, widths, dtypes):
    n = rng.randint(1, 6)
    env = {"n": n}
    for (g, ids), w, dt in zip((("a", "i"), ("b", "j")), widths, dtypes):
        lead = [rng.randint(0, 4) for _ in range(rng.randint(1, 2))]
        env[ids] = _ids(rng, lead, 0, n)
        env[g] = (tensor(rng, *lead, w) * 4).to(dt)
    env["t"], env["w"] = str(dtypes[0]).removeprefix("torch."), widths[0]
    return env


@repeat(8)
def add_scatter(rng):
    w = rng.randint(0, 3)
    dt = getattr(torch, rng.choice(_IPUT_DTYPES))
    return _scatter_pair(rng, (w, w), (dt, dt))


@repeat(4)
def add_scatter_bad(rng):
    """Widths 1 and 3 (the add broadcasts), two dtypes (it promotes), or bool rows (a logical or)."""
    k = rng.randrange(3)
    if k == 0:
        return _scatter_pair(rng, (1, 3), (torch.float64, torch.float64))
    if k == 1:
        return _scatter_pair(rng, (2, 2), (torch.float32, torch.float64))
    env = _scatter_pair(rng, (2, 2), (torch.int64, torch.int64))
    return {**env, "a": env["a"] > 0, "b": env["b"] > 0, "t": "bool"}


def _rsum_scatter(rng, width_off=0, dtypes=None):
    n, w = rng.randint(1, 6), rng.randint(0, 3)
    dt, dt_b = dtypes or (getattr(torch, rng.choice(_IPUT_DTYPES)),) * 2
    lead = [rng.randint(0, 4) for _ in range(rng.randint(1, 2))]
    j = _ids(rng, lead, 0, n)
    return {"l": [(tensor(rng, n, w) * 4).to(dt) for _ in range(rng.randint(1, 4))], "n": n, "j": j,
            "b": (tensor(rng, *lead, w + width_off) * 4).to(dt_b), "t": str(dt).removeprefix("torch."),
            "w": w}


@repeat(8)
def add_rsum_scatter(rng):
    return _rsum_scatter(rng)


@repeat(4)
def add_rsum_scatter_bad(rng):
    """A table of another width (the add broadcasts a width-1 one) or dtype (it promotes)."""
    if rng.random() < 0.5:
        env = _rsum_scatter(rng)
        return {**env, "l": [x[:, :1] for x in env["l"]], "w": 1} if env["w"] != 1 else {**env, "l": [x[:, :0] for x in env["l"]], "w": 0}
    return _rsum_scatter(rng, dtypes=(torch.float32, torch.float64))


def _scatter_concat(rng, along_last=True):
    """Rows of a gradient (ids' shape plus a width) split along the width, or along a leading dim."""
    n = rng.randint(1, 6)
    lead = [rng.randint(1, 4) for _ in range(rng.randint(1, 2))]
    ids = _ids(rng, lead, 0, n)
    d = len(lead) if along_last else rng.randrange(len(lead))
    parts = []
    for _ in range(rng.randint(1, 4)):
        shape = lead + [rng.randint(0, 3)]
        if not along_last:
            shape = lead + [2]
        parts.append(tensor(rng, *shape))
    return {"x": parts[0], "r": parts[1:], "d": d, "ids": ids, "n": n}


@repeat(8)
def scatter_concat_last(rng):
    return _scatter_concat(rng)


@repeat(4)
def scatter_concat_lead(rng):
    """Split along a dim of the ids (each part's rows would be added at the ids of the whole)."""
    return _scatter_concat(rng, along_last=False)


@repeat(4)
def map_scatter(rng):
    env = _scatter_concat(rng)
    return {"x": env["x"], "r": env["r"], "ids": env["ids"], "n": env["n"]}


def map_scatter_nil(rng):
    return [{"ids": _ids(rng, [3], 0, 4), "n": 4}]


@repeat(10)
def mtake_intro_clamp(rng):
    """Ids around the block [lo, lo + n) (many outside, some negative), the clamp text of n rows."""
    inst = _mtake_instance(rng)
    return {**inst, "op": f"clamp.default(_, 0, {inst['n'] - 1})"}


def mtake_intro_clamp_bad(rng):
    """A clamp past the table's last row (an own id still wraps... or reads past it), a block that
    is not the table's rows, a mask that is not a trailing unsqueeze."""
    for k in range(6):
        inst = next(mtake_intro_clamp(rng))
        if k % 3 == 0:
            inst["op"] = f"clamp.default(_, 0, {inst['n']})"
        elif k % 3 == 1:
            inst["hi"] = inst["hi"] - 1                          # the block's last id masked
        else:
            inst["s"] = inst["s"][:-1]
        yield inst


def clampop_terms(rng):
    """The clamp text of a table's rows, asked by a lookup at shifted ids."""
    for n in (1, 4, 9):
        lead = _lead(rng)
        facts = [f'(= (clampop {n}) "clamp.default(_, 0, {n - 1})")', f'(= (clampop {n}) "clamp.default(_, 0, {n})")']
        yield (f'(take W (unary "clamp.default(_, 0, {n - 1})" (iscalar "sub" ids 3)))',
               {"W": tensor(rng, n, 2), "ids": _ids(rng, lead, 3, 3 + n)}, facts)
