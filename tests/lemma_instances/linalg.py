"""Instances of the linalg lemmas (entangle_py/lemmas/linalg.py): matrix products versus concat and sums over
ranks, batched matmul over views."""
from __future__ import annotations

from entangle_py.lazy import torch

from lemma_instances.common import dlist, repeat, sizes, tensor

@repeat(6)
def col(rng):
    n, k = rng.randint(1, 5), rng.randint(1, 5)
    return {"x": tensor(rng, n, k), "l": [tensor(rng, k, m) for m in sizes(rng, rng.randint(1, 8))]}


@repeat(6)
def row(rng):
    k, m = rng.randint(1, 5), rng.randint(1, 5)
    return {"w": tensor(rng, k, m), "l": [tensor(rng, n, k) for n in sizes(rng, rng.randint(1, 8))]}


@repeat(6)
def inner(rng):
    n, m = rng.randint(1, 5), rng.randint(1, 5)
    ks = sizes(rng, rng.randint(1, 8))
    return {"l1": [tensor(rng, n, k) for k in ks], "l2": [tensor(rng, k, m) for k in ks]}


@repeat(6)
def zip_mm(rng):
    n, m = rng.randint(1, 5), rng.randint(1, 5)
    ks = sizes(rng, rng.randint(1, 6))
    l1, l2 = [tensor(rng, n, k) for k in ks], [tensor(rng, k, m) for k in ks]
    return {"a": l1[0], "r1": l1[1:], "b": l2[0], "r2": l2[1:]}


@repeat(3)
def zip_mm_mismatch(rng):
    return {"a": tensor(rng, 2, 3), "r1": [], "b": tensor(rng, 2, 4), "r2": []}


@repeat(6)
def bmm_inner(rng):
    b, n, m = rng.randint(1, 3), rng.randint(1, 4), rng.randint(1, 4)
    ks = sizes(rng, rng.randint(1, 6))
    return {"l1": [tensor(rng, b, n, k) for k in ks], "l2": [tensor(rng, b, k, m) for k in ks]}


@repeat(6)
def zip_bmm(rng):
    b, n, m = rng.randint(1, 3), rng.randint(1, 4), rng.randint(1, 4)
    ks = sizes(rng, rng.randint(1, 5))
    l1, l2 = [tensor(rng, b, n, k) for k in ks], [tensor(rng, b, k, m) for k in ks]
    return {"a": l1[0], "r1": l1[1:], "b": l2[0], "r2": l2[1:]}


@repeat(3)
def zip_bmm_mismatch(rng):
    """Parts that do not line up (3 columns against 4 rows)."""
    return {"a": tensor(rng, 2, 2, 3), "r1": [], "b": tensor(rng, 2, 4, 2), "r2": []}


@repeat(6)
def rsum_left(rng):
    n, k, m = rng.randint(1, 5), rng.randint(1, 5), rng.randint(1, 5)
    return {"l": [tensor(rng, n, k) for _ in range(rng.randint(1, 8))], "w": tensor(rng, k, m)}


@repeat(6)
def rsum_right(rng):
    n, k, m = rng.randint(1, 5), rng.randint(1, 5), rng.randint(1, 5)
    return {"x": tensor(rng, n, k), "l": [tensor(rng, k, m) for _ in range(rng.randint(1, 8))]}


@repeat(4)
def map_mm_r(rng):
    k = rng.randint(1, 4)
    l = [tensor(rng, k, m) for m in sizes(rng, rng.randint(1, 4))]
    return {"x": tensor(rng, 3, k), "w": l[0], "r": l[1:]}


@repeat(4)
def map_mm_l(rng):
    k = rng.randint(1, 4)
    l = [tensor(rng, n, k) for n in sizes(rng, rng.randint(1, 4))]
    return {"w": tensor(rng, k, 2), "x": l[0], "r": l[1:]}


@repeat(6)
def bmm_rows(rng):
    b, k, m = rng.randint(1, 3), rng.randint(1, 4), rng.randint(1, 4)
    return {"w": tensor(rng, b, k, m), "l": [tensor(rng, b, n, k) for n in sizes(rng, rng.randint(1, 6))]}


@repeat(4)
def map_bmm_l(rng):
    b, k = rng.randint(1, 3), rng.randint(1, 4)
    l = [tensor(rng, b, n, k) for n in sizes(rng, rng.randint(1, 4))]
    return {"w": tensor(rng, b, k, 2), "x": l[0], "r": l[1:]}


def map_bmm_l_nil(rng):
    return [{"w": tensor(rng, 2, 2, 2)}]


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
def bmm_view(rng):
    return _bmm_view_instance(rng)


@repeat(3)
def bmm_view_swapped(rng):
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
def matmul_concat(rng):
    return _matmul_concat_instance(rng)


@repeat(3)
def matmul_concat_rows(rng):
    """A concat along the row dim of both operands is not a batch concat."""
    l1 = [tensor(rng, 2, v, 3) for v in (2, 2)]
    l2 = [tensor(rng, 2, 3, v) for v in (2, 2)]
    return {"l1": l1, "l2": l2, "d": 1, "n": 3}


