"""``slice`` in explicit input relations (issue 13: a fused weight whose ranks hold interleaved
parts, ``[gate_r; up_r]``): parsing, normalisation against the ranks' shapes, refusal (exit 2) of
what the term language cannot say, seeding in the checker, and inversion by the re-check."""
from __future__ import annotations

from pathlib import Path

import pytest
import sympy
import torch

from entangle_py.check import spec as S
from entangle_py.check.checker import Checker
from entangle_py.errors import InputError
from entangle_py.ir import graph as G
from entangle_py.oracle import graph_values
from entangle_py.oracle import placement
from entangle_py.oracle.recheck import attach
from entangle_py.pipeline import check_files

ROOT = Path(__file__).resolve().parents[1]
MLP = ROOT / "graphs" / "mlp_tp2"


def _norm(text, shapes, le=None):
    return S.normalize_term(S.parse_term(text), lambda leaf: shapes[(leaf.rank, leaf.name)], "test", le)


# ----------------------------------------------------------------------------- parse / normalise

def test_slice_parses_with_keyword_bounds():
    t = S.parse_term("slice(r0.w, dim=0, start=2, end=-1)")
    assert isinstance(t, S.Call) and t.op == "slice"
    assert t.args == (S.Leaf(0, "w"),) and dict(t.attrs) == {"dim": 0, "start": 2, "end": -1}


def test_slice_bounds_are_normalised_against_the_rank_shape():
    shapes = {(0, "w"): (8, 6), (1, "w"): (8, 6)}
    t, shape = _norm("slice(r0.w, dim=-2, start=-4)", shapes)
    assert dict(t.attrs) == {"dim": 0, "start": 4, "end": 8} and shape == (4, 6)
    t, shape = _norm("slice(r1.w, dim=1, end=-2)", shapes)
    assert dict(t.attrs) == {"dim": 1, "start": 0, "end": 4} and shape == (8, 4)
    t, shape = _norm("concat(slice(r0.w, end=4), slice(r1.w, end=4), slice(r0.w, start=4), "
                     "slice(r1.w, start=4), dim=-2)", shapes)
    assert dict(t.attrs) == {"dim": 0} and shape == (16, 6)
    assert [dict(a.attrs) for a in t.args] == [{"dim": 0, "start": 0, "end": 4}, {"dim": 0, "start": 0, "end": 4},
                                               {"dim": 0, "start": 4, "end": 8}, {"dim": 0, "start": 4, "end": 8}]
    t, _ = _norm("slice(r0.w, dim=0, start=3, end=3)", shapes)     # an empty slice is a slice
    assert dict(t.attrs)["start"] == dict(t.attrs)["end"] == 3


@pytest.mark.parametrize("text, why", [
    ("slice(r0.w, dim=0, start=0, end=9)", "not inside"),          # past the end: never clamped
    ("slice(r0.w, dim=0, start=-9)", "not inside"),                # before the start
    ("slice(r0.w, dim=0, start=5, end=3)", "not inside"),          # start > end
    ("slice(r0.w, dim=2, start=0, end=1)", "along dim 2"),         # no such dim
    ("slice(r0.w, dim=0, start=0, end=8, step=2)", "step=2"),      # no strided slice in terms
    ("slice(r0.w, dimm=1, start=0, end=4)", "dimm="),              # a typo is not a default
    ("slice(r0.w, dim=0, start=[1], end=4)", "not an integer"),
    ("slice(r0.w, r1.w, dim=0, end=4)", "one tensor"),
    ("concat(r0.w, r1.w, dims=1)", "dims="),
    ("transpose(r0.w, dim0=0, dim1=2)", "dim 2"),
    ("transpose(r0.w, dims=[0, 1], dim0=1)", "not both"),
    ("permute(r0.w, dims=[0, 0])", "not a permutation"),
    ("reshape(r0.w, shape=[5, -1])", "reshape of"),
    ("reshape(r0.w, shape=[-1, -1])", "not a list of sizes"),
    ("neg(r0.w, r1.w)", "one tensor"),
])
def test_slices_the_term_language_cannot_say_are_refused(text, why):
    with pytest.raises(S.SpecError, match=why.replace("[", r"\[")):
        _norm(text, {(0, "w"): (8, 6), (1, "w"): (8, 6)})


def test_movement_ops_are_normalised_like_slices():
    """transpose / permute / reshape / neg, the rest of the spec's clean operators, with their
    dims explicit and non-negative and the shape they give."""
    shapes = {(0, "w"): (8, 6), (1, "w"): (8, 6)}
    t, shape = _norm("transpose(r0.w, dims=[-1, 0])", shapes)
    assert dict(t.attrs) == {"dim0": 1, "dim1": 0} and shape == (6, 8)
    t, shape = _norm("transpose(r0.w)", shapes)
    assert dict(t.attrs) == {"dim0": 0, "dim1": 1} and shape == (6, 8)
    t, shape = _norm("permute(concat(r0.w, r1.w, dim=1), dims=[-1, 0])", shapes)
    assert dict(t.attrs) == {"dims": (1, 0)} and shape == (12, 8)
    t, shape = _norm("reshape(r0.w, shape=[2, -1, 6])", shapes)
    assert dict(t.attrs) == {"shape": (2, 4, 6)} and shape == (2, 4, 6)
    t, shape = _norm("neg(r1.w)", shapes)
    assert t.op == "neg" and shape == (8, 6)


