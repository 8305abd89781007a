"""Reductions over dims, softmax: versus concat along a dim they do not reduce."""
from entangle_py.lemma import Lemma
from lemmas._instances import concat_parts, repeat


@repeat(6)
def _softmax_other(rng):
    nd = rng.randint(2, 3)
    d, s = rng.sample(range(nd), 2)
    return {"l": concat_parts(rng, nd, d), "d": d, "s": s}


@repeat(3)
def _softmax_same(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    return {"l": concat_parts(rng, nd, d, parts=2), "d": d, "s": d}


@repeat(4)
def _map_softmax(rng):
    l = concat_parts(rng, 2, 0)
    return {"x": l[0], "r": l[1:], "s": 1}


LEMMAS = [
    Lemma("softmax-concat", "(softmax (concat l d) s)", "(concat (map_softmax l s) d)",
          when=("(!= d s)",), instances=_softmax_other, rejects=_softmax_same),
    Lemma("map-softmax-nil", "(map_softmax (Nil) s)", "(Nil)", instances=lambda rng: [{"s": 0}]),
    Lemma("map-softmax-cons", "(map_softmax (Cons x r) s)", "(Cons (softmax x s) (map_softmax r s))",
          instances=_map_softmax),
]


# ============================================================================ reductions over dims
# (reduce op x dims keepdim) with op in sum / mean / amax and dims a sorted IList.  Versus a concat
# along d: a reduction over dims without d acts part by part (d renumbered when keepdim = 0); a
# sum (max) over dims with d is the sum (max) over ranks of the parts' sums (maxima).  A mean over
# d is NOT the sum of the parts' means (different counts): no lemma for it.
from lemmas._instances import tensor as _tensor


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
def _map_reduce(rng):
    l = concat_parts(rng, 3, 0)
    return {"op": rng.choice(["sum", "mean", "amax"]), "x": l[0], "r": l[1:], "dims": [1, 2], "k": rng.randint(0, 1)}


@repeat(6)
def _reduce_rsum(rng):
    nd = rng.randint(1, 3)
    shape = [rng.randint(1, 4) for _ in range(nd)]
    dims = sorted(rng.sample(range(nd), rng.randint(1, nd)))
    return {"l": [_tensor(rng, *shape) for _ in range(rng.randint(1, 8))], "dims": dims, "k": rng.randint(0, 1),
            "op": rng.choice(["sum", "mean"])}


LEMMAS += [
    Lemma("reduce-concat-other-keep", "(reduce op (concat l d) dims 1)", "(concat (map_reduce op l dims 1) d)",
          when=("(= (ihas dims d) 0)",),
          instances=_gen(8, ["sum", "mean", "amax"], False, keepdim=1),
          rejects=_gen(4, ["sum", "mean", "amax"], True, keepdim=1)),
    Lemma("reduce-concat-other-drop", "(reduce op (concat l d) dims 0)", "(concat (map_reduce op l dims 0) (- d b))",
          when=("(= (ihas dims d) 0)", "(= b (ibelow dims d))"),
          instances=_gen(8, ["sum", "mean", "amax"], False, keepdim=0),
          rejects=_gen(4, ["sum", "mean", "amax"], True, keepdim=0)),
    Lemma("reduce-sum-concat", "(reduce \"sum\" (concat l d) dims k)", "(rsum (map_reduce \"sum\" l dims k))",
          when=("(= (ihas dims d) 1)",), instances=_gen(8, ["sum"], True), rejects=_gen(4, ["sum"], False)),
    Lemma("reduce-amax-concat", "(reduce \"amax\" (concat l d) dims k)", "(rmax (map_reduce \"amax\" l dims k))",
          when=("(= (ihas dims d) 1)",), instances=_gen(8, ["amax"], True), rejects=_gen(4, ["amax"], False)),
    # sums (and means) over dims are linear: they commute with a sum over ranks; max with max
    Lemma("reduce-sum-rsum", "(reduce \"sum\" (rsum l) dims k)", "(rsum (map_reduce \"sum\" l dims k))",
          instances=_reduce_rsum),
    Lemma("reduce-mean-rsum", "(reduce \"mean\" (rsum l) dims k)", "(rsum (map_reduce \"mean\" l dims k))",
          instances=_reduce_rsum),
    Lemma("reduce-amax-rmax", "(reduce \"amax\" (rmax l) dims k)", "(rmax (map_reduce \"amax\" l dims k))",
          instances=_reduce_rsum),
    Lemma("map-reduce-nil", "(map_reduce op (Nil) dims k)", "(Nil)",
          instances=lambda rng: [{"op": "sum", "dims": [0], "k": 1}]),
    Lemma("map-reduce-cons", "(map_reduce op (Cons x r) dims k)", "(Cons (reduce op x dims k) (map_reduce op r dims k))",
          instances=_map_reduce),
]


# ============================================================================ layer norm
# (layernorm x w b k eps) normalises over the last k dims: rows are independent, so a concat along
# a dim before them is kept.

def _layernorm_case(rng, ok):
    nd = rng.randint(2, 4)
    k = rng.randint(1, nd - 1)
    d = rng.randrange(nd - k) if ok else rng.randrange(nd - k, nd)
    l = concat_parts(rng, nd, d)
    norm = list(l[0].shape[nd - k:])
    if not ok:   # parts of different sizes along a normalised dim: layer norm of the whole
        norm[d - (nd - k)] = sum(p.shape[d] for p in l)
    return {"l": l, "d": d, "k": k, "n": nd, "w": _tensor(rng, *norm), "b": _tensor(rng, *norm),
            "e": rng.choice(["1e-05", "1e-06", "0.001"])}


@repeat(8)
def _layernorm_concat(rng):
    return _layernorm_case(rng, ok=True)


@repeat(4)
def _layernorm_concat_bad(rng):
    return _layernorm_case(rng, ok=False)


@repeat(4)
def _map_layernorm(rng):
    l = concat_parts(rng, 3, 0)
    return {"x": l[0], "r": l[1:], "w": _tensor(rng, l[0].shape[2]), "b": _tensor(rng, l[0].shape[2]), "k": 1,
            "e": "1e-05"}


LEMMAS += [
    Lemma("layernorm-concat", "(layernorm (concat l d) w b k e)", "(concat (map_layernorm l w b k e) d)",
          when=("(= n (ndim (concat l d)))", "(< d (- n k))"),
          instances=_layernorm_concat, rejects=_layernorm_concat_bad),
    Lemma("map-layernorm-nil", "(map_layernorm (Nil) w b k e)", "(Nil)",
          instances=lambda rng: [{"w": _tensor(rng, 2), "b": _tensor(rng, 2), "k": 1, "e": "1e-05"}]),
    Lemma("map-layernorm-cons", "(map_layernorm (Cons x r) w b k e)",
          "(Cons (layernorm x w b k e) (map_layernorm r w b k e))", instances=_map_layernorm),
]
