"""Instances of the indexing lemmas (entangle_py/lemmas/indexing.py): picks with valid indices, a loss's
target pick, count and gradient (places)."""
from __future__ import annotations

from entangle_py.lazy import torch

from lemma_instances.common import dlist, repeat, tensor
from lemma_instances.indexing_take import _ids, _lead, _mpick_instance


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
