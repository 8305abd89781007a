"""Custom-op plugins (entangle_py/plugins): each reference agrees with an independent
implementation of the op, on several shapes and dtypes; the decomposition pass splices the
reference's ATen graph in place of the call and refuses what it cannot decompose faithfully."""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from entangle_py.frontend.decompose import PluginError, decompose
from entangle_py.ir import graph as G
from entangle_py.ir import bundle_meta
from entangle_py.ir import ops
from entangle_py.oracle import interp
from entangle_py.oracle import graph_values
from entangle_py.plugins import PURE, REGISTRY
from entangle_py.semantics import lower

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "corpus" / "programs"))

SHAPES = [(1, 4), (3, 8), (2, 5, 6), (0, 4)]
DTYPES = [torch.float64, torch.float32, torch.bfloat16]


def _close(a, b, dtype):
    tol = {torch.float64: 1e-10, torch.float32: 1e-5, torch.bfloat16: 2e-2}[dtype]
    return torch.allclose(a.double(), b.double(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_rms_norms_match_torch(shape, dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=g).to(dtype)
    r = torch.randn(shape, generator=g).to(dtype)
    w = torch.randn(shape[-1], generator=g).to(dtype)
    want = F.rms_norm(x.float(), (shape[-1],), eps=1e-5).to(dtype) * w
    (got,) = REGISTRY["_C.rms_norm.default"].reference(torch.empty_like(x), x, w, 1e-5)
    assert got.dtype == dtype and _close(got, want, dtype)
    out, res = REGISTRY["_C.fused_add_rms_norm.default"].reference(x, r, w, 1e-5)
    assert _close(res, x + r, dtype)
    assert _close(out, F.rms_norm((x + r).float(), (shape[-1],), eps=1e-5).to(dtype) * w, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 2), (3, 8), (2, 5, 6), (0, 4)])
def test_act_and_mul_match_torch(shape, dtype):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1)).to(dtype)
    gate, up = x.chunk(2, dim=-1)
    (got,) = REGISTRY["_C.silu_and_mul.default"].reference(None, x)
    assert _close(got, F.silu(gate) * up, dtype)
    (got,) = REGISTRY["_C.gelu_and_mul.default"].reference(None, x)
    assert _close(got, F.gelu(gate) * up, dtype)


