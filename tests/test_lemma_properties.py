"""Lemmas checked on bindings drawn from their variables' sorts (tests/tooling/lemma_draw.py), not on the
instances their authors wrote: the condition filters a broad space of shapes (0-4 dims, sizes 0-4,
broadcasting, negative dims, int and bool tensors) and every accepted binding must give both sides
the same value, shape and dtype.  Shape rules are checked the same way in a real e-graph."""
import random
import warnings
import zlib

import pytest
import torch

from entangle_py.semantics import terms
from entangle_py.engine.egraph import Engine
from entangle_py.engine.lemma import Lemma
from entangle_py.lemmas import load_library
from tooling import lemma_draw as _draw, lemma_walk as _walk

LIB = load_library()
WALKS = _walk.Walks(LIB.lemmas)
MIN_ACCEPTED = 20

# Lemmas the draws prove wrong whose exact condition needs a fact the egglog side does not have.
# strict: the test fails once the lemma is fixed, so the entry must go.
NEEDS_FACT = {
    # its trigger, a zero-padded first part, comes only from slice_backward of a float gradient
    "concat-zpad-rsum": "bool parts: the sum over ranks of bool padded parts is undefined (needs a dtype fact)",
}


# The draws accept fewer than MIN_ACCEPTED bindings of these: their sorts need better
# structure-aware drawing (batched matmul partners, layer norm weights of the normalised shape,
# index tensors of a table's leading shape, merged view dims, reduction dims of a loss's targets with
# their count).  Every binding they do accept must
# still agree (the test fails otherwise), and tests/test_lemmas.py checks their own instances.
WEAK_DRAWS = {"transpose-view-merged-right": 1, "transpose-view-merged-left": 1, "bmm-view-matmul": 1,
              "matmul-concat-batch": 1, "layernorm-concat": 0, "mtake-intro": 1, "mpick-intro": 1,
              "tcount-div-valid": 1,
              # a table, ids around a block of its rows and the clamp text of its row count
              "mtake-intro-clamp": 2,
              # a float tensor and a bool mask of its rows (its leading shape) cast to its dtype
              "mul-rows-mask": 5, "mul-rows-mask-swapped": 3,
              # a batch of one: 3-D partners of batch 1 and the three views of them
              "view-mm-batch-one": 0,
              # gradient rows of the ids' shape plus one dim, integer ids
              "scatter-valid-masked": 1, "mscatter-intro": 0, "mscatter-split": 0,
              # three lists concat-compatible along one axis, the first a bool condition
              "where-concat-cab": 10,
               # the entries of p's inverse permutation, each drawn alone
               **{f"permute-inverse-{n}": 0 for n in range(3, 6)},
               # lists of index tensors, each of its partner part's leading shape
               "pick-concat-rows": 0, "zip-pick-cons": 0, "tpick-concat-rows": 0, "zip-tpick-cons": 0,
               # lists of index tensors in [0, n), each of its partner part's shape
               "place-concat-rows": 0, "zip-place-cons": 0, "tplace-concat-rows": 0, "zip-tplace-cons": 0,
               # a loss's targets masked to a block of classes, filled with its ignore index
               "tpick-local-not-own": 0, "tpick-local-or": 0, "tpick-local-where": 0,
               "tplace-local-not-own": 0, "tplace-local-or": 0, "tplace-local-where": 0,
               # two shapes of one length, equal but at one leading dim (a multiple there)
               "expand-split-absent": 10, "expand-split-absent-rest": 3,
               # two padded blocks of one padded shape, adjacent along the padded dim
               "zpad-add-adjacent": 5, "zpad-add-adjacent-swapped": 5,
               # ... and a third operand of their dtype
               "zpad-add-reassoc-right-before": 3, "zpad-add-reassoc-right-after": 4,
               "zpad-add-reassoc-left-before": 2, "zpad-add-reassoc-left-after": 5,
               # a factor of the sums' shape, x reduced along its last dim only
               "softmax-mul-unshifted": 10,
               # values of one row per match of 1-D int ids with a drawn id, written into zeros
               **{f"{name}{k}": 0 for name in ("iput-disjoint-sum", "iput-rsum-disjoint", "add-iput-rsum")
                  for k in ("", "-int")},
               # tables of rows at integer ids in [0, n), of one width
               "add-scatter-rsum": 0, "add-rsum-scatter": 0,
               # a constant of the shape of a concat along another dim than the outer concat's, and
               # of the parts' dtype
               "concat-nest-cst": 4,
               # three or more concats along e of parts lining up with a first list's blocks (and
               # a rank's concat of the first blocks, the trigger)
               "concat-nest-more": 3, "concat-interchange-more": 0, "zip-concat-fold-cons": 2,
               # rows of ids' shape plus a width, ids in [0, n)
               "scatter-concat-last": 2, "map-scatter-cons": 2,
               # a write at distinct rows (a nonzero) first in a list of parts of one shape
               "rsum-nested-last": 2}


