"""Conformance of the lowering with torch on torch's OpInfo database (tests/tooling/conformance.py).

Every OpInfo whose traced ATen graph has a node the lowering accepts is checked on a few samples
(the most novel: non-default keyword arguments and 0-D inputs first; float64, plus int64 and bool
where supported): each lowered term, evaluated on the real values of the node's inputs, must be
the node's real value (shape, dtype, value).  A disagreement is a lowering the checker would
prove false refinements with.

KNOWN would list known disagreements as strict xfails; it is empty: there are none.  The full
table with every sample: ``python benchmarks/opinfo_conformance.py``.
"""
from __future__ import annotations

import warnings

import pytest
import torch

from tooling import conformance as C
from entangle_py.ir import graph as G
from entangle_py.semantics import lower as L

op_db = pytest.importorskip("torch.testing._internal.common_methods_invocations").op_db

CAP = {torch.float64: 2, torch.int64: 1, torch.bool: 1}
OPS = {C.opinfo_name(o): o for o in op_db}

KNOWN: dict[str, str] = {}


def _params():
    for name in OPS:
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN[name])] if name in KNOWN else []
        yield pytest.param(name, marks=marks, id=name)


@pytest.fixture(autouse=True)
def _quiet_and_seeded():
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _disagreements(res: C.OpResult) -> list[str]:
    return [f"{desc} | {nv}" for desc, v in res.samples for nv in v.disagreements]


@pytest.mark.parametrize("name", list(_params()))
def test_lowering_conforms_to_torch(name):
    op = OPS[name]
    if not C.accepts_any(op):
        return          # the lowering refuses every node: nothing it could get wrong
    res = C.run_opinfo(op, CAP)
    bad = _disagreements(res)
    assert not bad, f"{name}: {len(bad)} disagreement(s):\n  " + "\n  ".join(bad)


@pytest.mark.parametrize("name", [n for n, o in OPS.items() if o.inplace_variant is not None])
def test_in_place_variant_conforms_to_torch(name):
    """The in-place variant (``add_``), made functional by entangle's own pass (the one imported
    graphs go through): its writes are the eager call's, and its lowering agrees with torch."""
    op = OPS[name]
    if not C.accepts_any(op, inplace=True):
        return
    res = C.run_opinfo(op, CAP, inplace=True)
    bad = _disagreements(res)
    assert not bad, f"{name} (in place): {len(bad)} disagreement(s):\n  " + "\n  ".join(bad)
    missed = [f"{desc} | {v.why}" for desc, v in res.samples if "does not return it" in v.why]
    assert not missed, missed


def test_in_place_variants_are_checked():
    """Not vacuous: in-place variants of ops the lowering accepts are traced, functionalized and agree."""
    for name in ("add", "mul", "index_add", "exp"):
        res = C.run_opinfo(OPS[name], {torch.float64: 2}, (torch.float64,), inplace=True)
        assert res.name == f"{name} (in place)" and res.count("agree") >= 1, res.samples


# ----------------------------------------------------------------------------- self-tests:
# a deliberately wrong lowering must be caught.

def _wrong(patch):
    """A lowerer class that lowers as the real one except where ``patch(node, var)`` returns a
    result (only the public API of lower.Lowerer is used)."""
    class Wrong:
        def __init__(self, graph, constants=None):
            self.inner = L.Lowerer(graph, constants)
            self.var = L.ref

        def lower(self, n):
            out = patch(n, self.var)
            return out if out is not None else self.inner.lower(n)
    return Wrong


def _check(name, lowerer_cls, dtypes=(torch.float64,), cap=4):
    return C.run_opinfo(OPS[name], cap, dtypes, lowerer_cls)


def test_sub_lowered_as_add_is_caught():
    def patch(n, var):
        if n.target == "aten.sub.Tensor":
            return L.Term(f'(binary "add" {var(n.args[0].name)} {var(n.args[1].name)})')
    res = _check("sub", _wrong(patch))
    assert res.count("disagree") >= 3, res.samples


def test_dropped_rounding_mode_is_caught():
    def patch(n, var):
        if n.target == "aten.div.Tensor_mode":
            return L.Term(f'(binary "div" {var(n.args[0].name)} {var(n.args[1].name)})')
    res = _check("div.floor_rounding", _wrong(patch))
    assert res.count("disagree") >= 3
    assert any("value" in nv.why for _, v in res.samples for nv in v.disagreements)


def test_dropped_alpha_is_caught():
    def patch(n, var):
        if n.target == "aten.add.Tensor" and isinstance(n.args[1], G.Ref):
            return L.Term(f'(binary "add" {var(n.args[0].name)} {var(n.args[1].name)})')
    res = _check("add", _wrong(patch), cap=2)       # pick_samples puts the alpha= samples first
    assert any("alpha" in desc for desc, v in res.samples if v.kind == "disagree"), res.samples


def test_opaque_key_without_a_constant_argument_is_caught():
    def patch(n, var):
        if n.target == "aten.cumsum.default":
            return L.Term(f'(opaque "aten.cumsum.default" (Cons {var(n.args[0].name)} (Nil)))')
    res = _check("cumsum", _wrong(patch))
    whys = [nv.why for _, v in res.samples for nv in v.disagreements]
    assert whys and all("drops argument" in w for w in whys)


