"""Instances of the indexing lemmas (entangle_py/lemmas/indexing.py): table lookups, their masked forms and
the embedding backward (scatters)."""
from __future__ import annotations

from entangle_py.lazy import torch

from lemma_instances.common import concat_parts, repeat, shard_count, tensor


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


@repeat(8)
def take_concat_ids(rng):
    """A table (2-D, or 1-D: a lookup of scalars) at ids cut along one of their dims in 1-8 uneven
    parts, negatives among them."""
    n = rng.randint(1, 9)
    W = tensor(rng, n, rng.randint(1, 4)) if rng.random() < 0.8 else tensor(rng, n)
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    base = [rng.randint(1, 3) for _ in range(nd)]
    parts = []
    for _ in range(shard_count(rng)):
        s = list(base)
        s[d] = rng.randint(0, 3)        # an empty part too
        parts.append(_ids(rng, s, -n, n))
    return {"W": W, "l": parts, "d": d}


@repeat(4)
def map_take_ids(rng):
    n = rng.randint(1, 6)
    return {"W": tensor(rng, n, 2), "x": _ids(rng, _lead(rng), -n, n), "r": [_ids(rng, [2], 0, n)]}


def map_take_ids_nil(rng):
    return [{"W": tensor(rng, 3, 2)}]


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