@repeat(4)
def zip_matmul(rng):
    inst = _matmul_concat_instance(rng)
    return {"a": inst["l1"][0], "r1": inst["l1"][1:], "b": inst["l2"][0], "r2": inst["l2"][1:], "d": inst["d"]}


@repeat(6)
def bmm_concat_batch(rng):
    m, k, p = rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 4)
    bs = sizes(rng, rng.randint(1, 8), hi=3)
    return {"l1": [tensor(rng, b, m, k) for b in bs], "l2": [tensor(rng, b, k, p) for b in bs]}


@repeat(6)
def bmm_matmul(rng):
    b, m, k, p = rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 4)
    return {"a": tensor(rng, b, m, k), "b": tensor(rng, b, k, p)}


@repeat(3)
def matmul_terms(rng):
    n = rng.randint(2, 4)
    batch = [rng.randint(1, 3) for _ in range(n - 2)]
    return ("(matmul a b)", {"a": tensor(rng, *batch, 2, 3), "b": tensor(rng, *batch, 3, 4)})



def map_mm_r_nil(rng):
    return [{"x": tensor(rng, 2, 2)}]


def map_mm_l_nil(rng):
    return [{"w": tensor(rng, 2, 2)}]


def zip_matmul_mismatch(rng):
    return [{"a": tensor(rng, 2, 2, 2), "r1": [], "b": tensor(rng, 3, 2, 2), "r2": [], "d": 0}]


# ----------------------------------------------------------------------------- rule checks

def bmm_terms(rng):
    return [("(bmm a b)", {"a": tensor(rng, 3, 2, 4), "b": tensor(rng, 3, 4, 5)})]


def bmm_view_batch_terms(rng):
    """(bmm (view x s1) (view y s2)) over [.., m, k] and [.., k, p]: (bsame x y i) for every i up to
    past the end, with batch dims that agree, that differ, and that differ but view alike."""
    pairs = [((2, 3, 4, 5), (2, 3, 5, 4)), ((2, 3, 4, 5), (3, 2, 5, 4)), ((6, 4, 5), (6, 5, 2)),
             ((2, 3, 4, 5), (6, 1, 5, 4)), ((6, 4, 5), (2, 3, 5, 4)), ((2, 2, 3), (2, 3, 3))]
    for _ in range(3):
        inst = _bmm_view_instance(rng, same=rng.random() < 0.5)
        pairs.append((tuple(inst["x"].shape), tuple(inst["y"].shape)))
    for xs, ys in pairs:
        x, y = tensor(rng, *xs), tensor(rng, *ys)
        bh = 1
        for v in xs[:-2]:
            bh *= v
        by = 1
        for v in ys[:-2]:
            by *= v
        term = f"(bmm (view x {dlist([bh, xs[-2], xs[-1]])}) (view y {dlist([by, ys[-2], ys[-1]])}))"
        yield (term, {"x": x, "y": y}, [f"(bsame x y {i})" for i in range(len(xs) + 2)])


@repeat(6)
def div_mm(rng):
    dt = rng.choice([torch.float64, torch.float32])
    n, k, m = rng.randint(1, 4), rng.randint(0, 3), rng.randint(1, 4)
    return {"a": tensor(rng, n, k).to(dt), "b": tensor(rng, k, m).to(dt), "c": rng.choice(["2.0", "24.0", "-0.5"]),
            "t": str(dt).removeprefix("torch.")}


def div_mm_bad(rng):
    """int matrices (a / c is float: no product with an int b), mixed precision, a zero constant."""
    yield {"a": torch.ones(2, 3, dtype=torch.int64), "b": torch.ones(3, 2, dtype=torch.int64), "c": "2.0", "t": "int64"}
    yield {"a": tensor(rng, 2, 3).half(), "b": tensor(rng, 3, 2).float(), "c": "2.0", "t": "float16"}
    yield {"a": tensor(rng, 2, 3), "b": tensor(rng, 3, 2), "c": "0.0", "t": "float64"}


@repeat(6)
def mm_batch_one(rng):
    """A batch of one: x [1, i, k] and y [1, k, j] viewed 2-D, multiplied, viewed back to [1, i, j]
    (sizes from 0: an empty batch of rows)."""
    i, k, j = rng.randint(0, 3), rng.randint(1, 3), rng.randint(1, 3)
    return {"x": tensor(rng, 1, i, k), "y": tensor(rng, 1, k, j), "s1": [i, k], "s2": [k, j], "s3": [1, i, j], "n": 3}


def mm_batch_one_bad(rng):
    """The product viewed back transposed ([1, j, i]), or x's batch of two viewed as twice the rows."""
    x, y = tensor(rng, 1, 2, 3), tensor(rng, 1, 3, 4)
    yield {"x": x, "y": y, "s1": [2, 3], "s2": [3, 4], "s3": [1, 4, 2], "n": 3}
    yield {"x": x, "y": y, "s1": [2, 3], "s2": [3, 4], "s3": [2, 1, 4], "n": 3}
    x2 = tensor(rng, 2, 1, 3)
    yield {"x": x2, "y": tensor(rng, 2, 3, 4), "s1": [2, 3], "s2": [6, 4], "s3": [1, 2, 4], "n": 3}
