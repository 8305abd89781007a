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
    return {"x": l[0], "r": l[1:], "d": d, "s": s, "e": e, "n": n}


@repeat(4)
def _slice_straddling(rng):
    """A slice that crosses the first part's end: neither slice lemma may fire."""
    d = 0
    l = concat_parts(rng, 1, d, parts=3)
    n = l[0].shape[0]
    return {"x": l[0], "r": l[1:], "d": d, "s": n - 1 if n > 0 else 0, "e": n + 1, "n": n}


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
    Lemma("slice-concat-rest", "(slice (concat (Cons x r) d) d s e)",
          "(slice (concat r d) d (dsub s n) (dsub e n))",
          when=("(= n (dim x d))", "(dle n s)"), instances=_slice_rest, rejects=_slice_straddling),
    Lemma("slice-full", "(slice x d (DLit 0) n)", "x",
          when=("(= n (dim x d))",), instances=_full_slice, rejects=_partial_slice),
    Lemma("concat-single", "(concat (Cons x (Nil)) d)", "x", instances=_single),
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
