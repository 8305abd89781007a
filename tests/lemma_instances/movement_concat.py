"""Instances of the movement lemmas (entangle_py/lemmas/movement.py): expands of a concat, concat
interchange and nesting."""
from __future__ import annotations

from entangle_py.lazy import torch

from lemma_instances.common import concat_parts, dlist, repeat, tensor
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


def _more(rng, inst, k):
    """k - 2 more concats along e of parts lining up with l1's (uneven widths along d, some empty),
    as the tensors r3; q: the first column's blocks after a and b (the trigger's list)."""
    d, e, l1 = inst["d"], inst["e"], inst["l1"]
    more = []
    for _ in range(k - 2):
        w = rng.randint(0, 3)
        parts = [tensor(rng, *[w if i == d else n for i, n in enumerate(p.shape)]) for p in l1]
        more.append(parts)
    return {**_ab(inst), "r3": [torch.cat(m, e) for m in more], "q": [m[0] for m in more]}


def _abc(inst):
    """The third concat's parts as c r3, the ones after it r4."""
    r3 = inst.pop("r3")
    e = inst["e"]
    sizes = [int(p.shape[e]) for p in [inst["a"]] + inst["r1"]]
    third = list(torch.split(r3[0], sizes, e))
    return {**inst, "c": third[0], "r3": third[1:], "r4": r3[1:]}


@repeat(10)
def concat_interchange_more(rng):
    return _abc(_more(rng, _interchange(rng), rng.randint(3, 8)))


@repeat(6)
def zip_concat_fold(rng):
    """acc: the blocks of the first concats (one per part along e), b r2: the parts of the next
    concat along e, r: the concats after it."""
    inst = _more(rng, _interchange(rng), rng.randint(2, 6))
    acc = [torch.cat([a, b], inst["d"]) for a, b in zip([inst["a"]] + inst["r1"], [inst["b"]] + inst["r2"])]
    r3 = inst["r3"]
    if not r3:
        return None
    e = inst["e"]
    first = list(torch.split(r3[0], [int(p.shape[e]) for p in acc], e))
    return {"l": acc, "b": first[0], "r2": first[1:], "r": r3[1:], "d": inst["d"], "e": e}


@repeat(3)
def zip_concat_fold_nil(rng):
    inst = _interchange(rng)
    return {"l": inst["l1"], "d": inst["d"], "e": inst["e"]}


def _nest(inst):
    l2 = inst.pop("l2")
    return {**inst, "r": [torch.cat(l2, inst["e"])]}


@repeat(6)
def concat_nest(rng):
    return _nest(_interchange(rng, last=True))


def _nest_more(rng, last):
    """A concat along d (the last dim or not) of a concat along e and two or more tensors."""
    while True:
        inst = _interchange(rng)
        n = inst["l1"][0].dim()
        if (inst["d"] == n - 1) == last:
            break
    inst = _more(rng, inst, rng.randint(3, 6))
    return {"l1": [inst["a"]] + inst["r1"], "y": torch.cat([inst["b"]] + inst["r2"], inst["e"]), "z": inst["r3"][0],
            "r": inst["r3"][1:], "d": inst["d"], "e": inst["e"]}


@repeat(6)
def concat_nest_more(rng):
    return _nest_more(rng, last=False)


def concat_nest_more_bad(rng):
    """The same dim (d == e); the last dim (concat-nest's)."""
    for _ in range(3):
        inst = _nest_more(rng, last=False)
        yield {**inst, "d": inst["e"]}
        yield _nest_more(rng, last=True)


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


def _misalign(rng, inst):
    """b r2 regrouped: the second concat's first two parts joined, or its first part cut in two
    (its parts no longer line up with a r1's)."""
    e, parts = inst["e"], [inst["b"]] + inst["r2"]
    if len(parts) > 1:
        parts = [torch.cat(parts[:2], e)] + parts[2:]
    else:
        parts = [parts[0], parts[0].narrow(e, 0, 0)] if parts[0].shape[e] == 0 else \
            list(torch.split(parts[0], [1, parts[0].shape[e] - 1], e))
    return {**inst, "b": parts[0], "r2": parts[1:]}