def _rope_loop(positions, x, head_size, cache, is_neox):
    """vLLM's rotary embedding written element by element (the kernel's loop)."""
    rot = cache.shape[-1]
    out = x.clone().reshape(x.shape[0], -1, head_size)
    for t in range(x.shape[0]):
        cos, sin = cache[positions[t], :rot // 2], cache[positions[t], rot // 2:]
        for h in range(out.shape[1]):
            v = out[t, h].clone()
            for i in range(rot // 2):
                a, b = (i, i + rot // 2) if is_neox else (2 * i, 2 * i + 1)
                out[t, h, a] = v[a] * cos[i] - v[b] * sin[i]
                out[t, h, b] = v[b] * cos[i] + v[a] * sin[i]
    return out.reshape(x.shape)


@pytest.mark.parametrize("is_neox", [True, False])
@pytest.mark.parametrize("heads, head_size, rot", [(2, 8, 8), (3, 8, 4), (1, 4, 2)])
def test_rotary_embedding_matches_the_kernel_loop(is_neox, heads, head_size, rot):
    g = torch.Generator().manual_seed(2)
    tokens, max_pos = 3, 7
    positions = torch.tensor([5, 0, 3])
    q = torch.randn(tokens, heads * head_size, generator=g, dtype=torch.float64)
    k = torch.randn(tokens, heads * head_size, generator=g, dtype=torch.float64)
    cache = torch.randn(max_pos, rot, generator=g, dtype=torch.float64)
    q2, k2 = REGISTRY["_C.rotary_embedding.default"].reference(positions, q, k, head_size, cache, is_neox)
    assert torch.allclose(q2, _rope_loop(positions, q, head_size, cache, is_neox))
    assert torch.allclose(k2, _rope_loop(positions, k, head_size, cache, is_neox))
    q3, none = REGISTRY["_C.rotary_embedding.default"].reference(positions, q, None, head_size, cache, is_neox)
    assert none is None and torch.allclose(q3, q2)


def test_sinkhorn_balances_rows_and_columns():
    """Sinkhorn scales exp(cost) so every column sums to 1/columns and every row to 1/rows (up
    to the tolerance; a tolerance near float64 precision never stops Megatron's loop)."""
    cost = torch.randn(6, 4, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    out = REGISTRY["megatron.sinkhorn.default"].reference(cost, tol=1e-6)
    assert torch.allclose(out.sum(0), torch.full((4,), 1 / 4, dtype=torch.float64), atol=1e-5)
    assert torch.allclose(out.sum(1), torch.full((6,), 1 / 6, dtype=torch.float64), atol=1e-5)
    ratio = out / cost.exp()        # a rank-one scaling of exp(cost): diag(d0) exp(cost) diag(d1)
    assert torch.allclose(ratio, ratio[:, :1] @ ratio[:1, :] / ratio[0, 0])


def test_every_plugin_namespace_has_its_file_and_ops():
    names = {t.split(".")[0] for t in REGISTRY}
    assert names == set(ops.PLUGIN_NAMESPACES)
    for ns, module in ops.PLUGIN_NAMESPACES.items():
        assert (ROOT / "entangle_py" / "plugins" / f"{module}.py").exists()
        assert all(REGISTRY[t].reference.__module__ == f"entangle_py.plugins.{module}" for t in REGISTRY if t.startswith(ns + "."))


def test_a_pure_plugin_op_is_opaque_and_runs_its_reference():
    assert "megatron.sinkhorn.default" in PURE and lower.supported("megatron.sinkhorn.default")
    assert graph_values.resolve_op("megatron.sinkhorn.default") is REGISTRY["megatron.sinkhorn.default"].reference


# ----------------------------------------------------------------------------- the decomposition pass

def _functionalized_graph(shape=(4, 6), kwargs=None, val=None):
    """x -> empty_like -> auto_functionalized_v2(_C.rms_norm, result=base 0) -> getitem 1."""
    meta = G.TensorMeta(shape, "float32")
    kw = {"input": G.Ref("x"), "weight": G.Ref("w"), "epsilon": 1e-6, "_result_base_index": 0,
          "_all_bases": [G.Ref("e")]}
    kw.update(kwargs or {})
    nodes = [G.Node("x", "placeholder", val=meta), G.Node("w", "placeholder", val=G.TensorMeta(shape[-1:], "float32")),
             G.Node("e", "aten.empty_like.default", (G.Ref("x"),), {}, meta),
             G.Node("af", "higher_order.auto_functionalized_v2", ("_C.rms_norm.default",), kw, (None, val or meta),
                    G.Source("model.py", 7, "forward", "torch.ops._C.rms_norm(y, x, w, 1e-6)")),
             G.Node("y", "getitem", (G.Ref("af"), 1), {}, val or meta)]
    g = G.RankGraph(0, nodes, [G.Port("input:x", "x"), G.Port("param:w", "w")], [G.Port("out", "y")])
    return G.Bundle([g])


def test_decomposed_rms_norm_computes_the_reference():
    b = decompose(_functionalized_graph())
    g = b.ranks[0]
    assert not any(n.target in ops.AUTO_FUNCTIONALIZED for n in g.nodes)
    assert g.node("y").target == "aten.alias.default"           # the name the program gave stays
    spliced = [n for n in g.nodes if n.name.startswith("af__")]
    assert spliced and all(n.source.line == 7 for n in spliced)   # failures point at the custom op
    x = torch.randn(4, 6, dtype=torch.float64)
    w = torch.randn(6, dtype=torch.float64)
    envs = interp.run_bundle(b, [{"input:x": x, "param:w": w}], float_dtype=torch.float64)
    out = interp.output_values(b, envs)[0]["out"]
    want = F.rms_norm(x, (6,), eps=1e-6) * w
    assert torch.allclose(out, want)


def test_a_written_strided_view_is_refused():
    """auto_functionalized_v2 records a view that is not a slice by its sizes and strides."""
    with pytest.raises(PluginError, match="not a slice"):
        decompose(_functionalized_graph(kwargs={"_result_size": [4, 6], "_result_stride": [6, 1],
                                                "_result_storage_offset": 0}))


@pytest.mark.parametrize("dim,start,end", [(0, 1, 5), (0, 0, 4), (0, 2, 6), (0, -4, None)])
def test_a_written_slice_of_a_buffer_is_the_buffer_with_the_slice_replaced(dim, start, end):
    """rms_norm(out[start:end], x, w): the reference gets the slice, and the buffer's new value is
    the buffer with those rows replaced; the other rows keep what the buffer held."""
    meta, big = G.TensorMeta((4, 6), "float32"), G.TensorMeta((6, 6), "float32")
    kw = {"input": G.Ref("x"), "weight": G.Ref("w"), "epsilon": 1e-6, "_result_base_index": 0,
          "_result_slice_dim": dim, "_result_slice_start": start, "_result_slice_end": end, "_all_bases": [G.Ref("z")]}
    nodes = [G.Node("x", "placeholder", val=meta), G.Node("w", "placeholder", val=G.TensorMeta((6,), "float32")),
             G.Node("z", "placeholder", val=big),
             G.Node("af", "higher_order.auto_functionalized_v2", ("_C.rms_norm.default",), kw, (None, big)),
             G.Node("y", "getitem", (G.Ref("af"), 1), {}, big)]
    g = G.RankGraph(0, nodes, [G.Port("input:x", "x"), G.Port("param:w", "w"), G.Port("input:z", "z")],
                    [G.Port("out", "y")])
    b = decompose(G.Bundle([g]))
    x, w, z = (torch.randn(*s, dtype=torch.float64) for s in ((4, 6), (6,), (6, 6)))
    out = interp.output_values(b, interp.run_bundle(b, [{"input:x": x, "param:w": w, "input:z": z}],
                                                     float_dtype=torch.float64))[0]["out"]
    want = z.clone()
    want[slice(start, end)] = F.rms_norm(x, (6,), eps=1e-6) * w
    assert torch.allclose(out, want)


def test_two_written_arguments_in_one_buffer_are_refused():
    meta = G.TensorMeta((4, 6), "float32")
    kw = {"weight": G.Ref("w"), "epsilon": 1e-6, "_input_base_index": 0, "_residual_base_index": 0, "_all_bases": [G.Ref("x")]}
    nodes = [G.Node("x", "placeholder", val=meta), G.Node("w", "placeholder", val=G.TensorMeta((6,), "float32")),
             G.Node("af", "higher_order.auto_functionalized_v2", ("_C.fused_add_rms_norm.default",), kw, (None, meta)),
             G.Node("y", "getitem", (G.Ref("af"), 1), {}, meta)]
    g = G.RankGraph(0, nodes, [G.Port("input:x", "x"), G.Port("param:w", "w")], [G.Port("out", "y")])
    with pytest.raises(PluginError, match="two arguments in one buffer"):
        decompose(G.Bundle([g]))


def test_an_op_of_the_same_name_and_another_schema_is_refused():
    b = _functionalized_graph()
    b.meta[bundle_meta.CUSTOM_OP_SCHEMAS] = json.dumps(
        {"_C.rms_norm.default": "_C::rms_norm(Tensor(a!) result, Tensor input, Tensor weight, float epsilon, "
                                "bool scale_only) -> ()"})
    with pytest.raises(PluginError, match="a different op of the same name"):
        decompose(b)
    b.meta[bundle_meta.CUSTOM_OP_SCHEMAS] = json.dumps({"_C.rms_norm.default": "_C::" + REGISTRY["_C.rms_norm.default"].schema})
    assert decompose(b) is not b


def test_a_recorded_shape_the_reference_does_not_give_is_refused():
    with pytest.raises(PluginError, match="the capture recorded"):
        decompose(_functionalized_graph(val=G.TensorMeta((4, 3), "float32")))


def test_symbolic_sizes_are_refused():
    import sympy
    s = sympy.Symbol("s0", integer=True, positive=True)
    b = _functionalized_graph()
    g = b.ranks[0]
    g.node("x").val = G.TensorMeta((s, 6), "float32")
    with pytest.raises(PluginError, match="symbolic"):
        decompose(b)


def test_an_unknown_argument_is_refused():
    with pytest.raises(PluginError, match="does not have"):
        decompose(_functionalized_graph(kwargs={"scale": 2.0}))


def test_a_bundle_without_plugin_ops_is_returned_as_is():
    b = _functionalized_graph()
    g = b.ranks[0]
    plain = dataclasses.replace(b, ranks=[dataclasses.replace(g, nodes=g.nodes[:3])])
    assert decompose(plain) is plain


def test_a_pure_op_of_the_same_name_and_another_default_is_refused():
    """A default is part of the op: sinkhorn(x) runs the program's own tol, the oracle the plugin's
    (adversary pass 6: a program registering megatron::sinkhorn with tol=0.01, its sequential call
    leaving tol out and its ranks passing 1e-4, got the witness 'numerically equal, probably not a
    bug').  A pure op's schema is checked as a decomposed one's."""
    meta = G.TensorMeta((4, 3), "float32")
    nodes = [G.Node("x", "placeholder", val=meta), G.Node("y", "megatron.sinkhorn.default", (G.Ref("x"),), {}, meta)]
    b = G.Bundle([G.RankGraph(0, nodes, [G.Port("input:x", "x")], [G.Port("out", "y")])])
    b.meta[bundle_meta.CUSTOM_OP_SCHEMAS] = json.dumps(
        {"megatron.sinkhorn.default": "megatron::sinkhorn(Tensor cost, float tol=0.01) -> Tensor"})
    with pytest.raises(PluginError, match="a different op of the same name"):
        decompose(b)
    b.meta[bundle_meta.CUSTOM_OP_SCHEMAS] = json.dumps(
        {"megatron.sinkhorn.default": "megatron::" + REGISTRY["megatron.sinkhorn.default"].schema})
    assert decompose(b) is b
