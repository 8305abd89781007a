"""Op classes taken from torch (ir/op_classes.py) and the pointwise calls they admit (semantics/opcall.py).

The table is generated from torch's registries (``torch.Tag.pointwise`` / ``reduction``, DTensor's
pointwise lists) and checked in so that the check path does not import torch: it must be what
torch says today.  Every pointwise op torch lists lowers -- none needs a line of its own -- and
its term means what the op computes, for ops the project names nowhere too.
"""
from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from entangle_py.ir import op_classes, op_classes_torch
from entangle_py.ir.graph import Ref, TorchConst
from tooling import conformance as C
from entangle_py.semantics import lower as L
from entangle_py.semantics import opcall, terms

ROOT = Path(__file__).resolve().parent.parent


def test_checked_in_table_is_what_torch_says():
    assert op_classes.TORCH_VERSION == torch.__version__.split("+")[0]
    assert op_classes_torch.render() == op_classes_torch.TABLE.read_text(), \
        "ir/op_classes.py is stale: python -m entangle_py.ir.op_classes_torch"


def test_table_holds_what_dtensor_calls_pointwise():
    """Not vacuous: the classes hold the ops DTensor shards pointwise and the reductions torch tags."""
    from torch.distributed.tensor._ops._pointwise_ops import pointwise_ops
    functional = [str(o) for o in pointwise_ops if op_classes_torch._functional(o)]
    assert len(functional) > 200
    assert all("pointwise" in op_classes.OPS[t][0] for t in functional)
    reductions = [t for t, e in op_classes.OPS.items() if "reduction" in e[0]]
    assert {"aten.logsumexp.default", "aten.linalg_vector_norm.default", "aten.var.correction"} <= set(reductions)


