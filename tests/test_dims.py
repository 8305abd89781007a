"""Symbolic sizes in lemma side conditions: decided by Z3 under ranges and guards, never assumed."""
import sympy

from entangle_py.engine.dims import DimSolver
from entangle_py.config import Limits
from entangle_py.engine.egraph import Engine
from entangle_py.lemmas import load_library
from entangle_py.ir.symbolic import make_symbol

LIB = load_library()


def _engine(guards=()):
    eng = Engine(LIB)
    eng.dims.add_symbol("s0", 2, None)
    eng.dims.add_symbol("s1", 1, None)
    for g in guards:
        eng.dims.add_guard(g)
    for name, rows in (("x", "s0"), ("y", "s1")):
        eng.add(f'(let {name} (Gd "{name}"))')
        eng.add(f"(set (ndim {name}) 2)")
        eng.add(f'(set (dim {name} 0) (DSym "{rows}"))')
        eng.add(f"(set (dim {name} 1) (DLit 3))")
    return eng


def _saturate(eng, term):
    """Run the lemmas to saturation around ``term`` (wrapped so it never counts as clean)."""
    eng.add(f"(let t {term})")
    eng.add('(let goal (unary "exp" t))')
    out = eng.prove_clean("goal", Limits(iterations=30))
    assert out.status == "saturated", out


def test_slice_past_a_symbolic_part_is_the_next_part():
    eng = _engine()
    _saturate(eng, '(slice (concat (Cons x (Cons y (Nil))) 0) 0 (DSym "s0") (DSym "(s0 + s1)"))')
    assert eng.equal("t", "y")          # s0 <= s0, then (s0+s1) - s0 = s1 = rows of y: the whole y


def test_undecidable_comparison_keeps_the_lemma_from_firing():
    eng = _engine()
    # rows [0, s1) lie inside x only if s1 <= s0, which nothing says
    _saturate(eng, '(slice (concat (Cons x (Cons y (Nil))) 0) 0 (DLit 0) (DSym "s1"))')
    assert not eng.equal("t", '(slice x 0 (DLit 0) (DSym "s1"))')
    assert eng.dims.undecided >= 1 and eng.dims.proved == 0


def test_guard_from_capture_decides_the_comparison():
    s0, s1 = make_symbol("s0"), make_symbol("s1")
    eng = _engine(guards=[sympy.Le(s1, s0)])
    _saturate(eng, '(slice (concat (Cons x (Cons y (Nil))) 0) 0 (DLit 0) (DSym "s1"))')
    assert eng.equal("t", '(slice x 0 (DLit 0) (DSym "s1"))')
    assert eng.dims.proved >= 1


def test_z3_uses_ranges_and_handles_floordiv():
    d = DimSolver()
    d.add_symbol("s0", 2, 64)
    s0 = make_symbol("s0")
    from entangle_py.ir.symbolic import FloorDiv
    assert d.proves_le(sympy.Integer(1), s0)                    # from the lower bound
    assert d.proves_le(s0, sympy.Integer(64))                   # from the upper bound
    assert not d.proves_le(s0, sympy.Integer(63))               # s0 = 64 is a counterexample
    assert d.proves_le(FloorDiv(s0, 2), s0)
    assert not d.proves_le(s0, FloorDiv(s0, 2))


def test_symbolic_sums_are_canonical_sizes():
    eng = _engine()
    _saturate(eng, "(concat (Cons x (Cons x (Nil))) 0)")
    assert eng.equal("(dim t 0)", '(DSym "(2*s0)")')   # s0 + s0, canonical


def test_a_size_counted_from_a_sequential_tensor_is_not_clean():
    """A nonzero's row count is a size of the tensor itself (DRows): a constant or a view sized by
    a G_s tensor's count is not clean in the e-graph, as terms.is_clean says (before, cleanliness
    looked at tensor arguments only, and such a term counted as clean with no clean term to extract);
    sized by a G_d tensor's count, it is."""
    from entangle_py.semantics.terms import is_clean, parse_sexpr
    eng = Engine(LIB)
    eng.add('(let m (Gs "nz"))', '(let md (Gd "r0.nz"))')     # a nonzero result of each program
    for name, leaf in (("zs", "m"), ("zd", "md")):
        eng.add(f'(let {name} (cst "0.0" (DCons (DRows {leaf}) (DCons (DLit 3) (DNil))) "float32"))')
    eng.add('(let vd (view (Gd "x") (DCons (DRows md) (DNil))))')
    eng.add('(let vs (view (Gd "x") (DCons (DRows m) (DNil))))')
    eng.prove_clean("zs", Limits(iterations=3))
    assert not eng.holds("(clean zs)") and not eng.holds("(clean vs)")
    assert eng.holds("(clean zd)") and eng.holds("(clean vd)")
    assert not is_clean(parse_sexpr('(cst "0.0" (DCons (DRows (nonzero (Gs "m"))) (DNil)) "float32")'))
