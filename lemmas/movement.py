"""Data movement: slice / concat / transpose algebra."""
from entangle_py.lemma import Lemma
from lemmas._instances import concat_parts, repeat, tensor


@repeat(6)
def _transpose_concat(rng):
    nd = rng.randint(2, 4)
    d = rng.randrange(nd)
    a, b = rng.sample(range(nd), 2)
    return {"l": concat_parts(rng, nd, d), "d": d, "a": min(a, b), "b": max(a, b)}


def _with(cond):
    """Instances of _transpose_concat filtered to those satisfying ``cond``."""
    def gen(rng):
        n = 0
        while n < 6:
            inst = next(_transpose_concat(rng))
            if cond(inst):
                n += 1
                yield inst
    return gen


def _without(cond):
    return _with(lambda i: not cond(i))


@repeat(6)
def _slice_first(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    l = concat_parts(rng, nd, d, parts=rng.randint(1, 6))
    n = l[0].shape[d]
    s = rng.randint(0, n - 1)
    e = rng.randint(s, n)
    return {"x": l[0], "r": l[1:], "d": d, "s": s, "e": e, "n": n}


@repeat(6)
def _slice_rest(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    l = concat_parts(rng, nd, d, parts=rng.randint(2, 6))
    n = l[0].shape[d]
    total = sum(p.shape[d] for p in l)
    s = rng.randint(n, total - 1)
    e = rng.randint(s, total)
    return {"x": l[0], "y": l[1], "r": l[2:], "d": d, "s": s, "e": e, "n": n}


@repeat(4)
def _slice_straddling(rng):
    """A slice that crosses the first part's end: neither slice lemma may fire."""
    d = 0
    l = concat_parts(rng, 1, d, parts=3)
    n = l[0].shape[0]
    return {"x": l[0], "y": l[1], "r": l[2:], "d": d, "s": n - 1 if n > 0 else 0, "e": n + 1, "n": n}


@repeat(6)
def _full_slice(rng):
    nd = rng.randint(1, 3)
    x = tensor(rng, *[rng.randint(1, 5) for _ in range(nd)])
    d = rng.randrange(nd)
    return {"x": x, "d": d, "n": x.shape[d]}


@repeat(4)
def _partial_slice(rng):
    x = tensor(rng, rng.randint(2, 5), 3)
    return {"x": x, "d": 0, "n": x.shape[0] - 1}


@repeat(4)
def _single(rng):
    nd = rng.randint(1, 3)
    return {"x": tensor(rng, *[rng.randint(1, 4) for _ in range(nd)]), "d": rng.randrange(nd)}


@repeat(4)
def _transpose_twice(rng):
    nd = rng.randint(2, 4)
    a, b = sorted(rng.sample(range(nd), 2))
    return {"x": tensor(rng, *[rng.randint(1, 4) for _ in range(nd)]), "a": a, "b": b}


@repeat(4)
def _map_transpose(rng):
    nd = rng.randint(2, 3)
    a, b = sorted(rng.sample(range(nd), 2))
    l = concat_parts(rng, nd, 0)
    return {"x": l[0], "r": l[1:], "a": a, "b": b}


LEMMAS = [
    # transpose(concat(parts, d)) = concat(transpose(parts), d') with d' the image of d
    Lemma("transpose-concat-a", "(transpose (concat l d) a b)", "(concat (map_transpose l a b) b)",
          when=("(= d a)",), instances=_with(lambda i: i["d"] == i["a"]),
          rejects=_without(lambda i: i["d"] == i["a"])),
    Lemma("transpose-concat-b", "(transpose (concat l d) a b)", "(concat (map_transpose l a b) a)",
          when=("(= d b)",), instances=_with(lambda i: i["d"] == i["b"]),
          rejects=_without(lambda i: i["d"] == i["b"])),
    Lemma("transpose-concat-other", "(transpose (concat l d) a b)", "(concat (map_transpose l a b) d)",
          when=("(!= d a)", "(!= d b)"), instances=_with(lambda i: i["d"] not in (i["a"], i["b"])),
          rejects=_with(lambda i: i["d"] in (i["a"], i["b"]))),
    Lemma("map-transpose-nil", "(map_transpose (Nil) a b)", "(Nil)",
          instances=lambda rng: [{"a": 0, "b": 1}]),
    Lemma("map-transpose-cons", "(map_transpose (Cons x r) a b)", "(Cons (transpose x a b) (map_transpose r a b))",
          instances=_map_transpose),
    # slice of a concat along the same dim: inside the first part, or past it
    # (sizes may be symbolic: `dle` is decided by egglog for literals and by Z3 otherwise)
    Lemma("slice-concat-first", "(slice (concat (Cons x r) d) d s e)", "(slice x d s e)",
          when=("(= n (dim x d))", "(dle e n)"), instances=_slice_first, rejects=_slice_straddling),
    Lemma("slice-concat-rest", "(slice (concat (Cons x (Cons y r)) d) d s e)",
          "(slice (concat (Cons y r) d) d (dsub s n) (dsub e n))",
          when=("(= n (dim x d))", "(dle n s)"), instances=_slice_rest, rejects=_slice_straddling),
    Lemma("slice-full", "(slice x d (DLit 0) n)", "x",
          when=("(= n (dim x d))",), instances=_full_slice, rejects=_partial_slice),
    Lemma("concat-single", "(concat (Cons x (Nil)) d)", "x", instances=_single),
    # a transpose undone (a block transposed before a gather and back after it)
    Lemma("transpose-transpose", "(transpose (transpose x a b) a b)", "x", instances=_transpose_twice),
]


# ----------------------------------------------------------------------------- view / reshape

def _view_last_instance(rng, ok=True):
    """A concat along the last dim, viewed so that only the leading dims change."""
    lead = [rng.randint(1, 3) for _ in range(rng.randint(1, 3))]
    total = 1
    for x in lead:
        total *= x
    l = [tensor(rng, *lead, n) for n in [rng.randint(1, 4) for _ in range(rng.randint(1, 6))]]
    n = sum(p.shape[-1] for p in l)
    new_lead = [total] if len(lead) > 1 else [1, total]
    s = new_lead + [n if ok else n + 1]
    return {"l": l, "d": len(lead), "s": s, "k": len(s)}


@repeat(6)
def _view_last(rng):
    return _view_last_instance(rng)


@repeat(3)
def _view_last_bad(rng):
    inst = _view_last_instance(rng)
    inst["d"] = 0   # concat along a leading dim: the condition must reject it
    return inst


@repeat(4)
def _map_view_last(rng):
    l = [tensor(rng, 2, 3, n) for n in (2, 4)]
    return {"x": l[0], "r": l[1:], "s": [6, 99], "n": 3, "v": 2}


@repeat(4)
def _view_rsum(rng):
    shape = [rng.randint(1, 3) for _ in range(3)]
    l = [tensor(rng, *shape) for _ in range(rng.randint(1, 8))]
    return {"l": l, "s": [shape[0] * shape[1], shape[2]]}


@repeat(3)
def _map_view(rng):
    l = [tensor(rng, 2, 3) for _ in range(3)]
    return {"x": l[0], "r": l[1:], "s": [3, 2]}


@repeat(3)
def _dlist(rng):
    s = [rng.randint(1, 9) for _ in range(rng.randint(2, 4))]
    return {"x": s[0], "y": s[1], "r": s[2:], "v": 7}


LEMMAS += [
    # reshaping only the dims before a concat along the last dim keeps the concat
    Lemma("view-concat-last", "(view (concat l d) s)", "(concat (map_view_last l s) (- k 1))",
          when=("(= d (- (ndim (concat l d)) 1))", "(= (dlast s) (dim (concat l d) d))", "(= k (dlen s))"),
          instances=_view_last, rejects=_view_last_bad),
    Lemma("map-view-last-nil", "(map_view_last (Nil) s)", "(Nil)", instances=lambda rng: [{"s": [1, 2]}]),
    Lemma("map-view-last-cons", "(map_view_last (Cons x r) s)",
          "(Cons (view x (dset_last s v)) (map_view_last r s))",
          when=("(= n (ndim x))", "(= v (dim x (- n 1)))"), instances=_map_view_last,
          rejects=lambda rng: [{"x": tensor(rng, 2, 3), "r": [], "s": [6], "n": 3, "v": 3}]),
    # a view is linear: it commutes with a sum over ranks
    Lemma("view-rsum", "(view (rsum l) s)", "(rsum (map_view l s))", instances=_view_rsum),
    Lemma("map-view-nil", "(map_view (Nil) s)", "(Nil)", instances=lambda rng: [{"s": [1]}]),
    Lemma("map-view-cons", "(map_view (Cons x r) s)", "(Cons (view x s) (map_view r s))", instances=_map_view),
    # shape-list helpers
    Lemma("dset-last-one", "(dset_last (DCons x (DNil)) v)", "(DCons v (DNil))", instances=lambda rng: [{"x": 3, "v": 5}]),
    Lemma("dset-last-more", "(dset_last (DCons x (DCons y r)) v)", "(DCons x (dset_last (DCons y r) v))",
          instances=_dlist),
]


# ============================================================================ slice cover, flattening
# (sequence parallelism: a replicated tensor sliced per rank, reduce_scatter = the rank's slice of
# a sum).  Two adjacent non-empty slices of the same tensor along d are the slice over both; with
# slice-full and flattening of nested concats, a tensor whose per-rank slices tile a dim becomes
# the concat of them.  Only combines slices already in the e-graph: new slices have endpoints of
# existing ones (quadratic in the slices of one tensor along one dim).

def _cover_case(rng, ok=True):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    shape = [rng.randint(1, 4) for _ in range(nd)]
    shape[d] = rng.randint(3, 9)
    x = tensor(rng, *shape)
    a, b, c = sorted(rng.sample(range(shape[d] + 1), 3))
    if not ok:   # an empty piece: the condition must refuse it (it would only make churn)
        b = a
    return {"x": x, "d": d, "a": a, "b": b, "c": c}


@repeat(8)
def _cover(rng):
    return _cover_case(rng)


@repeat(4)
def _cover_empty(rng):
    return _cover_case(rng, ok=False)


@repeat(6)
def _flatten(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    l = concat_parts(rng, nd, d, parts=rng.randint(2, 8))
    j = rng.randint(1, len(l) - 1)
    return {"l1": l[:j], "r": l[j:], "d": d}


@repeat(4)
def _lappend(rng):
    l = [tensor(rng, 2) for _ in range(rng.randint(1, 6))]
    return {"x": l[0], "l": l[1:], "r": [tensor(rng, 3)]}


LEMMAS += [
    Lemma("slice-cover", "(slice x d (DLit a) (DLit c))",
          "(concat (Cons (slice x d (DLit a) (DLit b)) (Cons (slice x d (DLit b) (DLit c)) (Nil))) d)",
          trigger=("(slice x d (DLit a) (DLit b))", "(slice x d (DLit b) (DLit c))"),
          when=("(< a b)", "(< b c)"), instances=_cover, rejects=_cover_empty),
    # concat of a concat (as first part) along the same dim: one flat concat
    Lemma("concat-flatten-head", "(concat (Cons (concat l1 d) r) d)", "(concat (lappend l1 r) d)",
          instances=_flatten),
    Lemma("lappend-nil", "(lappend (Nil) r)", "r", instances=lambda rng: [{"r": [tensor(rng, 2)]}]),
    Lemma("lappend-cons", "(lappend (Cons x l) r)", "(Cons x (lappend l r))", instances=_lappend),
]


@repeat(4)
def _transpose_rsum(rng):
    shape = [rng.randint(1, 4) for _ in range(3)]
    a, b = sorted(rng.sample(range(3), 2))
    return {"l": [tensor(rng, *shape) for _ in range(rng.randint(1, 8))], "a": a, "b": b}


LEMMAS += [
    # a transpose is linear: grad^T of a partial-sum gradient (backward of a row-parallel layer)
    Lemma("transpose-rsum", "(transpose (rsum l) a b)", "(rsum (map_transpose l a b))", instances=_transpose_rsum),
]


# ============================================================================= views, transposes,
# permutes and slices that keep a concat axis whole (attention with heads split across ranks).
# A view is described by how much of its input's shape it keeps: (vpfx x s i) says the first i
# dims of x are the first i entries of s, (vsfx x s j) the same for the last j (both derived for
# every (view x s) by the RULES below).  A view that keeps the concat axis, splits it in two or
# merges it with the next dim keeps the concat; one that merges it with a dim before it does not.
from entangle_py.lemma import Rule  # noqa: E402


def _parts_on(rng, shape, d, parts=None):
    """Concat parts of a tensor of ``shape`` along d (uneven)."""
    out = []
    for n in sizes_on(rng, parts or rng.randint(1, 6)):
        s = list(shape)
        s[d] = n
        out.append(tensor(rng, *s))
    return out


def sizes_on(rng, k, lo=1, hi=4):
    return [rng.randint(lo, hi) for _ in range(k)]


def _total(l, d):
    return sum(p.shape[d] for p in l)


@repeat(6)
def _view_view(rng):
    x = tensor(rng, 2, 3, 4)
    s1 = rng.choice([[6, 4], [24], [2, 12], [4, 3, 2]])
    s2 = rng.choice([[3, 8], [2, 3, 4], [24, 1]])
    return {"x": x, "s1": s1, "s2": s2}


@repeat(6)
def _view_self(rng):
    nd = rng.randint(1, 4)
    x = tensor(rng, *[rng.randint(1, 4) for _ in range(nd)])
    return {"x": x, "s": list(x.shape), "n": nd}


@repeat(4)
def _view_not_self(rng):
    x = tensor(rng, 2, 3, rng.randint(2, 4))
    return {"x": x, "s": [3, 2, x.shape[2]], "n": 3}


def _view_keep(rng, where):
    """A concat along d viewed so that dims [0..d] (prefix) or [d..] (suffix) are kept."""
    nd = rng.randint(2, 4)
    d = rng.randrange(nd)
    base = [rng.randint(1, 3) for _ in range(nd)]
    l = _parts_on(rng, base, d)
    full = list(base)
    full[d] = _total(l, d)
    if where == "prefix":
        rest = full[d + 1:]
        prod = 1
        for v in rest:
            prod *= v
        s = full[:d + 1] + (rng.choice([[prod], [1, prod], rest]) if rest else [])
    else:
        lead = full[:d]
        prod = 1
        for v in lead:
            prod *= v
        s = (rng.choice([[prod], [prod, 1], lead]) if lead else []) + full[d:]
    return {"l": l, "d": d, "s": s, "n": nd, "m": len(s), "e": d + len(s) - nd}


@repeat(6)
def _view_keep_prefix(rng):
    return _view_keep(rng, "prefix")


@repeat(6)
def _view_keep_suffix(rng):
    return _view_keep(rng, "suffix")


@repeat(4)
def _view_merge_into_axis(rng):
    """The concat axis merged with the dim before it: no keep/split/merge lemma may fire."""
    a, b, c = rng.randint(2, 3), rng.randint(2, 3), rng.randint(1, 3)
    l = _parts_on(rng, [a, 1, c], 1, parts=2)
    n = _total(l, 1)
    return {"l": l, "d": 1, "s": [a * n, c], "n": 3, "m": 2, "e": 0}


def _view_split_instance(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    b = rng.randint(1, 3)
    base = [rng.randint(1, 3) for _ in range(nd)]
    l = []
    for k in sizes_on(rng, rng.randint(1, 6)):
        s = list(base)
        s[d] = k * b
        l.append(tensor(rng, *s))
    full = list(base)
    full[d] = _total(l, d)
    s = full[:d] + [full[d] // b, b] + full[d + 1:]
    return {"l": l, "d": d, "s": s, "n": nd, "t": full[d], "p": full[d] // b, "q": b}


@repeat(6)
def _view_split(rng):
    return _view_split_instance(rng)


@repeat(6)
def _view_merge(rng):
    nd = rng.randint(2, 4)
    d = rng.randrange(nd - 1)
    base = [rng.randint(1, 3) for _ in range(nd)]
    l = _parts_on(rng, base, d)
    full = list(base)
    full[d] = _total(l, d)
    s = full[:d] + [full[d] * full[d + 1]] + full[d + 2:]
    return {"l": l, "d": d, "s": s, "n": nd, "t": full[d], "q": full[d + 1], "p": full[d] * full[d + 1]}


@repeat(4)
def _map_view_split(rng):
    inst = _view_split_instance(rng)
    l = inst["l"]
    return {"x": l[0], "r": l[1:], "s": inst["s"], "d": inst["d"], "m": l[0].shape[inst["d"]],
            "b": inst["s"][inst["d"] + 1]}


@repeat(3)
def _map_view_split_bad(rng):
    x = tensor(rng, 2, 3)
    return {"x": x, "r": [], "s": [2, 1, 2], "d": 1, "m": 3, "b": 2}


@repeat(4)
def _map_view_merge(rng):
    x = tensor(rng, 2, rng.randint(1, 3), 3, 2)
    return {"x": x, "r": [tensor(rng, 2, 2, 3, 2)], "s": [2, 99, 2], "d": 1, "m": x.shape[1], "q": 3}


@repeat(4)
def _map_view_at(rng):
    x = tensor(rng, 2, rng.randint(1, 3), 3)
    return {"x": x, "r": [tensor(rng, 2, 2, 3)], "s": [2, 99, 3], "d": 1, "j": 1, "v": x.shape[1]}


@repeat(4)
def _dset(rng):
    s = [rng.randint(1, 9) for _ in range(rng.randint(2, 4))]
    i = rng.randrange(1, len(s))
    return {"a": s[0], "r": s[1:], "i": i, "v": 7}


@repeat(6)
def _slice_other(rng):
    nd = rng.randint(2, 3)
    d, k = rng.sample(range(nd), 2)
    base = [rng.randint(2, 5) for _ in range(nd)]
    l = _parts_on(rng, base, d)
    a = rng.randint(0, base[k] - 1)
    b = rng.randint(a, base[k])
    return {"l": l, "d": d, "k": k, "a": a, "b": b}


@repeat(3)
def _slice_same(rng):
    l = _parts_on(rng, [4, 3], 0, parts=2)
    return {"l": l, "d": 0, "k": 0, "a": 0, "b": 1}


@repeat(4)
def _map_slice(rng):
    l = _parts_on(rng, [3, 4], 0)
    return {"x": l[0], "r": l[1:], "k": 1, "a": 1, "b": 3}


@repeat(6)
def _permute_concat_raw(rng):
    nd = rng.randint(2, 4)
    d = rng.randrange(nd)
    p = list(range(nd))
    rng.shuffle(p)
    return {"l": _parts_on(rng, [rng.randint(1, 3) for _ in range(nd)], d), "d": d, "p": p, "j": p.index(d)}


@repeat(3)
def _permute_concat_bad(rng):
    inst = next(_permute_concat_raw(rng))
    inst["j"] = (inst["j"] + 1) % len(inst["p"]) if len(inst["p"]) > 1 else 5
    return inst


@repeat(4)
def _map_permute(rng):
    l = _parts_on(rng, [2, 3, 4], 1)
    return {"x": l[0], "r": l[1:], "p": [2, 0, 1]}


def _transpose_view(rng, where):
    if where == "prefix":      # a < b both kept at the front; the tail is reshaped
        n = rng.randint(3, 4)
        x = tensor(rng, *[rng.randint(1, 3) for _ in range(n)])
        a, b = sorted(rng.sample(range(n - 1), 2))
        tail = list(x.shape[b + 1:])
        prod = 1
        for v in tail:
            prod *= v
        s = list(x.shape[:b + 1]) + rng.choice([[prod], tail, [1, prod]])
    else:                      # a < b both in the kept tail; the front is reshaped
        n = rng.randint(3, 4)
        x = tensor(rng, *[rng.randint(1, 3) for _ in range(n)])
        k = rng.randint(2, n - 1)            # kept tail length
        lead = list(x.shape[:n - k])
        prod = 1
        for v in lead:
            prod *= v
        front = rng.choice([[prod], lead, [prod, 1]])
        s = front + list(x.shape[n - k:])
        m = len(s)
        a, b = sorted(rng.sample(range(m - k, m), 2))
    return {"x": x, "s": s, "a": a, "b": b, "va": s[a], "vb": s[b], "n": x.dim(), "m": len(s)}


@repeat(6)
def _transpose_view_prefix(rng):
    return _transpose_view(rng, "prefix")


@repeat(6)
def _transpose_view_suffix(rng):
    return _transpose_view(rng, "suffix")


@repeat(3)
def _transpose_view_mixing(rng):
    """transpose(view(x [2,3,4], [6,4]), 0, 1): the view merged dim 0 with dim 1."""
    x = tensor(rng, 2, 3, rng.randint(2, 4))
    s = [6, x.shape[2]]
    return {"x": x, "s": s, "a": 0, "b": 1, "va": s[0], "vb": s[1], "n": 3, "m": 2}


def _transpose_merged(rng, side):
    """x [.., A, B, C, ..]: the view merges B,C (side 'right') or A,B ('left') and the transpose
    swaps the merged dim with its neighbour."""
    n = rng.randint(3, 5)
    x = tensor(rng, *[rng.randint(1, 3) for _ in range(n)])
    a = rng.randrange(n - 2)
    b = a + 1
    sh = list(x.shape)
    if side == "right":        # s[a] = x[a], s[b] = x[b]*x[b+1]
        s = sh[:b] + [sh[b] * sh[b + 1]] + sh[b + 2:]
    else:                      # s[a] = x[a]*x[a+1], s[b] = x[a+2]
        s = sh[:a] + [sh[a] * sh[a + 1]] + sh[a + 2:]
    return {"x": x, "s": s, "a": a, "b": b, "va": s[a], "vb": s[b], "n": n, "m": len(s)}


@repeat(6)
def _transpose_merged_right(rng):
    return _transpose_merged(rng, "right")


@repeat(6)
def _transpose_merged_left(rng):
    return _transpose_merged(rng, "left")


@repeat(6)
def _scalar_view(rng):
    x = tensor(rng, 2, 3, 2)
    return {"op": rng.choice(["mul", "div", "add"]), "x": x, "s": rng.choice([[6, 2], [3, 4], [12]]), "c": "0.5"}


@repeat(4)
def _unary_view(rng):
    x = tensor(rng, 2, 3, 2)
    return {"op": rng.choice(["exp", "tanh", "gelu"]), "x": x, "s": rng.choice([[6, 2], [3, 4], [12]])}


def _xr(gen):
    """Instances binding the concat parts as (Cons x r): lemmas match only concrete part lists, so
    that an unresolved helper list is never mapped over again (views can form cycles)."""
    def out(rng):
        for inst in gen(rng):
            inst = dict(inst)
            l = inst.pop("l")
            yield {**inst, "x": l[0], "r": l[1:]}
    return out


_view_keep_prefix, _view_keep_suffix, _view_merge_into_axis = map(_xr, (_view_keep_prefix, _view_keep_suffix,
                                                                        _view_merge_into_axis))
_view_split, _view_merge, _slice_other, _slice_same = map(_xr, (_view_split, _view_merge, _slice_other, _slice_same))
_permute_concat, _permute_concat_bad = map(_xr, (_permute_concat_raw, _permute_concat_bad))


_KEEP_PREFIX = ("(vpfx (concat (Cons x r) d) s (+ d 1))",)
_KEEP_SUFFIX = ("(= n (ndim (concat (Cons x r) d)))", "(= m (dlen s))", "(vsfx (concat (Cons x r) d) s (- n d))",
                "(= e (- (+ d m) n))")
# the split (merged) entries of s must multiply to the axis (axis times the next dim): with a
# size-0 dim elsewhere the view is defined whatever they are
_SPLIT = ("(= n (ndim (concat (Cons x r) d)))", "(= (dlen s) (+ n 1))", "(vpfx (concat (Cons x r) d) s d)",
          "(vsfx (concat (Cons x r) d) s (- n (+ d 1)))", "(= (dim (concat (Cons x r) d) d) (DLit t))",
          "(= (dat s d) (DLit p))", "(= (dat s (+ d 1)) (DLit q))", "(= t (* p q))")
_MERGE = ("(= n (ndim (concat (Cons x r) d)))", "(= (+ (dlen s) 1) n)", "(vpfx (concat (Cons x r) d) s d)",
          "(vsfx (concat (Cons x r) d) s (- n (+ d 2)))", "(= (dim (concat (Cons x r) d) d) (DLit t))",
          "(= (dim (concat (Cons x r) d) (+ d 1)) (DLit q))", "(= (dat s d) (DLit p))", "(= p (* t q))")

LEMMAS += [
    # reshapes compose; a reshape to the tensor's own shape is the tensor
    Lemma("view-view", "(view (view x s1) s2)", "(view x s2)", instances=_view_view),
    Lemma("view-self", "(view x s)", "x", when=("(= n (ndim x))", "(= n (dlen s))", "(vpfx x s n)"),
          instances=_view_self, rejects=_view_not_self),
    # the concat axis and everything before it kept: each part is viewed alike
    Lemma("view-concat-keep-prefix", "(view (concat (Cons x r) d) s)", "(concat (map_view_at (Cons x r) s d d) d)",
          when=_KEEP_PREFIX, instances=_view_keep_prefix, rejects=_view_merge_into_axis),
    # the concat axis and everything after it kept: the axis moves to its place in s
    Lemma("view-concat-keep-suffix", "(view (concat (Cons x r) d) s)", "(concat (map_view_at (Cons x r) s d e) e)",
          when=_KEEP_SUFFIX, instances=_view_keep_suffix, rejects=_view_merge_into_axis),
    # the concat axis split in two (outer, inner): parts split alike if inner divides their size
    Lemma("view-concat-split", "(view (concat (Cons x r) d) s)", "(concat (map_view_split (Cons x r) s d) d)",
          when=_SPLIT, instances=_view_split, rejects=_view_merge_into_axis),
    # the concat axis merged with the dim after it
    Lemma("view-concat-merge", "(view (concat (Cons x r) d) s)", "(concat (map_view_merge (Cons x r) s d) d)",
          when=_MERGE, instances=_view_merge, rejects=_view_merge_into_axis),
    Lemma("map-view-at-nil", "(map_view_at (Nil) s d j)", "(Nil)", instances=lambda rng: [{"s": [1], "d": 0, "j": 0}]),
    Lemma("map-view-at-cons", "(map_view_at (Cons x r) s d j)",
          "(Cons (view x (dset s j v)) (map_view_at r s d j))", when=("(= v (dim x d))",),
          instances=_map_view_at, rejects=lambda rng: [{"x": tensor(rng, 2, 3), "r": [], "s": [2, 3], "d": 1, "j": 1, "v": 2}]),
    Lemma("map-view-split-nil", "(map_view_split (Nil) s d)", "(Nil)", instances=lambda rng: [{"s": [1, 1], "d": 0}]),
    Lemma("map-view-split-cons", "(map_view_split (Cons x r) s d)",
          "(Cons (view x (dset s d (DLit (/ m b)))) (map_view_split r s d))",
          when=("(= (dim x d) (DLit m))", "(= (dat s (+ d 1)) (DLit b))", "(> b 0)", "(= (% m b) 0)"),
          instances=_map_view_split, rejects=_map_view_split_bad),
    Lemma("map-view-merge-nil", "(map_view_merge (Nil) s d)", "(Nil)", instances=lambda rng: [{"s": [1], "d": 0}]),
    Lemma("map-view-merge-cons", "(map_view_merge (Cons x r) s d)",
          "(Cons (view x (dset s d (DLit (* m q)))) (map_view_merge r s d))",
          when=("(= (dim x d) (DLit m))", "(= (dim x (+ d 1)) (DLit q))"),
          instances=_map_view_merge,
          rejects=lambda rng: [{"x": tensor(rng, 2, 3, 2), "r": [], "s": [2, 6], "d": 1, "m": 3, "q": 3}]),
    Lemma("dset-here", "(dset (DCons a r) 0 v)", "(DCons v r)", instances=lambda rng: [{"a": 3, "r": [4], "v": 5}]),
    Lemma("dset-later", "(dset (DCons a r) i v)", "(DCons a (dset r (- i 1) v))", when=("(> i 0)",),
          instances=_dset,
          rejects=lambda rng: [{"a": 3, "r": [4], "i": 0, "v": 5}]),
    # a slice along a dim other than the concat axis slices every part
    Lemma("slice-concat-other-dim", "(slice (concat (Cons x r) d) k a b)", "(concat (map_slice (Cons x r) k a b) d)",
          when=("(!= k d)",), instances=_slice_other, rejects=_slice_same),
    Lemma("map-slice-nil", "(map_slice (Nil) k a b)", "(Nil)", instances=lambda rng: [{"k": 0, "a": 0, "b": 1}]),
    Lemma("map-slice-cons", "(map_slice (Cons x r) k a b)", "(Cons (slice x k a b) (map_slice r k a b))",
          instances=_map_slice),
    # permute of a concat: the concat axis moves to where the permutation puts it
    Lemma("permute-concat", "(permute (concat (Cons x r) d) p)", "(concat (map_permute (Cons x r) p) j)", when=("(= j (ipos p d))",),
          instances=_permute_concat, rejects=_permute_concat_bad),
    Lemma("map-permute-nil", "(map_permute (Nil) p)", "(Nil)", instances=lambda rng: [{"p": [1, 0]}]),
    Lemma("map-permute-cons", "(map_permute (Cons x r) p)", "(Cons (permute x p) (map_permute r p))",
          instances=_map_permute),
    # transpose after a view, when both swapped dims are dims the view kept (front or back)
    Lemma("transpose-view-front", "(transpose (view x s) a b)", "(view (transpose x a b) (dset (dset s a vb) b va))",
          when=("(vpfx x s (+ a 1))", "(vpfx x s (+ b 1))", "(= va (dat s a))", "(= vb (dat s b))"),
          instances=_transpose_view_prefix, rejects=_transpose_view_mixing),
    Lemma("transpose-view-back", "(transpose (view x s) a b)",
          "(view (transpose x (+ a (- n m)) (+ b (- n m))) (dset (dset s a vb) b va))",
          when=("(= n (ndim x))", "(= m (dlen s))", "(vsfx x s (- m a))", "(vsfx x s (- m b))", "(= va (dat s a))",
                "(= vb (dat s b))"),
          instances=_transpose_view_suffix, rejects=_transpose_view_mixing),
    # transpose of a dim with its neighbour that the view merged from two dims of x
    Lemma("transpose-view-merged-right", "(transpose (view x s) a b)",
          "(view (transpose (transpose x a b) b (+ b 1)) (dset (dset s a vb) b va))",
          when=("(= b (+ a 1))", "(= n (ndim x))", "(= m (dlen s))", "(= (+ m 1) n)", "(vpfx x s b)",
                "(vsfx x s (- m (+ b 1)))", "(= va (dat s a))", "(= vb (dat s b))"),
          instances=_transpose_merged_right, rejects=_transpose_view_mixing),
    Lemma("transpose-view-merged-left", "(transpose (view x s) a b)",
          "(view (transpose (transpose x b (+ b 1)) a b) (dset (dset s a vb) b va))",
          when=("(= b (+ a 1))", "(= n (ndim x))", "(= m (dlen s))", "(= (+ m 1) n)", "(vpfx x s a)",
                "(vsfx x s (- m b))", "(= va (dat s a))", "(= vb (dat s b))"),
          instances=_transpose_merged_left,
          rejects=lambda rng: [{"x": tensor(rng, 2, 3, 4), "s": [2, 12], "a": 0, "b": 1, "va": 2, "vb": 12,
                                "n": 3, "m": 2}]),
    # elementwise ops commute with reshapes (moved outward, so views meet views)
    Lemma("scalar-view", "(scalar op (view x s) c)", "(view (scalar op x c) s)", instances=_scalar_view),
    Lemma("unary-view", "(unary op (view x s))", "(view (unary op x) s)", instances=_unary_view),
]


@repeat(4)
def _view_rel_terms(rng):
    x = tensor(rng, 2, 3, 4)
    s = rng.choice([[6, 4], [2, 12], [2, 3, 4], [24], [2, 3, 2, 2]])
    return (x, s)


RULES = [
    Rule("view-kept-dims", (
        "(rule ((= y (view x s))) ((vpfx x s 0) (vsfx x s 0)) :ruleset shapes)\n"
        "(rule ((vpfx x s i) (= v (dim x i)) (= v (dat s i))) ((vpfx x s (+ i 1))) :ruleset shapes)\n"
        "(rule ((vsfx x s j) (= n (ndim x)) (= m (dlen s)) (< j n) (< j m) (= v (dim x (- (- n j) 1)))"
        " (= v (dat s (- (- m j) 1)))) ((vsfx x s (+ j 1))) :ruleset shapes)")),
    Rule("ipos", (
        "(rule ((= l (ICons a r))) ((set (ipos l a) 0)) :ruleset shapes)\n"
        "(rule ((= l (ICons a r)) (= k (ipos r b)) (!= b a)) ((set (ipos l b) (+ k 1))) :ruleset shapes)")),
]


@repeat(3)
def _permute_terms(rng):
    return ("(permute x (ICons 2 (ICons 0 (ICons 1 (INil)))))", {"x": tensor(rng, 2, 3, 4)})


RULES += [
    Rule("shape-permute", (
        "(rule ((= y (permute x p)) (= n (ndim x))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= y (permute x p)) (= i (ipos p k)) (= v (dim x k))) ((set (dim y i) v)) :ruleset shapes)"),
        check_terms=_permute_terms),
]