def concat_interchange_more_bad(rng):
    """The same dim (d == e); parts that do not line up along e."""
    for _ in range(3):
        inst = _abc(_more(rng, _interchange(rng), rng.randint(3, 5)))
        yield {**inst, "d": inst["e"]}
    for _ in range(3):
        yield _misalign(rng, _abc(_more(rng, _interchange(rng), rng.randint(3, 5))))


@repeat(4)
def map_ccol(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    l = concat_parts(rng, nd, rng.randrange(nd))
    return {"x": l[0], "r": l[1:], "d": d}


def _ccol_pair(rng):
    """Columns (each already the concat of 1-3 blocks along d) and blocks lining up with them on e."""
    inst = _interchange(rng)
    d, e = inst["d"], inst["e"]
    cols = []
    for a in inst["l1"]:
        cols.append([a] + [tensor(rng, *[rng.randint(0, 2) if i == d else n for i, n in enumerate(a.shape)])
                           for _ in range(rng.randint(0, 2))])
    return cols, inst["l2"], d, e


@repeat(6)
def zip_ccol(rng):
    cols, l2, d, e = _ccol_pair(rng)
    return {"la": cols[0], "r1": [torch.cat(c, d) for c in cols[1:]], "b": l2[0], "r2": l2[1:], "d": d, "e": e}


def zip_ccol_misaligned(rng):
    for inst in zip_ccol(rng):
        b = inst["b"]
        yield {**inst, "b": torch.cat([b, b.narrow(inst["e"], 0, min(1, b.shape[inst["e"]]))], inst["e"])
               if b.shape[inst["e"]] else tensor(rng, *[1 if i == inst["e"] else n for i, n in enumerate(b.shape)])}


@repeat(4)
def unccol(rng):
    cols, _, d, _ = _ccol_pair(rng)
    return {"la": cols[0], "r": [torch.cat(c, d) for c in cols[1:]], "d": d}


def ccol_terms(rng):
    """A column of 1-3 blocks: its dims but the axis are its first block's (true), not one more."""
    for _ in range(4):
        cols, _, d, e = _ccol_pair(rng)
        col = cols[0]
        env = {f"a{i}": x for i, x in enumerate(col)}
        t = f"(ccol {' '.join(f'(Cons a{i}' for i in range(len(col)))} (Nil){')' * len(col)} {d})"
        v = int(col[0].shape[e])
        yield t, env, [f"(= (dim t {e}) (DLit {v}))", f"(= (dim t {e}) (DLit {v + 1}))", f"(= (ndim t) {col[0].dim()})"]


def zip_concat_fold_misaligned(rng):
    for inst in zip_concat_fold(rng):
        yield _misalign(rng, inst)


def concat_nest_zip_terms(rng):
    """A concat_nest and a zip_concat_fold of concats along e whose parts line up with the first
    list's or not (regrouped): (zipok l1 l2 e e) true exactly when they do."""
    for k in range(4):
        inst = _abc(_more(rng, _interchange(rng), 3))
        if k % 2:
            inst = _misalign(rng, inst)
        l1, l2 = [inst["a"]] + inst["r1"], [inst["b"]] + inst["r2"]
        env = {**{f"a{i}": x for i, x in enumerate(l1)}, **{f"b{i}": x for i, x in enumerate(l2)}, "c": inst["r4"][0]
               if inst["r4"] else torch.cat([inst["c"]] + inst["r3"], inst["e"])}
        t1 = " ".join(f"(Cons a{i}" for i in range(len(l1))) + " (Nil)" + ")" * len(l1)
        t2 = " ".join(f"(Cons b{i}" for i in range(len(l2))) + " (Nil)" + ")" * len(l2)
        d, e = inst["d"], inst["e"]
        rest = f"(Cons (concat {t2} {e}) (Cons c (Nil)))"
        facts = [f"(zipok {t1} {t2} {e} {e})"]
        yield f"(concat_nest {t1} {rest} {d} {e})", env, facts
        yield f"(zip_concat_fold {t1} {rest} {d} {e})", env, facts


# ----------------------------------------------------------------------------- zero padding