def test_check_path_reads_the_classes_without_torch():
    code = ("import sys; import entangle_py.ir.op_classes, entangle_py.semantics.opcall as o; "
            "o.render('aten.clamp.default', ('x', 0.0), {}, lambda v: v == 'x'); o.parse('clamp.default(_, 0.0)'); "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_every_pointwise_op_is_lowered():
    """Zero lines per op: each functional pointwise op torch lists (no random draw) has a lowering."""
    missing = [t for t in op_classes.OPS if opcall.pointwise(t) and not L.supported(t)]
    assert not missing, missing


def _is_ref(v):
    return isinstance(v, Ref)


@pytest.mark.parametrize("target, args, kwargs, text", [
    ("aten.clamp.default", (Ref("x"), 0), {}, "clamp.default(_, 0)"),
    ("aten.clamp.default", (Ref("x"), 0.0, None), {}, "clamp.default(_, 0.0)"),
    ("aten.clamp.default", (Ref("x"), None, -1e-05), {}, "clamp.default(_, None, -1e-05)"),
    ("aten.clamp.Tensor", (Ref("x"), None, Ref("y")), {}, "clamp.Tensor(_, None, _)"),
    ("aten.pow.Scalar", (2.0, Ref("x")), {}, "pow.Scalar(2.0, _)"),
    ("aten.cos.default", (Ref("x"),), {}, "cos"),
    ("aten.add.Tensor", (Ref("x"), Ref("y")), {"alpha": 1}, "add"),
    ("aten.add.Tensor", (Ref("x"), Ref("y")), {"alpha": 1.0}, "add.Tensor(_, _, alpha=1.0)"),
    ("aten.gelu.default", (Ref("x"),), {"approximate": "tanh"}, "gelu.default(_, approximate='tanh')"),
    ("aten.nan_to_num.default", (Ref("x"), float("nan"), float("inf"), float("-inf")), {},
     "nan_to_num.default(_, nan, inf, -inf)"),
    ("prims.convert_element_type.default", (Ref("x"), TorchConst("dtype", "float16")), {},
     "prims.convert_element_type.default(_, torch.float16)"),
])
def test_op_text_says_every_constant_exactly(target, args, kwargs, text):
    got, tensors = opcall.render(target, args, kwargs, _is_ref)
    assert got == text
    assert opcall.parse(got)[0] == target and opcall.arity(got) == len(tensors)


@pytest.mark.parametrize("target, args, kwargs, arg", [
    ("aten.clamp.default", (Ref("x"), "min"), {}, "min"),                 # not a constant a text says
    ("aten.atan2.default", (Ref("x"), 2.0), {}, "other"),                 # a number where a tensor goes
    ("aten.clamp.default", (Ref("x"),), {"bogus": 1}, "bogus"),
    ("aten.lerp.Scalar", (Ref("x"), Ref("y")), {}, "weight"),             # a required argument missing
])
def test_op_text_refuses_what_it_cannot_say(target, args, kwargs, arg):
    with pytest.raises(opcall.Unexpressible) as e:
        opcall.render(target, args, kwargs, _is_ref)
    assert e.value.arg == arg


def test_every_bare_name_is_one_overload_and_means_it():
    """A bare name stands for one overload; the named ops the lemmas use are torch's own."""
    by_target, by_name = opcall._bare()
    assert len(by_target) == len(by_name) > 150
    for name in terms.UNARY_NAMES + terms.BINARY_NAMES:
        if name not in terms.UNARY_OPS and name not in terms.BINARY_OPS and not name.startswith("to_"):
            assert name in by_name, name
    x = torch.randn(5, dtype=torch.float64)
    assert torch.equal(terms.unary_fn("exp")(x), torch.exp(x))
    assert torch.equal(terms.binary_fn("maximum")(x, -x), torch.maximum(x, -x))


def _sample(*args, **kwargs):
    return SimpleNamespace(input=args[0], args=args[1:], kwargs=kwargs)


def _named_in_project(name: str) -> bool:
    """Whether any source of the project but the generated table (and this test) names ``name``."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    for d in ("entangle_py", "lemmas", "tests", "benchmarks", "examples"):
        for p in (ROOT / d).rglob("*.py"):
            if p.name not in ("op_classes.py", Path(__file__).name) and word.search(p.read_text(errors="ignore")):
                return True
    return False


# pointwise ops the project names nowhere but in the generated table (checked below): each lowers
# with no line of its own and agrees with torch on broadcast, size-1, empty and 0-D operands
UNSEEN = [
    ("igamma", torch.igamma, 2), ("fmin", torch.fmin, 2), ("special_xlog1py", torch.special.xlog1py, 2),
    ("nextafter", torch.nextafter, 2), ("special_i1e", torch.special.i1e, 1),
    ("sinc", torch.sinc, 1), ("expm1", torch.expm1, 1), ("addcdiv", lambda a, b, c: torch.addcdiv(a, b, c, value=-0.5), 3),
]
SHAPES = [((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (1, 4)), ((2, 1, 4), (3, 1), (1,)), ((0, 4), (4,), (0, 1)),
          ((), (5,), ()), ((1,), (2, 1), (1, 1, 1))]


@pytest.mark.parametrize("name, fn, arity", UNSEEN, ids=[u[0] for u in UNSEEN])
def test_an_unseen_pointwise_op_lowers_and_agrees_with_torch(name, fn, arity):
    assert not _named_in_project(name), f"{name} is named in the project"
    g = torch.Generator().manual_seed(0)
    for shapes in SHAPES:
        for dtype in (torch.float64, torch.float32):
            operands = [torch.rand(s, generator=g, dtype=dtype) * 2 - 0.5 for s in shapes[:arity]]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                v = C.check_sample(fn, _sample(*operands))
            nodes = [nv for nv in v.nodes if nv.kind != "skip"]
            assert v.kind == "agree" and nodes, (name, shapes, v.nodes)
            assert any(name in nv.term for nv in nodes), (name, [nv.term for nv in nodes])


def test_a_wrong_pointwise_constant_is_caught():
    """The harness is not vacuous for calls: a constant changed in the op text disagrees."""
    def patch(n, var):
        if n.target == "aten.leaky_relu.default":
            return L.Term(f'(unary "leaky_relu.default(_, 0.3)" {var(n.args[0].name)})')

    class Wrong:
        def __init__(self, graph, constants=None):
            self.inner = L.Lowerer(graph, constants)

        def lower(self, n):
            return patch(n, L.ref) or self.inner.lower(n)
    x = torch.randn(4, 5, dtype=torch.float64)
    sample = _sample(x, 0.2)
    fn = torch.nn.functional.leaky_relu
    assert C.check_sample(fn, sample).kind == "agree"
    assert C.check_sample(fn, sample, lowerer_cls=Wrong).kind == "disagree"


_REQUIRED = {"number": 0.5, "Optional[number]": 0.5, "float": 0.5, "int": 2, "bool": False}


def _call_of(target):
    """A call of the pointwise ``target`` (its required constants filled) over tensor operands:
    (op text, arity), or None when a required argument is not a number or a bool."""
    args, n = [], 0
    for a in op_classes.OPS[target][2]:
        t = a[1].lstrip("*")
        if len(a) > 2:
            break
        if t == "Tensor":
            args.append(Ref(f"t{n}"))
            n += 1
        elif t in _REQUIRED and not a[1].startswith("*"):
            args.append(_REQUIRED[t])
        else:
            return None
    try:
        text, tensors = opcall.render(target, tuple(args), {}, _is_ref)
    except opcall.Unexpressible:
        return None
    return text, len(tensors)


def test_every_pointwise_op_torch_lists_commutes_with_concat():
    """torch's pointwise tag is not trusted unchecked: each op of the class, called on a concat
    along each dim (a binary one with the other operand split alike, and broadcast), is the
    concat of its calls on the parts -- what the lemmas over unary / binary ops say of every op --
    up to rounding (a vectorised kernel rounds the elements of a SIMD block and of a tail apart)."""
    g = torch.Generator().manual_seed(3)
    checked, bad = 0, []
    for target in sorted(op_classes.OPS):
        if not opcall.pointwise(target) or op_classes.OPS[target][3] != ("Tensor",):
            continue
        call = _call_of(target)
        if call is None or call[1] not in (1, 2):
            continue
        text, arity = call
        fn = terms.unary_fn(text) if arity == 1 else terms.binary_fn(text)
        for dtype in (torch.float64, torch.int64, torch.bool):
            a = (torch.randn(4, 5, generator=g) * 3).to(dtype)
            b = (torch.randn(4, 5, generator=g) * 3).to(dtype)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    whole = fn(a) if arity == 1 else fn(a, b)
            except (RuntimeError, NotImplementedError, TypeError, ValueError):
                continue
            for d in (0, 1):
                pa, pb = a.split([1, 3] if d == 0 else [2, 3], d), b.split([1, 3] if d == 0 else [2, 3], d)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    parts = [fn(x) if arity == 1 else fn(x, y) for x, y in zip(pa, pb)]
                    row = b.narrow(d, 0, 1)
                    try:               # the other operand broadcast: size 1 along d, one for every part
                        bcast = torch.cat([fn(x, row) for x in pa], d) if arity == 2 else None
                    except RuntimeError:
                        bcast = None   # an op that does not broadcast (prims): torch refuses it
                    if bcast is not None and not terms.allclose(bcast, fn(a, row)):
                        bad.append((text, dtype, d, "broadcast"))
                if not terms.allclose(torch.cat(parts, d), whole):
                    bad.append((text, dtype, d))
            checked += 1
    assert not bad, bad
    assert checked > 150, checked


@pytest.mark.parametrize("text", [
    '(mm (ref "a") (ref "b"))',
    '(scalar "mul" (ref "x") 2.0)',
    '(f "(ref \\"x\\")" (ref "y"))',                 # a reference written inside a string literal
    '(f "a\\\\" (ref "q\\"uote"))',                  # escaped backslash and quote
    '(concat (Cons (ref "r") (Cons (ref "r") (Nil))) 0)',
])
def test_binding_a_terms_references_is_the_parsed_terms(text):
    """Term.bind substitutes references in the text; it must be what substituting them in the
    parsed term and printing it gives."""
    from entangle_py.semantics.lower.core import Term
    from entangle_py.semantics.sexpr import Var, parse_sexpr, to_sexpr

    def _bind(t, expr_of):      # the reference: each (ref "<node>") of the parsed term replaced
        if not isinstance(t, tuple):
            return t
        if isinstance(t[0], Var) and t[0].name == "ref":
            return Var(expr_of(t[1]))        # printed verbatim by to_sexpr
        return tuple(_bind(a, expr_of) for a in t)
    expr = {"a": '(Gd "r0.a")', "b": "$v1", "x": "$v2", "y": "$v3", "r": '(Gd "r1.r")', 'q"uote': "$v4"}.__getitem__
    assert Term(text).bind(expr) == to_sexpr(_bind(parse_sexpr(text), expr))
