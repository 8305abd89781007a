"""Instances of the movement lemmas (entangle_py/lemmas/movement.py): expands of a concat, concat
interchange and nesting."""
from __future__ import annotations

from entangle_py.lazy import torch

from lemma_instances.common import dlist, repeat, tensor
from lemma_instances.movement_slices import _total, sizes_on


# ----------------------------------------------------------------------------- expand of a concat

def _expand_concat_instance(rng, keep_axis=True):
    """Parts of a concat along d; s expands the concat (leading dims added, size-1 dims broadcast),
    keeping its size on d (keep_axis) or broadcasting a size-1 axis (not keep_axis)."""
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    base = [rng.choice([1, 1, 2, 3]) for _ in range(nd)]
    sizes = sizes_on(rng, rng.randint(1, 5), lo=0 if keep_axis else 1, hi=3) if keep_axis else [1]
    l = []
    for k in sizes:
        s = list(base)
        s[d] = k
        l.append(tensor(rng, *s))
    full = list(base)
    full[d] = _total(l, d)
    lead = [rng.randint(1, 3) for _ in range(rng.randint(0, 2))]
    s = lead + [v if (v != 1 or i == d) else rng.randint(1, 3) for i, v in enumerate(full)]
    if not keep_axis:
        s[len(lead) + d] = rng.randint(2, 4)
    return {"x": l[0], "r": l[1:], "s": s, "d": d, "n": nd, "m": len(s), "j": d + len(lead)}


@repeat(8)
def expand_concat(rng):
    return _expand_concat_instance(rng)


@repeat(4)
def expand_concat_axis(rng):
    """A size-1 concat axis broadcast by the expand: the parts cannot be expanded alike."""
    return _expand_concat_instance(rng, keep_axis=False)


@repeat(4)
def map_expand_at(rng):
    x = tensor(rng, 2, rng.randint(1, 3), 1)
    return {"x": x, "r": [tensor(rng, 2, 2, 1)], "s": [2, 99, 4], "d": 1, "j": 1, "v": x.shape[1]}


def map_expand_at_bad(rng):
    return [{"x": tensor(rng, 2, 3, 1), "r": [], "s": [2, 3, 4], "d": 1, "j": 1, "v": 2}]


def _expand_split_instance(rng, ok=True):
    """x with a size-1 dim (at j of the expanded shape s, after leading dims) expanded to p = k q
    there; t: s with q there (a smaller expand of x).  Not ok: the dim of x is not 1, p is not a
    multiple of q, or q is not below p."""
    nd = rng.randint(1, 3)
    shape = [rng.choice([1, 2, 3]) for _ in range(nd)]
    i = rng.randrange(nd)
    shape[i] = 1
    lead = [rng.randint(1, 3) for _ in range(rng.randint(0, 2))]
    s = lead + [v if v != 1 else rng.randint(1, 3) for v in shape]
    j = len(lead) + i
    q, k = rng.randint(1, 3), rng.randint(2, 4)
    p = q * k
    how = None if ok else rng.choice(["dim", "multiple", "same"])
    if how == "dim":      # x is not broadcast there: its size is p already
        shape[i] = p
    elif how == "multiple":
        q = rng.randint(2, 3)
        p = q * k + 1
    elif how == "same":
        p = q
    s[j] = p
    t = list(s)
    t[j] = q
    x = tensor(rng, *shape)
    return {"x": x, "s": s, "t": t, "j": j, "q": q, "p": p, "k": p // q, "n": nd, "m": len(s)}


@repeat(8)
def expand_split(rng):
    return _expand_split_instance(rng)


@repeat(6)
def expand_split_bad(rng):
    return _expand_split_instance(rng, ok=False)


@repeat(4)
def repl_more(rng):
    return {"x": tensor(rng, *[rng.randint(1, 3) for _ in range(rng.randint(0, 3))]), "k": rng.randint(1, 5)}


def repl_zero(rng):
    return [{"x": tensor(rng, 2, 3), "k": 0}]


@repeat(4)
def expand_terms(rng):
    shape = [rng.choice([1, 2, 3]) for _ in range(rng.randint(0, 3))]
    lead = [rng.randint(1, 3) for _ in range(rng.randint(0, 2))]
    s = lead + [v if v != 1 else rng.randint(1, 3) for v in shape]
    return (f"(expand x {dlist(s)})", {"x": tensor(rng, *shape)})


# ----------------------------------------------------------------------------- concat interchange

def _interchange(rng, same=False, last=False):
    """Two concats along e of parts lining up on e, to be concatenated along d (d == e: same;
    last: d is the last dim)."""
    nd = rng.randint(1, 3) if same else rng.randint(2, 4)
    e = rng.randrange(nd - 1) if last else rng.randrange(nd)
    d = e if same else nd - 1 if last else rng.choice([i for i in range(nd) if i != e])
    base = [rng.randint(1, 3) for _ in range(nd)]
    es = sizes_on(rng, rng.randint(1, 4), lo=0, hi=3)
    da, db = rng.randint(0, 3), rng.randint(0, 3)
    l1, l2 = [], []
    for k in es:
        for lst, w in ((l1, da), (l2, db)):
            s = list(base)
            s[e] = k
            if not same:
                s[d] = w
            lst.append(tensor(rng, *s))
    return {"l1": l1, "l2": l2, "d": d, "e": e}


def _ab(inst):
    l1, l2 = inst.pop("l1"), inst.pop("l2")
    return {**inst, "a": l1[0], "r1": l1[1:], "b": l2[0], "r2": l2[1:]}


@repeat(8)
def concat_interchange(rng):
    return _ab(_interchange(rng))


def _nest(inst):
    l2 = inst.pop("l2")
    return {**inst, "r": [torch.cat(l2, inst["e"])]}


@repeat(6)
def concat_nest(rng):
    return _nest(_interchange(rng, last=True))


def concat_nest_bad(rng):
    """The same dim (d == e), or an outer concat along a dim that is not the last."""
    for _ in range(3):
        yield _nest(_interchange(rng, same=True))
    for _ in range(3):
        inst = _nest(_interchange(rng))
        if inst["d"] != inst["r"][0].dim() - 1:
            yield inst


def _nest_cst(rng, fit=True):
    """A concat_nest whose second part is a constant of the shape of a concat along e."""
    inst = _interchange(rng, last=True)
    l2 = inst.pop("l2")
    s = list(torch.cat(l2, inst["e"]).shape)
    if not fit:                 # one row more than the first concat's along e
        s[inst["e"]] += 1
    l1 = inst.pop("l1")
    return {**inst, "a": l1[0], "r1": l1[1:], "c": rng.choice(["-100", "0", "7"]), "s": s, "t": "int64"}


def _long(inst):
    return {**inst, "a": inst["a"].long(), "r1": [p.long() for p in inst["r1"]]}


@repeat(6)
def concat_nest_cst(rng):
    return _long(_nest_cst(rng))


@repeat(3)
def concat_nest_cst_bad(rng):
    return _long(_nest_cst(rng, fit=False))


@repeat(4)
def zip_concat(rng):
    inst = _interchange(rng)
    l1, l2 = inst.pop("l1"), inst.pop("l2")
    return {**inst, "a": l1[0], "r1": l1[1:], "b": l2[0], "r2": l2[1:]}


def zip_concat_misaligned(rng):
    return [{"a": tensor(rng, 2, 3), "r1": [], "b": tensor(rng, 2, 2), "r2": [], "d": 0, "e": 1}]


@repeat(3)
def concat_interchange_same(rng):
    return _ab(_interchange(rng, same=True))