def test_transposed_relations_refine_and_swapped_ranks_do_not():
    """fc1.weight [20, 8] on two ranks [10, 8] written through transposes: the same relation as
    shard(0); with the ranks swapped it is not how the program holds fc1."""
    rel = ("transpose(concat(transpose(r0.param:fc1.weight), permute(r1.param:fc1.weight, dims=[1, 0]), dim=1), "
           "dims=[0, 1])")
    checker = Checker(G.load(MLP / "seq.pt"), G.load(MLP / "dist.pt"), _mlp_spec(rel))
    res = checker.run()
    assert res.status == "refines", res.failure
    attach(res, checker)      # the ranks' weights derived through the transposes agree numerically
    assert res.numeric["status"] == "agrees", res.numeric
    rel = "transpose(concat(transpose(r1.param:fc1.weight), transpose(r0.param:fc1.weight), dim=1))"
    assert _check(_mlp_spec(rel)).status == "fails"
    rel = "reshape(concat(reshape(r0.param:fc1.weight, shape=[80]), reshape(r1.param:fc1.weight, shape=[80]), dim=0), shape=[20, 8])"
    assert _check(_mlp_spec(rel)).status == "refines"


def test_slice_of_a_symbolic_dim_needs_a_proof_of_its_bounds():
    s = sympy.Symbol("s", positive=True, integer=True)
    shapes = {(0, "w"): (2 * s, 6)}
    t, shape = _norm("slice(r0.w, dim=0, start=0)", shapes)           # [0, 2s): literally the whole dim
    assert dict(t.attrs)["end"] == 2 * s and shape == (2 * s, 6)
    t, shape = _norm("slice(r0.w, dim=0, start=-2)", shapes)          # 0 <= 2s - 2 as s >= 1
    assert dict(t.attrs)["start"] == 2 * s - 2 and shape == (2, 6)
    for text in ("slice(r0.w, dim=0, start=-3)", "slice(r0.w, dim=0, start=0, end=4)"):
        with pytest.raises(S.SpecError, match="not inside"):          # 3 <= 2s, 4 <= 2s: not known
            _norm(text, shapes)
    asked = []
    t, shape = _norm("slice(r0.w, dim=0, start=-3)", shapes, le=lambda a, b: asked.append((a, b)) or True)
    assert dict(t.attrs)["start"] == 2 * s - 3 and shape == (3, 6)
    assert (0, 2 * s - 3) in asked
    with pytest.raises(S.SpecError, match="not inside"):
        _norm("slice(r0.w, dim=0, start=0, end=4)", shapes, le=lambda a, b: False)


# ----------------------------------------------------------------------------- the checker

def _mlp_spec(fc1_weight):
    return S.parse_spec({"inputs": {"input:x": "replicate", "param:fc1.weight": fc1_weight,
                                    "param:fc1.bias": "shard(0)", "param:fc2.weight": "shard(1)",
                                    "param:fc2.bias": "replicate"},
                         "outputs": {"check": ["out"]}, "expect": {"out": "replicate"}})


def _check(spec):
    seq, dist = G.load(MLP / "seq.pt"), G.load(MLP / "dist.pt")
    return Checker(seq, dist, spec).run()


def test_slices_normalised_to_whole_rank_weights_refine_like_shard():
    # fc1.weight is [20, 8]; each rank holds [10, 8], written as slices whose bounds and dims
    # only normalisation makes whole (dim=-2, start=-10, an open end)
    rel = ("concat(slice(r0.param:fc1.weight, dim=0, end=10), slice(r1.param:fc1.weight, dim=-2, start=-10), dim=0)")
    seq, dist = G.load(MLP / "seq.pt"), G.load(MLP / "dist.pt")
    checker = Checker(seq, dist, _mlp_spec(rel))
    res = checker.run()
    assert res.status == "refines", res.failure
    assert res.relations["out"].startswith("r")
    attach(res, checker)      # the ranks' weights derived through the slices agree numerically
    assert res.numeric["status"] == "agrees", res.numeric


def test_slices_of_the_wrong_ranks_do_not_refine():
    rel = "concat(slice(r1.param:fc1.weight, dim=0, end=10), slice(r0.param:fc1.weight, dim=0, start=-10), dim=0)"
    assert _check(_mlp_spec(rel)).status == "fails"
    # each rank's rows halved and swapped: the same tensors, not how the program holds fc1
    rel = ("concat(slice(r0.param:fc1.weight, dim=0, start=5), slice(r0.param:fc1.weight, dim=0, end=5), "
           "slice(r1.param:fc1.weight, dim=0, start=5), slice(r1.param:fc1.weight, dim=0, end=5), dim=0)")
    assert _check(_mlp_spec(rel)).status == "fails"


