"""A plugin reference that computes in place is decomposed functionally (frontend/decompose.py).

The reference is traced functionalized: ``out = x.clone(); out.mul_(...)`` gives the functional
ops, never an in-place node a later spliced node would read stale.  A reference that writes one of
its arguments (the program's own tensors) is refused: a reference returns the new values of what
its op writes and leaves its arguments as they are.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from entangle_py.frontend.decompose import PluginError, decompose
from entangle_py.frontend.functionalize import writes
from entangle_py.ir import graph as G
from entangle_py.oracle import interp
from entangle_py.plugins import REGISTRY
from entangle_py.plugins._registry import PluginOp

OP = "_C.silu_and_mul.default"


def _silu_and_mul_in_place(result, input):
    d = input.shape[-1] // 2
    out = input[..., :d].clone()
    out.sigmoid_()
    out.mul_(input[..., :d])          # silu(a) = a * sigmoid(a)
    gate = out.view(-1)               # a view of out, taken before the last write
    out.mul_(input[..., d:])
    return (gate.view(out.shape) * 1,)


def _writes_its_input(result, input):
    d = input.shape[-1] // 2
    input[..., :d].mul_(2)
    return (input[..., :d] * input[..., d:],)


def _bundle(shape=(3, 8)):
    """x -> empty -> auto_functionalized(_C.silu_and_mul, result=e, input=x) -> getitem 1, as capture records it."""
    meta, half = G.TensorMeta(shape, "float32"), G.TensorMeta(shape[:-1] + (shape[-1] // 2,), "float32")
    nodes = [G.Node("x", "placeholder", val=meta),
             G.Node("e", "aten.empty.memory_format", (list(half.shape),), {}, half),
             G.Node("af", "higher_order.auto_functionalized", (OP,), {"result": G.Ref("e"), "input": G.Ref("x")},
                    (None, half)),
             G.Node("y", "getitem", (G.Ref("af"), 1), {}, half)]
    return G.Bundle([G.RankGraph(0, nodes, [G.Port("input:x", "x")], [G.Port("out", "y")])])


def _with_reference(monkeypatch, fn):
    old = REGISTRY[OP]
    monkeypatch.setitem(REGISTRY, OP, PluginOp(old.target, old.schema, fn, old.pure))


def test_an_in_place_reference_is_decomposed_functionally(monkeypatch):
    _with_reference(monkeypatch, _silu_and_mul_in_place)
    b = decompose(_bundle())
    assert not any(writes(n) for n in b.ranks[0].nodes)
    x = torch.randn(3, 8, dtype=torch.float64)
    out = interp.output_values(b, interp.run_bundle(b, [{"input:x": x}], float_dtype=torch.float64))[0]["out"]
    assert torch.allclose(out, F.silu(x[..., :4]) * x[..., 4:])


def test_a_reference_writing_its_argument_is_refused(monkeypatch):
    _with_reference(monkeypatch, _writes_its_input)
    with pytest.raises(PluginError, match=r"reference writes its argument input in place"):
        decompose(_bundle())