def test_opaque_term_without_a_tensor_argument_is_caught():
    def patch(n, var):
        if n.target == "aten.where.self":
            return L.Term(f'(opaque "aten.where.self" (Cons {var(n.args[1].name)} (Cons {var(n.args[2].name)} (Nil))))')
    res = _check("where", _wrong(patch))
    assert res.count("disagree") >= 3
    assert all("tensors" in nv.why for _, v in res.samples for nv in v.disagreements)


def test_wrong_dtype_and_shape_are_caught():
    def patch(n, var):
        if n.target == "aten.mm.default":     # right values, wrong dtype
            return L.Term(f'(unary "to_float32" (mm {var(n.args[0].name)} {var(n.args[1].name)}))')
        if n.target == "aten.sum.dim_IntList":   # keepdim ignored
            t = n.args[0]
            return L.Term(f'(reduce "sum" {var(t.name)} (ICons 0 (INil)) 1)')
    assert _check("mm", _wrong(patch)).count("disagree") >= 3
    wrong_sum = _check("sum", _wrong(patch), cap=8)
    assert any("shape" in nv.why or "value" in nv.why for _, v in wrong_sum.samples for nv in v.disagreements)


def test_faithful_lowerings_agree():
    """The harness is not vacuous: ops lowered exactly agree on every sample."""
    for name in ("mm", "softmax", "nn.functional.gelu", "cat", "transpose", "bmm"):
        res = _check(name, None)
        assert res.samples and all(v.kind == "agree" for _, v in res.samples), (name, res.samples)


# ----------------------------------------------------------------------------- lowerings the OpInfo
# samples do not reach: the pick form of gather (an index column along the last dim) and
# nll_loss's ignore_index in and out of the classes, every reduction, 1-D and 2-D.

def _sample(*args, **kwargs):
    from types import SimpleNamespace
    return SimpleNamespace(input=args[0], args=args[1:], kwargs=kwargs)


def _agree(fn, *args, **kwargs):
    v = C.check_sample(fn, _sample(*args, **kwargs))
    assert v.kind == "agree", v.nodes
    return v


def test_gather_of_an_index_column_is_a_pick():
    g = torch.Generator().manual_seed(0)
    for shape, dim in (((5,), 0), ((4, 6), 1), ((4, 6), -1), ((2, 3, 5), 2), ((3, 1), 1)):
        x = torch.randn(*shape, generator=g, dtype=torch.float64)
        idx = torch.randint(0, shape[-1], shape[:-1] + (1,), generator=g)
        v = _agree(torch.gather, x, dim, idx)
        assert any("pick" in nv.term for nv in v.nodes if nv.target == "aten.gather.default")
    # any other gather stays opaque (congruence only)
    x = torch.randn(4, 6, dtype=torch.float64)
    v = C.check_sample(torch.gather, _sample(x, 0, torch.zeros(1, 6, dtype=torch.long)))
    assert v.kind == "opaque", v.nodes


def test_nll_loss_ignore_index_and_reductions():
    g = torch.Generator().manual_seed(1)
    L = torch.randn(6, 5, generator=g).log_softmax(-1)
    t = torch.tensor([0, 4, 2, -100, 1, 3])
    for red in ("none", "sum", "mean"):
        for c, tt in ((-100, t), (2, t.clamp(min=0)), (-1, torch.full((6,), -1)), (7, t.clamp(min=0))):
            _agree(torch.nn.functional.nll_loss, L, tt, reduction=red, ignore_index=c)
        _agree(torch.nn.functional.nll_loss, L[0], t[1], reduction=red)          # one sample: [C], 0-D target
        _agree(torch.nn.functional.nll_loss, L[0], t[3], reduction=red)          # ... ignored
    _agree(torch.nn.functional.cross_entropy, torch.randn(4, 3, dtype=torch.float64), torch.tensor([2, 0, 1, 1]))
    v = C.check_sample(torch.nn.functional.nll_loss, _sample(L, t, weight=torch.rand(5)))
    assert v.kind == "refused", v.nodes


def _nll_backward(g, L, t, reduction, c):
    _, tw = torch.ops.aten.nll_loss_forward(L, t, None, reduction, c)
    return torch.ops.aten.nll_loss_backward(g, L, t, None, reduction, c, tw)


def _node(v, target):
    (nv,) = [nv for nv in v.nodes if nv.target == target]
    return nv


