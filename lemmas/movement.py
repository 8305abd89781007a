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
    Lemma("slice-concat-first", "(slice (concat (Cons x r) d) d (DLit s) (DLit e))", "(slice x d (DLit s) (DLit e))",
          when=("(= (dim x d) (DLit n))", "(<= e n)"), instances=_slice_first, rejects=_slice_straddling),
    Lemma("slice-concat-rest", "(slice (concat (Cons x r) d) d (DLit s) (DLit e))",
          "(slice (concat r d) d (DLit (- s n)) (DLit (- e n)))",
          when=("(= (dim x d) (DLit n))", "(>= s n)"), instances=_slice_rest, rejects=_slice_straddling),
    Lemma("slice-full", "(slice x d (DLit 0) (DLit n))", "x",
          when=("(= (dim x d) (DLit n))",), instances=_full_slice, rejects=_partial_slice),
    Lemma("concat-single", "(concat (Cons x (Nil)) d)", "x", instances=_single),
]
