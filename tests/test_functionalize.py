"""In-place ops made functional (entangle_py/frontend/functionalize.py) against eager torch.

Each program below writes in place -- into an input, an intermediate, through views of every kind
the pass inverts (slice, select, view, t/transpose/permute, unsqueeze, diagonal, a part of split /
split_with_sizes / unbind, alias/detach, chains of them), with views taken before the write and
read after it, chained in-place results, several writes, several written inputs, integer dtypes,
empty and size-1 dims.  It is traced as it is (``make_fx``, real tensors, no functionalization),
made functional by the pass, run by the interpreter, and compared with the eager call: every
output, and every input's value after the call (``mutated:in<i>``; an input the eager call
changed that the graph does not return is an error).  ``conformance.check_sample`` does the
tracing, the comparison and the lowering of each node.
"""
from __future__ import annotations

import types

import pytest
import torch

from entangle_py.frontend.functionalize import FunctionalizeError, functional_variant, functionalize
from entangle_py.ir import graph as G
from tooling import conformance as C


def _sample(*tensors):
    return types.SimpleNamespace(input=tensors[0], args=tensors[1:], kwargs={})


def _check(fn, *tensors):
    op = types.SimpleNamespace(inplace_variant=fn)
    return C.check_sample(op, _sample(*tensors), inplace=True)


def r(*shape, dtype=torch.float64):
    g = torch.Generator().manual_seed(sum(shape) + len(shape))
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=dtype)
    return torch.randint(-5, 5, shape, generator=g, dtype=dtype)


def _slice_write(x):
    x[1:3].mul_(2)
    return x


def _select_on_copy(x):
    b = x.clone()
    b.select(1, -1).add_(1)
    return b


def _view_write(x):
    b = x.clone()
    b.view(2, 6)[0].sub_(3)
    return b


def _t_write(x):
    x.t().add_(1)
    return x


def _permute_write(x):
    x.permute(-1, 0, 1).mul_(-1)
    return x


def _transpose_write(x):
    x.transpose(0, 2)[1].add_(2)
    return x


def _split_write(x):
    a, b, c = x.split(2, dim=1)        # 5 columns: 2, 2, 1
    c.add_(10)
    b.mul_(0.5)
    return x


def _split_sizes_write(x):
    a, b = x.split_with_sizes([1, 3], dim=0)
    b[0].add_(1)
    return x, a


def _unbind_write(x):
    x.unbind(1)[2].add_(7)
    return x


def _diagonal_write(x):
    x.diagonal(1, 0, 1).add_(1)
    return x


def _unsqueeze_write(x):
    x.unsqueeze(0)[0, 1].add_(4)
    return x


def _view_before_read_after(x):
    v = x[0]
    before = v * 1
    x.add_(1)
    return v * 1, before


def _view_of_view(x):
    v = x[1:]
    w = v[:, 0]
    w.add_(5)
    return x, v


def _chained(x):
    y = x.add_(1).mul_(2)
    return y * 1


def _copy_broadcast(x, row):
    b = torch.zeros(3, 4, dtype=x.dtype)
    b.copy_(row)
    return b + x


def _copy_into_view_then_base(x, y):
    b = torch.zeros_like(x)
    b[:, 1:].copy_(y)
    return b


def _index_put_slice(x, vals):
    x[1:3].index_put_((torch.tensor([1, 0]),), vals)
    return x


def _two_inputs(x, y):
    x.add_(y)
    y.mul_(2)
    return x + y


def _detach_shares(x):
    x.detach().add_(1)
    return x * 1


def _empty_and_one(x):
    x[0:0].add_(1)
    x[:, 0:1].mul_(3)
    return x


def _int_write(x):
    x[1].add_(3)
    return x * 2


def _foreach(x, y):
    torch._foreach_add_([x, y], 1.0)
    return x * 1, y * 1


def _reads_before_and_after(x):
    a = x * 1
    x.mul_(3)
    b = x * 1
    x.add_(1)
    return a, b, x


def _in_place_view_of_intermediate(x):
    b = x.clone()
    v = b[0]          # taken before b is re-shaped in place
    b.t_()
    b[1].add_(1)      # b's (old) column 1
    c = b.unsqueeze_(0)
    c[0, 2].mul_(-1)
    return b * 1, v * 1, c * 1