def test_nll_loss_backward_ignore_index_and_reductions():
    """nll_loss_backward on every reduction (0 none, 1 mean, 2 sum), 1-D and 2-D, with the ignore
    index absent, present, negative, among the classes and outside them, all targets ignored
    (mean: total_weight 0); a class weight is refused."""
    g = torch.Generator().manual_seed(2)
    L = torch.randn(6, 5, generator=g, dtype=torch.float64).log_softmax(-1)
    t = torch.tensor([0, 4, 2, -100, 1, 3])
    for red in (0, 1, 2):
        for c, tt in ((-100, t), (-100, t.clamp(min=0)), (2, t.clamp(min=0)), (-1, torch.full((6,), -1)),
                      (7, t.clamp(min=0)), (4, torch.full((6,), 4))):
            go = torch.randn(6 if red == 0 else (), generator=g, dtype=torch.float64)
            v = _agree(_nll_backward, go, L, tt, red, c)
            assert _node(v, "aten.nll_loss_backward.default").kind == "agree"
        for ti in (t[1], t[3]):                   # one sample: [C], a 0-D target (kept, ignored)
            _agree(_nll_backward, torch.randn((), generator=g, dtype=torch.float64), L[0], ti, red, -100)
    w = torch.rand(5, dtype=torch.float64)
    v = C.check_sample(lambda go, L, t, w: torch.ops.aten.nll_loss_backward(
        go, L, t, w, 1, -100, torch.ops.aten.nll_loss_forward(L, t, w, 1, -100)[1]),
        _sample(torch.ones((), dtype=torch.float64), L, t.clamp(min=0), w))
    assert _node(v, "aten.nll_loss_backward.default").kind == "refused", v.nodes


def test_log_softmax_backward_data():
    g = torch.Generator().manual_seed(3)
    for shape in ((4, 6), (6,), (2, 3, 4), (3, 1), ()):
        x = torch.randn(shape, generator=g, dtype=torch.float64)
        for d in range(-max(len(shape), 1), max(len(shape), 1)):
            y = torch.log_softmax(x, d)
            go = torch.randn(shape, generator=g, dtype=torch.float64)
            v = _agree(lambda go, y, d: torch.ops.aten._log_softmax_backward_data(go, y, d, torch.float64), go, y, d)
            assert _node(v, "aten._log_softmax_backward_data.default").kind == "agree"
    # a float32 gradient of a float64 input (input_dtype: a cast back) is refused
    x = torch.randn(3, 4)
    v = C.check_sample(lambda go, y: torch.ops.aten._log_softmax_backward_data(go, y, 1, torch.float64),
                       _sample(torch.randn(3, 4), torch.log_softmax(x, 1)))
    assert v.kind == "refused", v.nodes


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_gradient_as_autograd_computes_it(reduction):
    """The whole gradient of cross_entropy as autograd traces it (log_softmax, nll_loss_forward,
    nll_loss_backward, _log_softmax_backward_data): every node's term is torch's value."""
    def grad(x, t, c):
        x = x.detach().requires_grad_(True)
        with torch.enable_grad():
            out = torch.nn.functional.cross_entropy(x, t, reduction=reduction, ignore_index=c)
            return torch.autograd.grad(out.sum(), x)[0]
    g = torch.Generator().manual_seed(4)
    for x, t, c in ((torch.randn(6, 5, generator=g, dtype=torch.float64), torch.tensor([0, 4, 2, -100, 1, 3]), -100),
                    (torch.randn(4, 3, generator=g, dtype=torch.float64), torch.tensor([2, 0, 1, 1]), 1),
                    (torch.randn(7, generator=g, dtype=torch.float64), torch.tensor(3), -100)):
        v = C.check_sample(grad, _sample(x, t, c))
        assert not v.disagreements and v.kind in ("agree", "opaque"), v.nodes   # ones_like: an allocation
        for target in ("aten.nll_loss_backward.default", "aten._log_softmax_backward_data.default"):
            assert _node(v, target).kind == "agree"


def test_log_softmax_casts():
    x = torch.randn(3, 7)
    _agree(torch.log_softmax, x, 1)
    _agree(torch.log_softmax, x, 0, dtype=torch.float64)
    # half precision computes in float32 and casts back (the harness compares at float64's
    # tolerance, which a bfloat16 result one unit apart fails: only the term is checked here)
    v = C.check_sample(torch.log_softmax, _sample(x.to(torch.bfloat16), 1))
    (nv,) = [nv for nv in v.nodes if nv.target == "aten._log_softmax.default"]
    assert nv.term.startswith('(unary "to_bfloat16"') and '(unary "to_float32" v:' in nv.term


def test_constant_pad_is_a_concat_with_constant_blocks():
    x = torch.randn(2, 3)
    for pad, value in (([0, 1], 0.0), ([2, 0, 1, 1], -1.5), ([-1, 2], 0.0), ([1, -2, 0, -1], 3.0), ([0, 0], 0.0)):
        _agree(torch.constant_pad_nd, x, pad, value)
    _agree(torch.constant_pad_nd, torch.arange(6).view(2, 3), [1, 1], 7)
    v = C.check_sample(torch.constant_pad_nd, _sample(torch.arange(6).view(2, 3), [1, 1], 0.5))
    assert v.kind == "refused", v.nodes          # 0.5 in an integer tensor: not exact


