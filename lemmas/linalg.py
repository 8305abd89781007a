"""Matrix products versus concat on either side and sums over ranks (row/column parallel)."""
from entangle_py.lemma import Lemma
from lemmas._instances import repeat, sizes, tensor


@repeat(6)
def _col(rng):
    n, k = rng.randint(1, 5), rng.randint(1, 5)
    return {"x": tensor(rng, n, k), "l": [tensor(rng, k, m) for m in sizes(rng, rng.randint(1, 8))]}


@repeat(6)
def _row(rng):
    k, m = rng.randint(1, 5), rng.randint(1, 5)
    return {"w": tensor(rng, k, m), "l": [tensor(rng, n, k) for n in sizes(rng, rng.randint(1, 8))]}


@repeat(6)
def _inner(rng):
    n, m = rng.randint(1, 5), rng.randint(1, 5)
    ks = sizes(rng, rng.randint(1, 8))
    return {"l1": [tensor(rng, n, k) for k in ks], "l2": [tensor(rng, k, m) for k in ks]}


@repeat(6)
def _zip_mm(rng):
    n, m = rng.randint(1, 5), rng.randint(1, 5)
    ks = sizes(rng, rng.randint(1, 6))
    l1, l2 = [tensor(rng, n, k) for k in ks], [tensor(rng, k, m) for k in ks]
    return {"a": l1[0], "r1": l1[1:], "b": l2[0], "r2": l2[1:]}


@repeat(3)
def _zip_mm_mismatch(rng):
    return {"a": tensor(rng, 2, 3), "r1": [], "b": tensor(rng, 2, 4), "r2": []}


@repeat(6)
def _rsum_left(rng):
    n, k, m = rng.randint(1, 5), rng.randint(1, 5), rng.randint(1, 5)
    return {"l": [tensor(rng, n, k) for _ in range(rng.randint(1, 8))], "w": tensor(rng, k, m)}


@repeat(6)
def _rsum_right(rng):
    n, k, m = rng.randint(1, 5), rng.randint(1, 5), rng.randint(1, 5)
    return {"x": tensor(rng, n, k), "l": [tensor(rng, k, m) for _ in range(rng.randint(1, 8))]}


@repeat(4)
def _map_mm_r(rng):
    k = rng.randint(1, 4)
    l = [tensor(rng, k, m) for m in sizes(rng, rng.randint(1, 4))]
    return {"x": tensor(rng, 3, k), "w": l[0], "r": l[1:]}


@repeat(4)
def _map_mm_l(rng):
    k = rng.randint(1, 4)
    l = [tensor(rng, n, k) for n in sizes(rng, rng.randint(1, 4))]
    return {"w": tensor(rng, k, 2), "x": l[0], "r": l[1:]}


LEMMAS = [
    # column parallel: x @ [W0 W1 ...] = [x@W0  x@W1 ...]
    Lemma("mm-concat-right", "(mm x (concat l 1))", "(concat (map_mm_r x l) 1)", instances=_col),
    # [X0; X1; ...] @ w = [X0@w; X1@w; ...]
    Lemma("mm-concat-left", "(mm (concat l 0) w)", "(concat (map_mm_l l w) 0)", instances=_row),
    # row parallel: [X0 X1 ...] @ [W0; W1; ...] = sum_r X_r @ W_r  (parts must line up)
    Lemma("mm-concat-inner", "(mm (concat l1 1) (concat l2 0))", "(rsum (zip_mm l1 l2))", instances=_inner),
    Lemma("mm-rsum-left", "(mm (rsum l) w)", "(rsum (map_mm_l l w))", instances=_rsum_left),
    Lemma("mm-rsum-right", "(mm x (rsum l))", "(rsum (map_mm_r x l))", instances=_rsum_right),
    Lemma("map-mm-r-nil", "(map_mm_r x (Nil))", "(Nil)", instances=lambda rng: [{"x": tensor(rng, 2, 2)}]),
    Lemma("map-mm-r-cons", "(map_mm_r x (Cons w r))", "(Cons (mm x w) (map_mm_r x r))", instances=_map_mm_r),
    Lemma("map-mm-l-nil", "(map_mm_l (Nil) w)", "(Nil)", instances=lambda rng: [{"w": tensor(rng, 2, 2)}]),
    Lemma("map-mm-l-cons", "(map_mm_l (Cons x r) w)", "(Cons (mm x w) (map_mm_l r w))", instances=_map_mm_l),
    Lemma("zip-mm-nil", "(zip_mm (Nil) (Nil))", "(Nil)", instances=lambda rng: [{}]),
    Lemma("zip-mm-cons", "(zip_mm (Cons a r1) (Cons b r2))", "(Cons (mm a b) (zip_mm r1 r2))",
          when=("(= (dim a 1) (dim b 0))",), instances=_zip_mm, rejects=_zip_mm_mismatch),
]