@pytest.mark.parametrize("rel, why", [
    ("concat(slice(r0.param:fc1.weight, dim=0, end=11), slice(r1.param:fc1.weight, dim=0, end=9), dim=0)", "not inside"),
    ("concat(slice(r0.param:fc1.weight, dim=0, end=5), slice(r1.param:fc1.weight, dim=0, end=5), dim=0)",
     "has shape"),      # [10, 8] is not fc1.weight's [20, 8]
    ("concat(slice(r0.param:fc1.weight, dim=0, end=10, step=1), slice(r1.param:fc1.weight, step=2), dim=0)", "step=2"),
])
def test_bad_slice_relations_are_bad_input(rel, why):
    with pytest.raises(InputError, match=why):
        _check(_mlp_spec(rel))


def test_bad_slice_relation_exits_2_from_the_cli(tmp_path):
    from entangle_py.cli import main
    spec = tmp_path / "spec.toml"
    spec.write_text('[inputs]\n"param:fc1.weight" = "concat(slice(r0.param:fc1.weight, dim=0, end=12), '
                    'r1.param:fc1.weight, dim=0)"\n')
    assert main(["check", str(MLP / "seq.pt"), str(MLP / "dist.pt"), "--spec", str(spec)]) == 2


def test_numeric_witness_derives_the_ranks_weights_through_the_slices(tmp_path):
    spec = tmp_path / "spec.toml"
    text = _mlp_spec("replicate").to_toml()
    spec.write_text(text.replace(
        '"param:fc1.weight" = "replicate"',
        '"param:fc1.weight" = "concat(slice(r0.param:fc1.weight, dim=0, end=5), slice(r1.param:fc1.weight, '
        'dim=0, end=5), slice(r0.param:fc1.weight, dim=0, start=5), slice(r1.param:fc1.weight, dim=0, start=5), '
        'dim=0)"'))
    # an interleaved relation the program does not have: the check fails, and the witness, which
    # builds each rank's fc1 from both of its slices, confirms it numerically
    res, checker = check_files(str(MLP / "seq.pt"), str(MLP / "dist.pt"), str(spec))
    assert res.status == "fails"
    attach(res, checker)
    assert res.numeric and res.numeric.get("status") == "confirmed", res.numeric


# ----------------------------------------------------------------------------- inversion (re-check)

def _bundle(shapes):
    return G.Bundle([G.RankGraph(rank=r, nodes=[G.Node("w", "placeholder", val=G.TensorMeta(s, "float64"))],
                                 inputs=[G.Port("w", "w")], outputs=[], groups={}, symbols={})
                     for r, s in enumerate(shapes)])


def test_interleaved_slices_of_one_leaf_are_inverted_together():
    term = S.parse_term("concat(slice(r0.w, dim=-2, end=2), slice(r1.w, dim=0, end=2), "
                        "slice(r0.w, dim=0, start=-2), slice(r1.w, dim=0, start=2, end=4), dim=0)")
    v = torch.randn(8, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    b = _bundle([(4, 3), (4, 3)])
    leaves = placement.distribute_term(v, term, b, torch.Generator().manual_seed(1))
    assert torch.equal(leaves[(0, "w")], torch.cat([v[0:2], v[4:6]]))
    assert torch.equal(leaves[(1, "w")], torch.cat([v[2:4], v[6:8]]))
    assert torch.equal(placement.eval_term(term, [{"w": leaves[(0, "w")]}, {"w": leaves[(1, "w")]}]), v)


def test_slices_that_overlap_with_different_values_cannot_be_inverted():
    term = S.parse_term("concat(slice(r0.w, dim=0, end=3), slice(r0.w, dim=0, start=1), dim=0)")
    v = torch.arange(6, dtype=torch.float64).reshape(6, 1)
    with pytest.raises(graph_values.InterpError, match="twice"):
        placement.distribute_term(v, term, _bundle([(4, 1)]))
    # rows a slice leaves out are random, and a whole occurrence of the leaf must agree with them
    leaves = placement.distribute_term(torch.ones(2, 1, dtype=torch.float64),
                                    S.parse_term("slice(r0.w, dim=0, start=1, end=3)"), _bundle([(4, 1)]))
    assert torch.equal(leaves[(0, "w")][1:3], torch.ones(2, 1, dtype=torch.float64))


def test_an_expected_relation_of_the_wrong_shape_is_bad_input():
    spec = _mlp_spec("shard(0)")
    spec.expect["out"] = S.parse_relation("slice(r0.out, dim=1, end=3)", "out", S.Mesh())
    with pytest.raises(InputError, match=r"\[expect\] 'out'.*has shape"):
        _check(spec)
    spec.expect["out"] = S.parse_relation("slice(r0.out, dim=1, start=-6)", "out", S.Mesh())
    assert _check(spec).status == "refines"      # the whole of dim 1 (6 rows): r0.out itself