def test_slice_scatter_is_a_concat_around_the_source():
    """x with a slice replaced: every position of the slice, negative and clamped bounds, an empty
    slice, a dim other than 0, and a source of another dtype (torch casts it to x's)."""
    x = torch.randn(5, 3)
    for dim, start, end in ((0, 0, 2), (0, 1, 3), (0, 3, 5), (0, 0, 5), (0, -2, None), (0, 2, 2), (1, 1, 3),
                            (0, None, 2), (0, 4, 9)):
        size = len(range(*slice(start, end).indices(x.shape[dim])))
        src_shape = [size, 3] if dim == 0 else [5, size]
        _agree(torch.slice_scatter, x, torch.randn(src_shape), dim, start, end)
    _agree(torch.slice_scatter, x, torch.randn(2, 3, dtype=torch.float64), 0, 1, 3)
    _agree(torch.slice_scatter, x, torch.arange(6).view(2, 3), 0, 3, 5)


def test_slice_scatter_into_zeros_is_the_source_padded():
    """A write into a buffer of zeros (zeros, new_zeros, zeros_like, through a clone) is the
    source zero-padded: every position, both dims, a source of another dtype; the term is a zpad
    for float buffers and the concat form for integer ones."""
    def into(make):
        return lambda src, dim, start, end: torch.slice_scatter(make(src), src, dim, start, end)
    buffers = {
        "zeros": lambda src: torch.zeros(5, 3),
        "new_zeros": lambda src: src.new_zeros(5, 3, dtype=torch.float64),
        "zeros_like_clone": lambda src: torch.zeros_like(torch.ones(5, 3, dtype=torch.float16)).clone(),
    }
    for name, make in buffers.items():
        for dim, start, end in ((0, 0, 2), (0, 1, 3), (0, 3, 5), (1, 1, 3), (1, 0, 1), (0, 2, 2)):
            size = end - start
            src = torch.randn([size, 3] if dim == 0 else [5, size])
            v = C.check_sample(into(make), _sample(src, dim, start, end))
            (nv,) = [nv for nv in v.nodes if nv.target == "aten.slice_scatter.default"]
            assert nv.kind == "agree" and nv.term.startswith("(zpad "), (name, dim, start, end, nv)
    v = C.check_sample(into(lambda src: torch.zeros(5, 3, dtype=torch.int64)), _sample(torch.arange(6).view(2, 3), 0, 1, 3))
    (nv,) = [nv for nv in v.nodes if nv.target == "aten.slice_scatter.default"]
    assert nv.kind == "agree" and not nv.term.startswith("(zpad "), nv


@pytest.mark.parametrize("op, target", [(torch.scatter_add, "aten.scatter_add.default"),
                                        (torch.scatter, "aten.scatter.src")], ids=["scatter_add", "scatter"])
def test_one_column_into_zeros_is_a_placement(op, target):
    """One index column per row into a buffer of zeros (zeros, new_zeros, zeros_like through a
    clone) along the last dim of 1-, 2- and 3-D buffers is ``place``: added (scatter_add, the
    gradient of a pick) or written (scatter, topk's and max's values' gradient: each row written
    once).  Refused: a buffer that is not zeros, several columns (two writes of a row may hit one
    position), another dim, an integer buffer."""
    g = torch.Generator().manual_seed(2)

    def into(make):
        return lambda src, dim, idx: op(make(src), dim, idx, src)
    buffers = {
        "zeros": lambda shape, dt: (lambda src: torch.zeros(*shape, dtype=dt)),
        "new_zeros": lambda shape, dt: (lambda src: src.new_zeros(*shape)),
        "zeros_like_clone": lambda shape, dt: (lambda src: torch.zeros_like(torch.ones(*shape, dtype=dt)).clone()),
    }

    def lowered(fn, *args):
        (nv,) = [nv for nv in C.check_sample(fn, _sample(*args)).nodes if nv.target == target]
        return nv
    for shape, dim in (((6,), 0), ((4, 6), 1), ((4, 6), -1), ((2, 3, 5), 2), ((3, 1), 1)):
        for dt in (torch.float64, torch.float32):
            for name, make in buffers.items():
                idx = torch.randint(0, shape[-1], shape[:-1] + (1,), generator=g)
                src = torch.randn(*shape[:-1], 1, generator=g, dtype=dt)
                nv = lowered(into(make(shape, dt)), src, dim, idx)
                assert nv.kind == "agree" and "(place " in nv.term, (name, shape, nv)
    # topk's backward as autograd writes it: the values' gradient placed at the indices
    _, ids = torch.randn(5, 4, dtype=torch.float64).topk(1, dim=-1)
    nv = lowered(into(lambda src: src.new_zeros(5, 4)), torch.randn(5, 1, dtype=torch.float64), 1, ids)
    assert nv.kind == "agree" and "(place " in nv.term, nv
    zeros = into(lambda src: torch.zeros(4, 6, dtype=torch.float64))
    refused = [
        (op, (torch.randn(4, 6, dtype=torch.float64), 1, torch.zeros(4, 1, dtype=torch.long),
              torch.randn(4, 1, dtype=torch.float64))),
        (zeros, (torch.randn(4, 2, dtype=torch.float64), 1, torch.tensor([[0, 0]] * 4))),
        (zeros, (torch.randn(4, 2, dtype=torch.float64), 1, torch.tensor([[0, 1]] * 4))),
        (zeros, (torch.randn(1, 6, dtype=torch.float64), 0, torch.zeros(1, 6, dtype=torch.long))),
        (lambda src, dim, idx: op(torch.zeros(4, 6, dtype=torch.int64), dim, idx, src),
         (torch.ones(4, 1, dtype=torch.int64), 1, torch.zeros(4, 1, dtype=torch.long))),
    ]
    for fn, args in refused:
        nv = lowered(fn, *args)
        assert nv.kind == "refused", nv