def _cases():
    for lem in LIB.lemmas:
        marks = [pytest.mark.xfail(reason=NEEDS_FACT[lem.name], strict=True)] if lem.name in NEEDS_FACT else []
        yield pytest.param(lem, id=lem.name, marks=marks)


@pytest.mark.parametrize("lemma", list(_cases()))
def test_lemma_on_drawn_bindings(lemma):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        accepted, stuck, failures = _walk.run(lemma, WALKS)
    if failures:
        env, why = failures[0]
        pytest.fail(f"{lemma.name}: {why} on {_draw.describe(env)}")
    assert accepted - stuck >= WEAK_DRAWS.get(lemma.name, MIN_ACCEPTED), (
        f"{lemma.name}: only {accepted - stuck} drawn bindings accepted with both sides defined "
        f"({stuck} more leave a walk unfinished): draw this sort better")


def test_sorts_inferred():
    sorts, kinds = _draw.variable_sorts(LIB.lemmas[[l.name for l in LIB.lemmas].index("binary-concat-bcast-one")])
    assert sorts == {"op": "String", "l": "TList", "d": "i64", "y": "T", "n": "i64", "m": "i64"}
    assert kinds == {"op": "binary"}


@pytest.mark.parametrize("name,drop", [("binary-concat-bcast-one", 3), ("softmax-concat", 0),
                                       ("transpose-view-front", 0)])
def test_a_wrong_lemma_is_caught(name, drop):
    """The check can fail: a library lemma with one condition removed is caught."""
    lem = next(l for l in LIB.lemmas if l.name == name)
    when = tuple(c for i, c in enumerate(lem.when) if i != drop)
    wrong = Lemma(lem.name + "-wrong", lem.lhs, lem.rhs, when=when)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, _, failures = _walk.run(wrong, WALKS, draws=20000)
    assert failures, f"{name} without {lem.when[drop]} passes the drawn bindings"


# ----------------------------------------------------------------------------- shape rules

def _shape_terms(rng):
    """(term, env) for shapes derived by rules without checks of their own, broadcasting included."""
    def t(*shape):
        return torch.randn(shape, dtype=torch.float64)
    for _ in range(4):
        nd = rng.randint(0, 3)
        s = [rng.randint(1, 4) for _ in range(nd)]
        b = [1 if rng.random() < 0.4 else v for v in s]
        yield '(binary "add" x y)', {"x": t(*s), "y": t(*b)}                    # size-1 dims
        yield '(binary "mul" x y)', {"x": t(*b), "y": t(*s[rng.randint(0, nd):])}  # fewer dims
        yield '(binary "sub" x y)', {"x": t(*s), "y": t(*s)}
        yield '(scalar "mul" x "0.5")', {"x": t(*s)}
        if nd:
            yield f"(softmax x {rng.randrange(nd)})", {"x": t(*s)}
        yield "(rsum (Cons x (Cons y (Nil))))", {"x": t(*s), "y": t(*s)}
        yield "(rmax (Cons x (Nil)))", {"x": t(*s)}


def _insert(eng, name, value):
    eng.add(f'(let ${name} (Gd "{name}"))', f"(set (ndim ${name}) {value.dim()})",
            *[f"(set (dim ${name} {i}) (DLit {s}))" for i, s in enumerate(value.shape)])


def test_shape_rules_on_broadcasting_terms():
    """Every derived ndim / dim fact equals torch's (a broadcast may leave a dim underived, never wrong)."""
    rng = random.Random(zlib.crc32(b"shape-rules"))
    eng = Engine(LIB)
    for text, env in _shape_terms(rng):
        eng.reset()
        for name, value in env.items():
            _insert(eng, name, value)
        expr = text
        for name in env:
            expr = expr.replace(f" {name})", f" ${name})").replace(f" {name} ", f" ${name} ")
        eng.add(f"(let $t {expr})")
        eng.settle()
        expected = terms.evaluate(terms.parse_sexpr(text), env)
        got = {}
        same_shape = all(list(v.shape) == list(expected.shape) for v in env.values())
        try:
            nd = eng.run1("(extract (ndim $t))")[0]
        except Exception:
            assert not same_shape, f"{text}: ndim not derived"
        else:
            assert nd.termdag.to_string(nd.term) == str(expected.dim()), text
        for i in range(expected.dim() + 2):
            try:
                out = eng.run1(f"(extract (dim $t {i}))")[0]
            except Exception:
                continue
            got[i] = out.termdag.to_string(out.term)
            assert i < expected.dim() and got[i] == f"(DLit {expected.shape[i]})", (
                f"{text} on {[list(v.shape) for v in env.values()]}: dim {i} derived as {got[i]}")
        if same_shape:
            assert len(got) == expected.dim(), f"{text}: dims not derived ({got})"
