"""The derived facts the view/matmul lemmas are gated on match torch: (vpfx x s i) / (vsfx x s j)
(dims a view keeps at the front / back), (bsame x y i) (batch dims of a bmm over views), and
(ipos p d) (where a permutation puts dim d)."""
import random
import zlib

import pytest

from entangle_py.semantics import terms
from entangle_py.engine.egraph import Engine, EngineError
from entangle_py.lemmas import load_library
from lemma_instances.common import tensor

LIB = load_library()


def _dlist(s):
    out = "(DNil)"
    for v in reversed(s):
        out = f"(DCons (DLit {v}) {out})"
    return out


def _leaf(eng, name, x):
    eng.add(f'(let ${name} (Gd "{name}"))')
    eng.add(f"(set (ndim ${name}) {x.dim()})")
    for i, v in enumerate(x.shape):
        eng.add(f"(set (dim ${name} {i}) (DLit {v}))")


def _holds(eng, fact):
    try:
        eng.run1(f"(check {fact})")
        return True
    except EngineError:
        return False


CASES = [((2, 3, 4), s) for s in ([6, 4], [2, 12], [2, 3, 4], [24], [2, 3, 2, 2], [1, 2, 3, 4], [4, 3, 2], [2, 1, 3, 4])]


@pytest.mark.parametrize("shape,s", CASES)
def test_view_kept_dims_match_torch(shape, s):
    x = tensor(random.Random(zlib.crc32(f"view {shape} {s}".encode())), *shape)
    eng = Engine(LIB)
    _leaf(eng, "x", x)
    eng.add(f"(let $v (view $x {_dlist(s)}))")
    eng.settle()
    for i in range(len(s) + 2):
        assert _holds(eng, f"(vpfx $x {_dlist(s)} {i})") == terms.VIEW_RELATIONS["vpfx"](x, s, i), ("vpfx", i)
        assert _holds(eng, f"(vsfx $x {_dlist(s)} {i})") == terms.VIEW_RELATIONS["vsfx"](x, s, i), ("vsfx", i)


@pytest.mark.parametrize("xs,ys", [((2, 3, 4, 5), (2, 3, 5, 4)), ((2, 3, 4, 5), (3, 2, 5, 4)),
                                   ((6, 4, 5), (6, 5, 2)), ((2, 3, 4, 5), (2, 4, 5, 4))])
def test_bmm_batch_dims_match_torch(xs, ys):
    rng = random.Random(zlib.crc32(f"bmm {xs} {ys}".encode()))
    x, y = tensor(rng, *xs), tensor(rng, *ys)
    bh = 1
    for v in xs[:-2]:
        bh *= v
    eng = Engine(LIB)
    _leaf(eng, "x", x)
    _leaf(eng, "y", y)
    eng.add(f"(let $z (bmm (view $x {_dlist([bh, xs[-2], xs[-1]])}) (view $y {_dlist([bh, ys[-2], ys[-1]])})))")
    eng.settle()
    for i in range(len(xs) + 1):
        assert _holds(eng, f"(bsame $x $y {i})") == terms.VIEW_RELATIONS["bsame"](x, y, i), i


@pytest.mark.parametrize("p", [[0], [1, 0], [2, 0, 1, 3], [3, 1, 0, 2]])
def test_permutation_positions(p):
    eng = Engine(LIB)
    lst = "(INil)"
    for d in reversed(p):
        lst = f"(ICons {d} {lst})"
    eng.add(f"(let $p {lst})")
    eng.settle()
    for d in range(len(p)):
        out = eng.run1(f"(extract (ipos $p {d}))")[0]
        assert out.termdag.to_string(out.term) == str(p.index(d))