def test_topk_gradient_as_autograd_computes_it():
    """topk's values' gradient as autograd traces it (a scatter of k columns at topk's indices
    into zeros): the sum of the columns' placements, topk's indices being different positions in
    every row (ops.DISTINCT_INDICES), along any dim; several columns at indices that are not
    topk's are still refused (two of a row may be one position)."""
    def grad(x, g, k, dim, largest):
        x = x.detach().requires_grad_(True)
        with torch.enable_grad():
            v = x.topk(k, dim=dim, largest=largest).values
            return torch.autograd.grad(v, x, g)[0]
    gen = torch.Generator().manual_seed(5)
    for shape, k, dim, largest in (((4, 5), 2, -1, True), ((4, 5), 3, 1, False), ((6, 3), 2, 0, True),
                                   ((2, 5, 3), 4, 1, True), ((2, 3, 4), 2, -1, False), ((5,), 2, 0, True),
                                   ((3, 4), 1, 0, True)):
        x = torch.randn(*shape, generator=gen, dtype=torch.float64)
        vs = list(shape)
        vs[dim] = k
        v = C.check_sample(grad, _sample(x, torch.randn(*vs, generator=gen, dtype=torch.float64), k, dim, largest))
        assert not v.disagreements, v.nodes
        nv = _node(v, "aten.scatter.src")
        assert nv.kind == "agree" and "(place " in nv.term, (shape, k, dim, nv)

    def two_columns(src, idx):
        return torch.zeros(4, 6, dtype=torch.float64).scatter(1, idx, src)
    nv = _node(C.check_sample(two_columns, _sample(torch.randn(4, 2, dtype=torch.float64),
                                                  torch.tensor([[0, 1]] * 4))), "aten.scatter.src")
    assert nv.kind == "refused", nv


def test_select_backward_is_a_padded_view():
    """select's gradient is the gradient unsqueezed and zero-padded at the index (every dim, a
    negative index, a size-1 dim)."""
    for shape, dim, i in (((3, 4), 0, 1), ((3, 4), 1, 3), ((3, 4), -1, -1), ((2, 3, 5), 1, 0), ((1, 4), 0, 0)):
        v = _agree(lambda g, dim, i, shape=shape: torch.ops.aten.select_backward(g, list(shape), dim, i),
                   torch.randn([s for k, s in enumerate(shape) if k != dim % len(shape)], dtype=torch.float64), dim, i)
        (nv,) = [nv for nv in v.nodes if nv.target == "aten.select_backward.default"]
        assert "opaque" not in nv.term and ("(zpad " in nv.term or shape[dim] == 1), nv


def test_repeat_is_an_expand_between_views():
    x = torch.randn(2, 3)
    for reps in ([1, 1], [2, 1], [1, 3], [2, 2], [3, 1, 2], [0, 2], [2, 1, 1, 1]):
        _agree(torch.Tensor.repeat, x, reps)


def test_topk_row_by_row_is_torch_on_ties():
    """The topk lowering's term applies torch.topk to each row alone (terms.py ``rowwise``): on
    rows full of equal values (and NaN), where OpInfo's random samples have none, the batched
    topk must pick what it picks row by row, for every k / largest / sorted."""
    from entangle_py.semantics import terms
    g = torch.Generator().manual_seed(0)
    for _ in range(300):
        shape = [int(s) for s in torch.randint(1, 5, (int(torch.randint(1, 4, (1,), generator=g)),), generator=g)]
        shape[-1] = int(torch.randint(1, 80, (1,), generator=g))
        x = torch.randint(0, 3, shape, generator=g).double()
        x[x == 2] = float("nan") if bool(torch.rand(1, generator=g) < 0.3) else 2.0
        k = int(torch.randint(0, min(shape[-1], 4) + 1, (1,), generator=g))
        for largest in (0, 1):
            for srt in (0, 1):
                want = torch.topk(x, k, dim=-1, largest=bool(largest), sorted=bool(srt))
                for i in (0, 1):
                    got = terms.evaluate(terms.parse_sexpr(f'(rowwise "topk:{k}:{largest}:{srt}:{i}" x)'), {"x": x})
                    assert torch.equal(got.nan_to_num(9.0), want[i].nan_to_num(9.0)), (shape, k, largest, srt, i)


