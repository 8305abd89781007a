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


# ============================================================================= batched matmul
# bmm over [b*h, m, k] tensors that are views of [b, h, m, k] ones is a batched matmul over the
# 4-D (or any n-D) forms; heads split across ranks are a concat along a batch dim of those forms.
from entangle_py.lemma import Rule  # noqa: E402


def _bmm_view_instance(rng, same=True):
    n = rng.randint(2, 4)
    batch = [rng.randint(1, 3) for _ in range(n - 2)]
    m, k, p = rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 4)
    x, y = tensor(rng, *batch, m, k), tensor(rng, *(batch if same else batch[::-1]), k, p)
    bh = 1
    for v in batch:
        bh *= v
    return {"x": x, "y": y, "s1": [bh, m, k], "s2": [bh, k, p], "n": n, "b": bh, "i": m, "j": p}


@repeat(8)
def _bmm_view(rng):
    return _bmm_view_instance(rng)


@repeat(3)
def _bmm_view_swapped(rng):
    """Batch dims [2, 3] against [3, 2]: both view to 6 but the batches do not line up."""
    x, y = tensor(rng, 2, 3, 2, 2), tensor(rng, 3, 2, 2, 3)
    return {"x": x, "y": y, "s1": [6, 2, 2], "s2": [6, 2, 3], "n": 4, "b": 6, "i": 2, "j": 3}


def _matmul_concat_instance(rng):
    n = rng.randint(3, 4)
    d = rng.randrange(n - 2)
    base = [rng.randint(1, 3) for _ in range(n - 2)]
    m, k, p = rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 3)
    l1, l2 = [], []
    for v in sizes(rng, rng.randint(1, 6), hi=3):
        b = list(base)
        b[d] = v
        l1.append(tensor(rng, *b, m, k))
        l2.append(tensor(rng, *b, k, p))
    return {"l1": l1, "l2": l2, "d": d, "n": n}


@repeat(8)
def _matmul_concat(rng):
    return _matmul_concat_instance(rng)


@repeat(3)
def _matmul_concat_rows(rng):
    """A concat along the row dim of both operands is not a batch concat."""
    l1 = [tensor(rng, 2, v, 3) for v in (2, 2)]
    l2 = [tensor(rng, 2, 3, v) for v in (2, 2)]
    return {"l1": l1, "l2": l2, "d": 1, "n": 3}


@repeat(4)
def _zip_matmul(rng):
    inst = _matmul_concat_instance(rng)
    return {"a": inst["l1"][0], "r1": inst["l1"][1:], "b": inst["l2"][0], "r2": inst["l2"][1:], "d": inst["d"]}


LEMMAS += [
    Lemma("bmm-view-matmul", "(bmm (view x s1) (view y s2))",
          "(view (matmul x y) (DCons b (DCons i (DCons j (DNil)))))",
          when=("(= n (ndim x))", "(= n (ndim y))", "(vsfx x s1 2)", "(vsfx y s2 2)", "(bsame x y (- n 2))",
                "(= b (dat s1 0))", "(= i (dat s1 1))", "(= j (dat s2 2))"),
          instances=_bmm_view, rejects=_bmm_view_swapped),
    Lemma("matmul-concat-batch", "(matmul (concat l1 d) (concat l2 d))", "(concat (zip_matmul l1 l2 d) d)",
          when=("(= n (ndim (concat l1 d)))", "(= n (ndim (concat l2 d)))", "(< d (- n 2))"),
          instances=_matmul_concat, rejects=_matmul_concat_rows),
    Lemma("zip-matmul-nil", "(zip_matmul (Nil) (Nil) d)", "(Nil)", instances=lambda rng: [{"d": 0}]),
    Lemma("zip-matmul-cons", "(zip_matmul (Cons a r1) (Cons b r2) d)", "(Cons (matmul a b) (zip_matmul r1 r2 d))",
          when=("(= (dim a d) (dim b d))",), instances=_zip_matmul,
          rejects=lambda rng: [{"a": tensor(rng, 2, 2, 2), "r1": [], "b": tensor(rng, 3, 2, 2), "r2": [], "d": 0}]),
]


@repeat(3)
def _matmul_terms(rng):
    n = rng.randint(2, 4)
    batch = [rng.randint(1, 3) for _ in range(n - 2)]
    return ("(matmul a b)", {"a": tensor(rng, *batch, 2, 3), "b": tensor(rng, *batch, 3, 4)})


RULES = [
    Rule("shape-matmul", (
        "(rule ((= y (matmul a b)) (= n (ndim a))) ((set (ndim y) n)) :ruleset shapes)\n"
        # batch dims only where both operands agree (no broadcasting is assumed)
        "(rule ((= y (matmul a b)) (= n (ndim a)) (= v (dim a i)) (= v (dim b i)) (< i (- n 2))) ((set (dim y i) v)) :ruleset shapes)\n"
        "(rule ((= y (matmul a b)) (= n (ndim a)) (= v (dim a (- n 2)))) ((set (dim y (- n 2)) v)) :ruleset shapes)\n"
        "(rule ((= y (matmul a b)) (= n (ndim b)) (= v (dim b (- n 1)))) ((set (dim y (- n 1)) v)) :ruleset shapes)"),
        check_terms=_matmul_terms),
    Rule("shape-bmm", (
        "(rule ((= y (bmm a b))) ((set (ndim y) 3)) :ruleset shapes)\n"
        "(rule ((= y (bmm a b)) (= v (dim a i)) (< i 2)) ((set (dim y i) v)) :ruleset shapes)\n"
        "(rule ((= y (bmm a b)) (= v (dim b 2))) ((set (dim y 2) v)) :ruleset shapes)"),
        check_terms=lambda rng: [("(bmm a b)", {"a": tensor(rng, 3, 2, 4), "b": tensor(rng, 3, 4, 5)})]),
    # batch dims of the operands of a bmm over views, compared one by one
    Rule("bmm-view-batch", (
        "(rule ((= z (bmm (view x s1) (view y s2)))) ((bsame x y 0)) :ruleset shapes)\n"
        "(rule ((bsame x y i) (= v (dim x i)) (= v (dim y i))) ((bsame x y (+ i 1))) :ruleset shapes)")),
]