PROGRAMS = [
    ("slice", _slice_write, (r(4, 3),)),
    ("select", _select_on_copy, (r(3, 4),)),
    ("view", _view_write, (r(3, 4),)),
    ("t", _t_write, (r(3, 4),)),
    ("permute", _permute_write, (r(2, 3, 4),)),
    ("transpose", _transpose_write, (r(2, 3, 4),)),
    ("split", _split_write, (r(3, 5),)),
    ("split_with_sizes", _split_sizes_write, (r(4, 2),)),
    ("unbind", _unbind_write, (r(2, 3),)),
    ("diagonal", _diagonal_write, (r(3, 4),)),
    ("unsqueeze", _unsqueeze_write, (r(3, 2),)),
    ("view_before_read_after", _view_before_read_after, (r(2, 3),)),
    ("view_of_view", _view_of_view, (r(3, 4),)),
    ("chained", _chained, (r(5),)),
    ("copy_broadcast", _copy_broadcast, (r(3, 4), r(4))),
    ("copy_into_view", _copy_into_view_then_base, (r(3, 4), r(3, 3))),
    ("index_put_slice", _index_put_slice, (r(4, 3), r(2, 3))),
    ("two_inputs", _two_inputs, (r(2, 3), r(2, 3, dtype=torch.float64) * 2)),
    ("detach", _detach_shares, (r(4),)),
    ("empty_and_size_one", _empty_and_one, (r(3, 2),)),
    ("int64", _int_write, (r(3, 2, dtype=torch.int64),)),
    ("foreach", _foreach, (r(2, 2), r(3))),
    ("reads_before_and_after", _reads_before_and_after, (r(4),)),
    ("in_place_view_of_intermediate", _in_place_view_of_intermediate, (r(3, 4),)),
]


@pytest.mark.parametrize("name,fn,tensors", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_functional_graph_computes_what_the_in_place_program_does(name, fn, tensors):
    v = _check(fn, *tensors)
    assert v.kind != "error", v.why
    assert not v.disagreements, v.disagreements


# make_fx reads the tensor an in-place op wrote through that op's node afterwards: a program
# whose every later read is of that same tensor object is traced faithfully even read naively
NAIVELY_FAITHFUL = {"copy_broadcast"}


def test_the_comparison_catches_a_write_the_graph_ignores():
    """Without the pass (the old import: every op read as its functional form, writes dropped) the
    same programs are caught: a write into an input is missing, or an output is stale."""
    op_of = lambda fn: types.SimpleNamespace(inplace_variant=fn)     # noqa: E731
    caught = 0
    for name, fn, tensors in PROGRAMS:
        if name in NAIVELY_FAITHFUL:
            continue
        try:
            g, inputs, outputs = C.trace_sample(op_of(fn), _sample(*tensors), inplace=True,
                                                functionalize=_functional_reading)
        except C.TraceError as e:
            assert "does not return it" in str(e)
            caught += 1
            continue
        if C.check_graph(g, inputs, outputs).kind == "error":
            caught += 1
    assert caught == len(PROGRAMS) - len(NAIVELY_FAITHFUL)


def _functional_reading(g):
    """Every in-place op as its functional variant, nothing else: what import-fx used to do."""
    import dataclasses
    return dataclasses.replace(g, nodes=[dataclasses.replace(n, target=functional_variant(n.target) or n.target)
                                         for n in g.nodes])


def test_graph_outputs_name_the_written_inputs():
    op = types.SimpleNamespace(inplace_variant=_two_inputs)
    g, _, _ = C.trace_sample(op, _sample(r(2, 3), r(2, 3)), inplace=True)
    assert [p.name for p in g.outputs] == ["out0", "mutated:in0", "mutated:in1"]
    assert not any(n.target.endswith("_.Tensor") for n in g.nodes)


# ----------------------------------------------------------------------------- refusals

def _as_strided_write(x):
    x.as_strided((2,), (2,)).add_(1)
    return x


def _in_place_view(x):
    x.t_()
    return x * 1


def _random_in_place(x):
    x.normal_()
    return x


@pytest.mark.parametrize("fn,words", [
    (_as_strided_write, "a view taken by aten.as_strided.default, which has no inverse here"),
    (_in_place_view, "changes the shape or strides of a graph input in place"),
    (_random_in_place, "has no functional variant"),
])
def test_writes_that_cannot_be_said_are_refused(fn, words):
    v = _check(fn, r(3, 4))
    assert v.kind == "refused" and words in v.why, v


def test_a_write_into_an_input_already_returned_as_mutated_is_refused():
    nodes = [G.Node("x", "placeholder", val=G.TensorMeta((2,), "float32")),
             G.Node("add_", "aten.add_.Tensor", (G.Ref("x"), 1), {}, G.TensorMeta((2,), "float32"))]
    g = G.RankGraph(rank=0, nodes=nodes, inputs=[G.Port("x", "x")],
                    outputs=[G.Port("mutated:x", "x")])
    with pytest.raises(FunctionalizeError, match="already returns an output named mutated:x"):
        functionalize(g)


def test_a_graph_without_writes_is_returned_as_it_is():
    nodes = [G.Node("x", "placeholder", val=G.TensorMeta((2,), "float32")),
             G.Node("add", "aten.add.Tensor", (G.Ref("x"), 1), {}, G.TensorMeta((2,), "float32"))]
    g = G.RankGraph(rank=0, nodes=nodes, inputs=[G.Port("x", "x")], outputs=[G.Port("add", "add")])
    assert functionalize(g) is g