def test_zeros_times_a_positive_constant_is_zeros():
    """A float buffer of zeros (zeros, new_zeros, zeros_like through a clone) times a positive
    constant, finite in float32, is lowered as the zeros (+0.0 exactly: a rank's zero gradient
    through the backward of x * c).  Not for a negative constant (-0.0), zero, inf or one overflowing
    float32 (nan), nor for a tensor that is not zeros."""
    buffers = {
        "zeros": lambda src: torch.zeros(3, 2, dtype=src.dtype),
        "new_zeros": lambda src: src.new_zeros(3, 2),
        "zeros_like_clone": lambda src: torch.zeros_like(src).clone(),
    }

    def lowered(fn, src):
        (nv,) = [nv for nv in C.check_sample(fn, _sample(src)).nodes if nv.target == "aten.mul.Tensor"]
        return nv
    for dt in (torch.float16, torch.float32, torch.float64):
        src = torch.randn(3, 2).to(dt)
        for name, make in buffers.items():
            for c in (2, 0.5, 1e30):
                nv = lowered(lambda s, make=make, c=c: make(s) * c, src)
                assert nv.kind == "agree" and nv.term.startswith('(cst "0.0"'), (name, dt, c, nv)
            for c in (-2.0, 0.0, float("inf"), 1e300):
                nv = lowered(lambda s, make=make, c=c: make(s) * c, src)
                assert nv.kind == "agree" and nv.term.startswith("(scalar"), (name, dt, c, nv)
        nv = lowered(lambda s: s * 2, src)
        assert nv.kind == "agree" and nv.term.startswith("(scalar"), nv


def test_index_copy_at_distinct_ids_is_a_row_write():
    """index_copy at ids shown distinct (an int64 arange of any integer bounds, a reshape of a 1-D
    tensor's nonzero, topk's indices of a 1-D tensor) is the rows ``iput`` writes, along every
    dim; at any other ids (an input, repeated ids: which write wins is the device's) it is a free
    value, related to nothing, even where the ids happen to be distinct."""
    T = "aten.index_copy.default"
    g = torch.Generator().manual_seed(3)
    for shape, dim in (((5,), 0), ((5, 3), 0), ((3, 5), 1), ((3, 5), -1), ((2, 5, 4), 1), ((2, 3, 5), 2)):
        x = torch.randn(*shape, generator=g, dtype=torch.float64)
        d = dim % len(shape)
        for ids_of in (lambda: torch.arange(1, 4), lambda: torch.arange(4, -1, -2), lambda: torch.arange(2).clone()):
            ss = list(shape)
            ss[d] = ids_of().numel()
            src = torch.randn(*ss, generator=g, dtype=torch.float64)
            if ids_of().max() >= shape[d]:
                continue
            nv = _node(_agree(lambda x, s, f=ids_of: x.index_copy(dim, f(), s), x, src), T)
            assert "(iput " in nv.term, nv
        ss = list(shape)
        ss[d] = 2
        src = torch.randn(*ss, generator=g, dtype=torch.float64)
        mask = torch.tensor([True, False, False, True] + [False] * (shape[d] - 4)) if shape[d] >= 4 else None
        if mask is not None:
            nv = _node(_agree(lambda x, s, m: x.index_copy(dim, m.nonzero().view(-1), s), x, src, mask), T)
            assert "(iput " in nv.term, nv
        score = torch.randn(shape[d], generator=g, dtype=torch.float64)
        nv = _node(_agree(lambda x, s, w: x.index_copy(dim, w.topk(2).indices, s), x, src, score), T)
        assert "(iput " in nv.term, nv
    x, src = torch.randn(4, 3, dtype=torch.float64), torch.randn(3, 3, dtype=torch.float64)
    for ids in (torch.tensor([0, 0, 3]), torch.tensor([2, 1, 3])):
        nv = _node(C.check_sample(torch.index_copy, _sample(x, 0, ids, src)), T)
        assert nv.kind == "free", nv
    # repeated ids the program computes: an arange repeated, a 2-D topk's indices flattened
    nv = _node(C.check_sample(lambda x, s: x.index_copy(0, torch.arange(2).repeat(2)[:3].clone(), s),
                              _sample(x, src)), T)
    assert nv.kind == "free", nv
    nv = _node(C.check_sample(lambda x, s, w: x.index_copy(0, w.topk(2).indices.reshape(-1)[:3], s),
                              _sample(x, src, torch.randn(2, 4, dtype=torch.float64))), T)
    assert nv.kind == "free", nv


# ----------------------------------------------------------------------------- op classes: the
# reductions, attention, losses and pointwise calls lowered by class, on a broad generic input
# space (broadcasting, size-1, empty and 0-D operands, negative dims, dtypes)

_SHAPES = [(3, 4), (1, 5), (0, 3), (2, 1, 3), (4,), ()]


def _dims(shape):
    nd = max(len(shape), 1)
    out = [None] + [[d] for d in range(-nd, nd)]
    if len(shape) >= 2:
        out += [[0, -1], [-1, 0]]
    return out


def _nodes(v, target):
    return [nv for nv in v.nodes if nv.target == target]


