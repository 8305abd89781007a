"""Backward ops, reductions, layer norm, slice cover: lowering, the op meanings the binary lemmas
rely on, the IList queries behind the reduction lemmas, and end-to-end checks on FX-text graphs
(apex layer norm on a sequence shard, as in Megatron's sequence parallelism)."""
from __future__ import annotations

import random
import textwrap

import pytest
import torch

from entangle_py.ir import graph as G
from entangle_py.semantics import lower as L
from entangle_py.check import spec as S
from entangle_py.semantics import terms
from entangle_py.config import Limits
from entangle_py.engine.egraph import STEP, Engine
from entangle_py.frontend.fx_import import import_fx
from entangle_py.check.checker import Checker
from entangle_py.lemmas import load_library
from lemma_instances.registry import INSTANCES

LIB = load_library()
NEW_BINARY = ["gelu_backward", "gelu_tanh_backward", "silu_backward", "sigmoid_backward", "tanh_backward",
              "threshold_backward:0.0", "threshold_backward:0.5"]


# ----------------------------------------------------------------------------- op meanings

def _tensors(values):
    for v in values:
        if isinstance(v, torch.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _tensors(v)


@pytest.mark.parametrize("op", NEW_BINARY)
def test_backward_ops_satisfy_every_binary_lemma(op):
    """The binary lemmas are generic in the op: each backward op must satisfy them (elementwise,
    broadcasting), checked on the lemmas' own instances with the op substituted -- where the
    lemma's condition admits it (a condition naming the op, e.g. the fill of an ignore index,
    rejects a backward op, so the lemma never fires on one)."""
    n = 0
    for lem in LIB.lemmas:
        if "(binary op" not in lem.lhs and "zip_binary op" not in lem.lhs and "map_binary" not in lem.lhs:
            continue
        rng = random.Random(11)
        for env in INSTANCES[lem.name].instances(rng):
            env = {**env, "op": op}
            if lem.when and not lem.condition_holds(env):
                continue
            if not all(t.is_floating_point() and t.numel() for t in _tensors(env.values())):
                continue    # backward ops take floats only (torch: "not implemented for 'Long'"), and
                            # torch's oneDNN gelu_backward fails broadcasting an empty part
            lhs, rhs = lem.sides(env)
            assert terms.allclose(lhs, rhs), f"{lem.name} with {op}"
            n += 1
    assert n > 20


def test_backward_op_meanings_match_autograd():
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    g = torch.randn(5, dtype=torch.float64)
    for op, f in [("gelu_backward", torch.nn.functional.gelu),
                  ("gelu_tanh_backward", lambda t: torch.nn.functional.gelu(t, approximate="tanh")),
                  ("silu_backward", torch.nn.functional.silu), ("threshold_backward:0.0", torch.relu)]:
        (grad,) = torch.autograd.grad(f(x), x, g)
        assert torch.allclose(terms.binary_fn(op)(g, x.detach()), grad), op
    for op, f in [("sigmoid_backward", torch.sigmoid), ("tanh_backward", torch.tanh)]:
        y = f(x)
        (grad,) = torch.autograd.grad(y, x, g)
        assert torch.allclose(terms.binary_fn(op)(g, y.detach()), grad), op
    assert not torch.allclose(terms.binary_fn("gelu_backward")(g, x.detach()),
                              terms.binary_fn("gelu_tanh_backward")(g, x.detach()))


# ----------------------------------------------------------------------------- lowering

HEADER = "class GraphModule(torch.nn.Module):\n"


def _fx(tmp_path, name, body):
    p = tmp_path / f"{name}.py"
    p.write_text(HEADER + textwrap.indent(textwrap.dedent(body), "    "))
    return str(p)


def _lowered(tmp_path, body):
    g = import_fx([_fx(tmp_path, "g", body)]).ranks[0]
    low = L.Lowerer(g)
    return {n.name: L.bind_result(low.lower(n), lambda name: f"${name}") for n in g.nodes if not n.is_placeholder}


def test_lowering_backward_ops_and_reductions(tmp_path):
    low = _lowered(tmp_path, '''
        def forward(self, a: "f32[2, 3, 4]", b: "f32[2, 3, 4]"):
            gb: "f32[2, 3, 4]" = torch.ops.aten.gelu_backward.default(a, b)
            gt: "f32[2, 3, 4]" = torch.ops.aten.gelu_backward.default(a, b, approximate = 'tanh')
            th: "f32[2, 3, 4]" = torch.ops.aten.threshold_backward.default(a, b, 0)
            sb: "f32[2, 3, 4]" = torch.ops.aten.sigmoid_backward.default(a, b)
            s1: "f32[1, 3, 1]" = torch.ops.aten.sum.dim_IntList(a, [-1, 0], True)
            s2: "f32[]" = torch.ops.aten.sum.default(a)
            m1: "f32[2, 4]" = torch.ops.aten.mean.dim(a, [1])
            am: "f32[2, 3]" = torch.ops.aten.amax.default(a, [-1])
            mx = torch.ops.aten.max.dim(a, 1)
            v: "f32[2, 4]" = mx[0]
            i: "i64[2, 4]" = mx[1]
            return (gb, gt, th, sb, s1, s2, m1, am, v, i)
        ''')
    assert low["gb"].text == '(binary "gelu_backward" $a $b)'
    assert low["gt"].text == '(binary "gelu_tanh_backward" $a $b)'
    assert low["th"].text == '(binary "threshold_backward:0.0" $a $b)'
    assert low["sb"].text == '(binary "sigmoid_backward" $a $b)'
    assert low["s1"].text == '(reduce "sum" $a (ICons 0 (ICons 2 (INil))) 1)'
    assert low["s2"].text == '(reduce "sum" $a (ICons 0 (ICons 1 (ICons 2 (INil)))) 0)'
    m1 = low["m1"]     # mean = sum (a tensor of its own, m1:sum) / count
    assert isinstance(m1, L.Decomposed) and m1.name == "sum"
    assert m1.inner.text == '(reduce "sum" $a (ICons 1 (INil)) 0)'
    assert m1.outer.format(inner="$m") == '(scalar "div" $m "3.0")'
    assert low["am"].text == '(reduce "amax" $a (ICons 2 (INil)) 0)'
    values, indices = low["mx"].items
    assert values.text == '(reduce "amax" $a (ICons 1 (INil)) 0)'
    assert indices.text.startswith('(opaque "aten.max.dim|')


def test_lowered_reductions_mean_what_torch_computes(tmp_path):
    """Evaluate each lowered reduction term with torch and compare with the op itself."""
    low = _lowered(tmp_path, '''
        def forward(self, a: "f32[2, 3, 4]"):
            s1: "f32[1, 3, 1]" = torch.ops.aten.sum.dim_IntList(a, [-1, 0], True)
            s2: "f32[]" = torch.ops.aten.sum.default(a)
            m1: "f32[2, 4]" = torch.ops.aten.mean.dim(a, [1])
            am: "f32[2, 3]" = torch.ops.aten.amax.default(a, [-1])
            return (s1, s2, m1, am)
        ''')
    a = torch.randn(2, 3, 4, dtype=torch.float64)
    want = {"s1": torch.ops.aten.sum.dim_IntList(a, [-1, 0], True), "s2": a.sum(),
            "m1": a.mean(1), "am": torch.ops.aten.amax(a, [-1])}
    for name, expected in want.items():
        res = low[name]
        text = res.outer.format(inner=res.inner.text) if isinstance(res, L.Decomposed) else res.text
        got = terms.evaluate(terms.parse_sexpr(text.replace("$a", "a")), {"a": a})
        assert terms.allclose(got, expected), name


def test_lowering_layer_norms(tmp_path):
    low = _lowered(tmp_path, '''
        def forward(self, x: "f32[5, 2, 4]", w: "f32[4]", b: "f32[4]"):
            ln = torch.ops.aten.native_layer_norm.default(x, [4], w, b, 1e-05)
            y: "f32[5, 2, 4]" = ln[0]
            mean: "f32[5, 2, 1]" = ln[1]
            rstd: "f32[5, 2, 1]" = ln[2]
            ap = torch.ops.apex.fused_layer_norm_affine_fwd.default(x, w, b, [4], 1e-05)
            y2: "f32[5, 2, 4]" = ap[0]
            mean2: "f32[10]" = ap[1]
            inv2: "f32[10]" = ap[2]
            return (y, mean, rstd, y2, mean2, inv2)
        ''')
    for key in ("ln", "ap"):
        y, mean, rstd = low[key].items
        assert y.text == '(layernorm $x $w $b 1 "1e-05")'
    mean, rstd = low["ln"].items[1:]      # native_layer_norm's statistics: reductions over the last dim
    assert mean.text == '(reduce "mean" $x (ICons 2 (INil)) 1)'
    assert rstd.text.startswith('(unary "rsqrt" (scalar "add" (reduce "mean" (unary "square"')
    mean, rstd = low["ap"].items[1:]      # apex's (flattened to [rows]): opaque
    assert mean.text.startswith("(opaque ") and rstd.text.startswith("(opaque ")


def _ln_backward_samples():
    """native_layer_norm_backward on the saved statistics of a real forward: shapes with one or
    more normalised dims (and none outer), every output_mask, with and without weight and bias."""
    from types import SimpleNamespace
    torch.manual_seed(3)
    for shape, k in [((4, 3, 6), 1), ((2, 3, 4), 2), ((6,), 1), ((0, 4), 1), ((2, 3, 4), 3)]:
        for has_w, has_b in [(True, True), (False, False), (True, False), (False, True)]:
            for mask in ([True, True, True], [True, False, False], [False, True, True], [False, False, True]):
                x = torch.randn(*shape, dtype=torch.float64)
                ns = list(shape[len(shape) - k:])
                w = torch.randn(*ns, dtype=torch.float64) if has_w else None
                b = torch.randn(*ns, dtype=torch.float64) if has_b else None
                _, mean, rstd = torch.ops.aten.native_layer_norm(x, ns, w, b, 1e-5)
                mask = [mask[0], mask[1] and has_w, mask[2] and has_b]
                yield SimpleNamespace(input=torch.randn(*shape, dtype=torch.float64),
                                      args=(x, ns, mean, rstd, w, b, mask), kwargs={})


def test_layer_norm_backward_conforms_to_torch():
    """No OpInfo traces native_layer_norm_backward: its lowering (and native_layer_norm's mean and
    rstd, on the same shapes) checked like the OpInfo conformance, on samples of our own."""
    from types import SimpleNamespace
    from tooling import conformance as C
    n = 0
    for s in _ln_backward_samples():
        v = C.check_sample(torch.ops.aten.native_layer_norm_backward.default, s)
        assert v.kind == "agree", (C.describe_sample(s), [str(d) for d in v.nodes], v.why)
        x, ns, _, _, w, b, _ = s.args
        v = C.check_sample(torch.ops.aten.native_layer_norm.default,
                           SimpleNamespace(input=x, args=(ns, w, b, 1e-5), kwargs={}))
        assert v.kind == "agree", (C.describe_sample(s), [str(d) for d in v.nodes], v.why)
        n += 1
    assert n == 80


def test_layer_norm_backward_refuses_a_bad_output_mask(tmp_path):
    low = _lowered(tmp_path, '''
        def forward(self, g: "f32[5, 4]", x: "f32[5, 4]", m: "f32[5, 1]", r: "f32[5, 1]", w: "f32[4]", b: "f32[4]"):
            bw = torch.ops.aten.native_layer_norm_backward.default(g, x, [4], m, r, w, b, [True, 1, True])
            gi: "f32[5, 4]" = bw[0]
            return (gi,)
        ''')
    assert isinstance(low["bw"], L.Refused) and low["bw"].arg == "output_mask"


def test_unsupported_apex_variant_is_refused(tmp_path):
    """An apex op the checker does not know is 'no semantics', never guessed."""
    low = _lowered(tmp_path, '''
        def forward(self, x: "f32[5, 4]", w: "f32[4]"):
            ap = torch.ops.apex.fused_rms_norm_affine_fwd.default(x, w, [4], 1e-05)
            y: "f32[5, 4]" = ap[0]
            return (y,)
        ''')
    assert isinstance(low["ap"], L.NoSemantics)


# ----------------------------------------------------------------------------- IList queries

def test_ilist_queries_match_python():
    eng = Engine(LIB)
    rng = random.Random(5)
    cases = []
    for k in range(12):
        dims = sorted(rng.sample(range(6), rng.randint(0, 5)))
        lst = "(INil)"
        for d in reversed(dims):
            lst = f"(ICons {d} {lst})"
        eng.add(f"(let $l{k} {lst})")
        for i in range(6):
            eng.add(f"(iask $l{k} {i})")
        cases.append((k, dims))
    eng.settle()
    for k, dims in cases:
        out = eng.run1(f"(extract (ilen $l{k}))")[0]
        assert out.termdag.to_string(out.term) == str(len(dims))
        for i in range(6):
            has = eng.run1(f"(extract (ihas $l{k} {i}))")[0]
            below = eng.run1(f"(extract (ibelow $l{k} {i}))")[0]
            assert has.termdag.to_string(has.term) == str(int(i in dims))
            assert below.termdag.to_string(below.term) == str(sum(1 for a in dims if a < i))


# ----------------------------------------------------------------------------- slice cover

def test_trigger_lemma_is_a_rule():
    lem = next(l for l in LIB.lemmas if l.name == "slice-cover")
    text = lem.egglog("lemmas")
    assert text.startswith("(rule (") and "(union (slice x d (DLit a) (DLit c))" in text


@pytest.mark.parametrize("bounds", [[0, 3, 7, 8, 12], [0, 5, 10], [0, 2, 4, 6, 8, 10, 12, 14, 16]])
def test_per_rank_slices_tile_a_tensor_into_a_flat_concat(bounds):
    """x sliced per rank (uneven pieces): x = concat(pieces) with one flat concat."""
    eng = Engine(LIB)
    n = bounds[-1]
    eng.add('(let $x (Gs "x"))')
    eng.add("(set (ndim $x) 2)")
    eng.add("(set (dim $x 0) (DLit 3))")
    eng.add(f"(set (dim $x 1) (DLit {n}))")
    pieces = []
    for r, (a, b) in enumerate(zip(bounds, bounds[1:])):
        eng.add(f'(union (Gd "p{r}") (slice $x 1 (DLit {a}) (DLit {b})))')
        pieces.append(f'(Gd "p{r}")')
    lst = "(Nil)"
    for p in reversed(pieces):
        lst = f"(Cons {p} {lst})"
    eng.add(f"(let $want (concat {lst} 1))")
    out = eng.prove_clean("$x", Limits(iterations=20))
    assert out.status == "clean"
    for _ in range(10):
        if eng.equal("$x", "$want"):
            break
        eng.run1(STEP)
    assert eng.equal("$x", "$want")


def test_slices_with_a_gap_do_not_cover():
    eng = Engine(LIB)
    eng.add('(let $x (Gs "x"))')
    eng.add("(set (ndim $x) 1)")
    eng.add("(set (dim $x 0) (DLit 10))")
    eng.add('(union (Gd "p0") (slice $x 0 (DLit 0) (DLit 4)))')
    eng.add('(union (Gd "p1") (slice $x 0 (DLit 5) (DLit 10)))')
    out = eng.prove_clean("$x", Limits(iterations=10))
    assert out.status != "clean"


# ----------------------------------------------------------------------------- end to end (FX text)

def _ln_graphs(tmp_path, shard_dim):
    """out = layer norm over the last dim; the ranks hold x sharded along ``shard_dim`` and
    layer-norm their shard (apex op as in Megatron), then gather the pieces."""
    seq = _fx(tmp_path, "seq", '''
        def forward(self, primals_1: "f32[6, 2, 4]", primals_2: "f32[4]", primals_3: "f32[4]"):
            ln = torch.ops.apex.fused_layer_norm_affine_fwd.default(primals_1, primals_2, primals_3, [4], 1e-05)
            getitem: "f32[6, 2, 4]" = ln[0]
            getitem_1: "f32[12]" = ln[1]
            getitem_2: "f32[12]" = ln[2]
            return [getitem]
        ''')
    if shard_dim == 0:
        ranks = [_fx(tmp_path, f"r{r}", '''
            def forward(self, primals_1: "f32[3, 2, 4]", primals_2: "f32[4]", primals_3: "f32[4]"):
                ln = torch.ops.apex.fused_layer_norm_affine_fwd.default(primals_1, primals_2, primals_3, [4], 1e-05)
                getitem: "f32[3, 2, 4]" = ln[0]
                getitem_1: "f32[6]" = ln[1]
                getitem_2: "f32[6]" = ln[2]
                ag: "f32[6, 2, 4]" = torch.ops._c10d_functional.all_gather_into_tensor.default(getitem, 2, '12')
                wait_tensor: "f32[6, 2, 4]" = torch.ops._c10d_functional.wait_tensor.default(ag)
                return [wait_tensor]
            ''') for r in range(2)]
    else:   # the bug: normalising a shard of the normalised dim, then gathering it
        ranks = [_fx(tmp_path, f"r{r}", '''
            def forward(self, primals_1: "f32[6, 2, 2]", primals_2: "f32[2]", primals_3: "f32[2]"):
                ln = torch.ops.apex.fused_layer_norm_affine_fwd.default(primals_1, primals_2, primals_3, [2], 1e-05)
                getitem: "f32[6, 2, 2]" = ln[0]
                getitem_1: "f32[12]" = ln[1]
                getitem_2: "f32[12]" = ln[2]
                t: "f32[2, 2, 6]" = torch.ops.aten.transpose.int(getitem, 0, 2)
                ag: "f32[4, 2, 6]" = torch.ops._c10d_functional.all_gather_into_tensor.default(t, 2, '12')
                wait_tensor: "f32[4, 2, 6]" = torch.ops._c10d_functional.wait_tensor.default(ag)
                t2: "f32[6, 2, 4]" = torch.ops.aten.transpose.int(wait_tensor, 0, 2)
                return [t2]
            ''') for r in range(2)]
    G.save(import_fx([seq]), tmp_path / "s.pt")
    G.save(import_fx(ranks), tmp_path / "d.pt")
    spec = S.parse_spec({"inputs": {"primals_1": f"shard({shard_dim})", "primals_2": "shard(0)" if shard_dim else "replicate",
                                    "primals_3": "shard(0)" if shard_dim else "replicate"}})
    return G.load(tmp_path / "s.pt"), G.load(tmp_path / "d.pt"), spec


def test_apex_layer_norm_on_a_sequence_shard_refines(tmp_path):
    seq, dist, spec = _ln_graphs(tmp_path, 0)
    res = Checker(seq, dist, spec).run()
    assert res.status == "refines", res.failure
    assert list(res.relations.values()) == ["r0.wait_tensor"]   # the gathered output, by its output name


def test_layer_norm_of_a_hidden_shard_fails(tmp_path):
    seq, dist, spec = _ln_graphs(tmp_path, 2)
    res = Checker(seq, dist, spec).run()
    assert res.status == "fails"
    assert res.failure.target == "getitem" and "layernorm(concat(" in res.failure.best


def test_reductions_that_change_dtype_cast_first(tmp_path):
    """A sum of bools (a mask's count) is torch's promotion, the int64 sum of the int64 cast; a
    sum with dtype= casts its input to that dtype, then sums (torch's semantics for dtype=)."""
    low = _lowered(tmp_path, '''
        def forward(self, m: "b8[2, 3]", a: "f32[2, 3]"):
            s: "i64[]" = torch.ops.aten.sum.default(m)
            d: "f64[2]" = torch.ops.aten.sum.dim_IntList(a, [1], dtype = torch.float64)
            return (s, d)
        ''')
    assert low["s"].text == '(reduce "sum" (unary "to_int64" $m) (ICons 0 (ICons 1 (INil))) 0)', low["s"].text
    assert low["d"].text == '(reduce "sum" (unary "to_float64" $a) (ICons 1 (INil)) 0)', low["d"].text
    a = torch.randn(2, 3)
    assert torch.equal(torch.sum(a, [1], dtype=torch.float64), torch.sum(a.to(torch.float64), [1]))


def test_embedding_backward_conforms_to_torch():
    """embedding_dense_backward (no OpInfo traces it) against torch on samples of our own: ids of
    0-3 dims, repeated ids, rows never looked up, an empty batch."""
    from types import SimpleNamespace
    from tooling import conformance as C
    torch.manual_seed(5)
    n = 0
    for ids_shape, rows in [((5,), 4), ((2, 3), 7), ((2, 2, 2), 3), ((), 3), ((0, 2), 4), ((4,), 1)]:
        # padding_idx: none, the first row, the last, one inside (a row that is looked up)
        for pad in sorted({-1, 0, rows - 1, rows // 2}):
            ids = torch.randint(0, rows, ids_shape)
            for dtype in (torch.float64, torch.float32):
                g = torch.randn(*ids_shape, 3, dtype=dtype)
                v = C.check_sample(torch.ops.aten.embedding_dense_backward.default,
                                   SimpleNamespace(input=g, args=(ids, rows, pad, False), kwargs={}))
                assert v.kind == "agree", (ids_shape, rows, pad, dtype, [str(d) for d in v.nodes], v.why)
                n += 1
    assert n == 44


def test_embedding_backward_pads_and_refuses_frequency_scaling(tmp_path):
    low = _lowered(tmp_path, '''
        def forward(self, g: "f32[2, 3, 5]", ids: "i64[2, 3]"):
            a: "f32[7, 5]" = torch.ops.aten.embedding_dense_backward.default(g, ids, 7, -1, False)
            b: "f32[7, 5]" = torch.ops.aten.embedding_dense_backward.default(g, ids, 7, 0, False)
            c: "f32[7, 5]" = torch.ops.aten.embedding_dense_backward.default(g, ids, 7, -1, True)
            d: "f32[7, 5]" = torch.ops.aten.embedding_dense_backward.default(g, ids, 7, 7, False)
            e: "f32[7, 5]" = torch.ops.aten.embedding_dense_backward.default(g, ids, 7, -2, False)
            return (a, b, c, d, e)
        ''')
    assert low["a"].text == "(scatter $g $ids 7)"
    # padding_idx 0: the table with its row 0 zeroed
    assert low["b"].text.startswith("(concat (Cons (cst \"0.0\" (DCons (DLit 1) (DCons (DLit 5) (DNil))) \"float32\")") and \
        "(slice (scatter $g $ids 7) 0 (DLit 1) (DLit 7))" in low["b"].text
    assert isinstance(low["c"], L.Refused) and low["c"].arg == "scale_grad_by_freq"
    # a padding row that is not a row of the table (F.embedding makes a negative one a row)
    assert isinstance(low["d"], L.Refused) and low["d"].arg == "padding_idx"
    assert isinstance(low["e"], L.Refused) and low["e"].arg == "padding_idx"


def test_slice_backward_conforms_to_torch():
    """slice_backward (no OpInfo traces it) against torch on samples of our own: any dim, negative
    and out-of-range bounds, an empty slice, the whole dim (the gradient itself)."""
    from types import SimpleNamespace
    from tooling import conformance as C
    torch.manual_seed(7)
    n = 0
    for sizes, dim, start, end in [([8, 6], 0, 4, 8), ([8, 6], 0, 0, 4), ([8, 6], 1, 2, 5), ([2, 3, 4], -1, -3, 100),
                                   ([5], 0, 1, 3), ([4, 4], 0, 3, 2), ([4, 4], 1, 0, 4), ([3, 0, 2], 2, 1, 2)]:
        s, e = slice(start, end).indices(sizes[dim])[:2]
        shape = list(sizes)
        shape[dim] = max(e - s, 0)
        g = torch.randn(*shape, dtype=torch.float64)
        v = C.check_sample(torch.ops.aten.slice_backward.default,
                           SimpleNamespace(input=g, args=(sizes, dim, start, end, 1), kwargs={}))
        assert v.kind == "agree", (sizes, dim, start, end, [str(d) for d in v.nodes], v.why)
        n += 1
    assert n == 8


def test_strided_slice_backward_conforms_to_torch():
    """slice_backward with a step (x[a:b:k]'s gradient): the gradient's elements placed k apart,
    a shift that keeps the window inside the dim, none (the last one placed alone), one element,
    negative and out-of-range bounds, inner dims."""
    from types import SimpleNamespace
    from tooling import conformance as C
    torch.manual_seed(8)
    n = 0
    for sizes, dim, start, end, step in [([12], 0, 0, 12, 2), ([3, 12], 1, 0, 6, 2), ([3, 12], 1, 7, 12, 2),
                                         ([3, 12], 1, 1, 12, 2), ([5], 0, 0, 5, 3), ([7, 2], 0, 0, 7, 3),
                                         ([2, 9, 3], 1, 2, 9, 4), ([6, 4], 0, 5, 6, 2), ([6, 4], -1, -3, 100, 2),
                                         ([10], 0, 1, 10, 3), ([2, 5, 2], 1, 0, 5, 5)]:
        count = len(range(*slice(start, end, step).indices(sizes[dim])))
        shape = list(sizes)
        shape[dim] = count
        g = torch.randn(*shape, dtype=torch.float64)
        v = C.check_sample(torch.ops.aten.slice_backward.default,
                           SimpleNamespace(input=g, args=(sizes, dim, start, end, step), kwargs={}))
        assert v.kind == "agree", (sizes, dim, start, end, step, [str(d) for d in v.nodes], v.why)
        n += 1
    assert n == 11


def test_slice_backward_of_a_step(tmp_path):
    low = _lowered(tmp_path, '''
        def forward(self, g: "f32[2, 6]", h: "f32[4, 6]"):
            a: "f32[8, 6]" = torch.ops.aten.slice_backward.default(g, [8, 6], 0, 0, 4, 2)
            b: "f32[8, 6]" = torch.ops.aten.slice_backward.default(h, [8, 6], 0, 4, 9223372036854775807, 1)
            return (a, b)
        ''')
    # each gradient row with one zero row after it, the window [0, 4) padded to 8 rows
    assert low["a"].text == ("(zpad (view (zpad (view $g (DCons (DLit 2) (DCons (DLit 1) (DCons (DLit 6) (DNil))))) "
                             "1 0 1) (DCons (DLit 4) (DCons (DLit 6) (DNil)))) 0 0 4)")
    assert low["b"].text == "(zpad $h 0 4 0)"


def test_a_bool_constant_is_written_as_the_float_it_means(tmp_path):
    # x / False is x / 0.0: one text per value, so that a lemma excluding the zero constant ("0.0")
    # excludes it too (adversary pass 6: each rank's sum / False, then all-reduced, refined on the
    # proof as scalar-div-rsum's "0" passed its nonzero condition; the re-check found nan != inf)
    low = _lowered(tmp_path, '''
        def forward(self, a: "f32[2, 3]"):
            d0: "f32[2, 3]" = torch.ops.aten.div.Tensor(a, False)
            d1: "f32[2, 3]" = torch.ops.aten.div.Tensor(a, 0.0)
            m0: "f32[2, 3]" = torch.ops.aten.mul.Tensor(a, True)
            return (d0, d1, m0)
        ''')
    assert low["d0"].text == low["d1"].text == '(scalar "div" $a "0.0")'
    assert low["m0"].text == '(scalar "mul" $a "1.0")'