def test_reductions_by_class_agree_with_torch():
    g = torch.Generator().manual_seed(7)
    ops_ = {
        "aten.logsumexp.default": lambda x, d, k: torch.logsumexp(x, d, keepdim=k) if d else None,
        "aten.linalg_vector_norm.default": lambda x, d, k: torch.linalg.vector_norm(x, 3, dim=d, keepdim=k),
        "aten.prod.dim_int": lambda x, d, k: x.prod(d[0], keepdim=k) if d and len(d) == 1 else x.prod(),
        "aten.var.correction": lambda x, d, k: torch.var(x, dim=d, correction=0, keepdim=k),
        "aten.std.correction": lambda x, d, k: torch.std(x, dim=d, keepdim=k),
        "aten.var_mean.correction": lambda x, d, k: torch.var_mean(x, dim=d, correction=2, keepdim=k),
        "aten.nansum.default": lambda x, d, k: torch.nansum(x, dim=d, keepdim=k),
        "aten.amin.default": lambda x, d, k: x.amin(dim=d or (), keepdim=k),
    }
    seen = {t: 0 for t in ops_}
    for shape in _SHAPES:
        for dtype in (torch.float64, torch.float32, torch.int64):
            x = (torch.randn(shape, generator=g) * 3).to(dtype)
            if dtype.is_floating_point and x.numel():
                x.view(-1)[0] = float("nan") if shape == (3, 4) else x.view(-1)[0]
            for dims in _dims(shape):
                for keep in (False, True):
                    for target, fn in ops_.items():
                        try:
                            if fn(x, dims, keep) is None:
                                continue
                        except (RuntimeError, IndexError):
                            continue            # torch refuses the call (an int norm, an empty min)
                        v = C.check_sample(lambda x, fn=fn: fn(x, dims, keep), _sample(x))
                        assert not v.disagreements and v.kind == "agree", (target, shape, dtype, dims, keep, v.nodes)
                        seen[target] += bool(_nodes(v, target))
    for ord_ in (0, 1, 2, float("inf"), float("-inf"), 0.5):
        v = _agree(lambda x: torch.linalg.vector_norm(x, ord_, dim=-1), torch.randn(3, 4, generator=g))
        assert _node(v, "aten.linalg_vector_norm.default").kind == "agree"
    _agree(lambda x: torch.linalg.vector_norm(x, dtype=torch.float64), torch.randn(3, 4, generator=g))
    _agree(lambda x: torch.norm(x, p=1, dim=(0, 1)), torch.randn(3, 4, generator=g, dtype=torch.float64))
    _agree(lambda x: x.sum(-1, dtype=torch.float64), torch.randint(-5, 5, (3, 4), generator=g))
    assert all(seen.values()), seen


def _attention(dtype=torch.float64, **kw):
    return lambda q, k, v, *m: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        q, k, v, attn_mask=m[0] if m else None, **kw)


def test_cpu_attention_is_its_math():
    """F.scaled_dot_product_attention on CPU: queries and keys of other lengths (1 included),
    causal, float and bool masks with rows masked whole (the kernel gives 0 there), a scale."""
    T = "aten._scaled_dot_product_flash_attention_for_cpu.default"
    g = torch.Generator().manual_seed(8)
    for (b, h, lq, lk, e) in ((2, 3, 5, 7, 4), (1, 2, 1, 6, 8), (2, 1, 4, 1, 3), (1, 1, 6, 6, 2)):
        q, k, v = (torch.randn(b, h, n, e, generator=g, dtype=torch.float64) for n in (lq, lk, lk))
        fm = torch.randn(lq, lk, generator=g, dtype=torch.float64)
        fm[0] = float("-inf")
        bm = torch.rand(b, 1, lq, lk, generator=g) < 0.6
        for fn, args in ((_attention(), (q, k, v)), (_attention(is_causal=True), (q, k, v)),
                         (_attention(scale=0.25), (q, k, v, fm)), (_attention(is_causal=True), (q, k, v, fm)),
                         (lambda q, k, v, m: torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m),
                          (q, k, v, bm))):
            v_ = _agree(fn, *args)
            assert _node(v_, T).kind == "agree"
    q = torch.randn(1, 2, 3, 4, generator=g)
    v_ = C.check_sample(_attention(), _sample(q.bfloat16(), q.bfloat16(), q.bfloat16()))
    assert _node(v_, T).kind == "refused"           # computed in float32 inside the kernel


def _attention_backward(is_causal=False, scale=None):
    def fn(go, q, k, v, *m):
        mask = m[0] if m else None
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, is_causal=is_causal,
                                                                              attn_mask=mask, scale=scale)
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
            go, q, k, v, out, lse, 0.0, is_causal, attn_mask=mask, scale=scale)
    return fn


def test_cpu_attention_backward_is_its_math():
    """The CPU attention's backward (dq, dk, dv) against torch's kernel, fed the forward's output:
    the forward's space (other lengths, 1 included, causal, float masks with a row masked whole --
    zero gradients there --, a scale), in float64 as the forward's test (the check's
    tolerance is float64's: the float32 kernel's blocked sums differ from the math by 1e-7)."""
    T = "aten._scaled_dot_product_flash_attention_for_cpu_backward.default"
    g = torch.Generator().manual_seed(18)
    dtype = torch.float64
    for (b, h, lq, lk, e) in ((2, 3, 5, 7, 4), (1, 2, 1, 6, 8), (2, 1, 4, 1, 3), (1, 1, 6, 6, 2)):
        q, k = (torch.randn(b, h, n, e, generator=g, dtype=dtype) for n in (lq, lk))
        v = torch.randn(b, h, lk, e, generator=g, dtype=dtype)      # the kernel wants one head size
        go = torch.randn(b, h, lq, e, generator=g, dtype=dtype)
        fm = torch.randn(lq, lk, generator=g, dtype=dtype)
        fm[0] = float("-inf")
        for kw, m in (({}, ()), ({"is_causal": True}, ()), ({"scale": 0.25}, (fm,)), ({"is_causal": True}, (fm,))):
            v_ = _agree(_attention_backward(**kw), go, q, k, v, *m)
            assert _node(v_, T).kind == "agree", (b, h, lq, lk, e, kw)
    # dropout is random: refused, never dropped
    q = torch.randn(1, 2, 3, 4, generator=g, dtype=torch.float64)
    v_ = C.check_sample(lambda go, q: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
        go, q, q, q, q, torch.zeros(1, 2, 3, dtype=torch.float64), 0.5, False), _sample(q, q))
    assert _node(v_, T).kind == "refused"


def test_mse_loss_and_its_gradient():
    g = torch.Generator().manual_seed(9)
    for xs, ys in (((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((), ()), ((0, 2), (0, 2))):
        x, y = torch.randn(xs, generator=g, dtype=torch.float64), torch.randn(ys, generator=g, dtype=torch.float64)
        for red in ("none", "mean", "sum"):
            if red == "mean" and not x.numel():
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                v = _agree(lambda a, b: torch.nn.functional.mse_loss(a, b, reduction=red), x, y)
            assert _node(v, "aten.mse_loss.default").kind == "agree"
    for shape in ((3, 4), (5,), ()):
        x, y = torch.randn(shape, generator=g, dtype=torch.float64), torch.randn(shape, generator=g, dtype=torch.float64)
        for red in (0, 1, 2):
            go = torch.randn(shape if red == 0 else (), generator=g, dtype=torch.float64)
            v = _agree(lambda go, a, b: torch.ops.aten.mse_loss_backward(go, a, b, red), go, x, y)
            assert _node(v, "aten.mse_loss_backward.default").kind == "agree"
    half = torch.randn(3, dtype=torch.float16)
    v = C.check_sample(torch.nn.functional.mse_loss, _sample(half, half))
    assert _node(v, "aten.mse_loss.default").kind == "refused"


def test_safe_softmax_zeroes_rows_of_minus_infinity():
    g = torch.Generator().manual_seed(10)
    for shape in ((3, 4), (2, 1, 3), (5,), (1, 1)):
        x = torch.randn(shape, generator=g, dtype=torch.float64)
        x.view(-1)[: shape[-1]] = float("-inf")
        for d in range(-len(shape), len(shape)):
            v = _agree(lambda x: torch.ops.aten._safe_softmax(x, d), x)
            assert _node(v, "aten._safe_softmax.default").kind == "agree"
        _agree(lambda x: torch.ops.aten._safe_softmax(x, -1, torch.float64), x.float())


_CALLS = [
    (lambda x: torch.clamp(x, min=0), 1), (lambda x: torch.clamp(x, -1, 0.5), 1), (lambda x: x.clamp(max=2), 1),
    (lambda x: torch.pow(2.0, x), 1), (lambda x: torch.pow(3, x), 1), (torch.cos, 1), (torch.sin, 1),
    (lambda x: torch.nn.functional.leaky_relu(x, 0.1), 1), (torch.isnan, 1), (torch.sign, 1),
    (lambda a, b: torch.clamp(a, min=b), 2), (lambda a, b: torch.lerp(a, b, 0.25), 2), (torch.atan2, 2),
    (torch.logaddexp, 2), (torch.fmod, 2), (lambda a, b, c: torch.clamp(a, b, c), 3),
    (lambda a, b, c: torch.addcmul(a, b, c, value=-2), 3), (lambda a, b, c: torch.lerp(a, b, c), 3),
]


@pytest.mark.parametrize("i", range(len(_CALLS)))
def test_pointwise_calls_broadcast_and_keep_their_constants(i):
    """Calls of pointwise ops with constants, on broadcast, size-1, empty and 0-D operands, float64,
    float32 and int64 / bool: the term is the call, every sample agrees or is refused by torch."""
    fn, arity = _CALLS[i]
    g = torch.Generator().manual_seed(11 + i)
    shapes = [((3, 4), (4,), (3, 1)), ((2, 1, 4), (3, 1), (1,)), ((0, 4), (1, 4), (4,)), ((), (2,), ()),
              ((1,), (1, 1), (1, 1, 1))]
    agreed = 0
    for shape in shapes:
        for dtype in (torch.float64, torch.float32, torch.int64, torch.bool):
            xs = [(torch.randn(s, generator=g) * 3).to(dtype) for s in shape[:arity]]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                v = C.check_sample(fn, _sample(*xs))
            assert not v.disagreements, (i, shape, dtype, v.nodes)
            agreed += v.kind == "agree"
    assert agreed >= len(shapes), (i, agreed)
