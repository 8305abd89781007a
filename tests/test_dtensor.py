"""DTensor programs (issue 14 item 7): ``parallelize_module`` programs are captured (a DTensor
parameter is its local tensor on each rank) and the input relation of a DTensor comes from its
placements, recorded by capture and printed by the checker as an inferred relation."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from entangle_py.check import spec as S
from entangle_py.check.checker import Checker
from entangle_py.errors import InputError
from entangle_py.frontend.capture import capture
from entangle_py.ir.bundle_meta import DTENSOR_PLACEMENTS, PARALLEL_STYLES
from entangle_py.ir import graph as G

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "corpus" / "programs"


@pytest.fixture(scope="module")
def mlp():
    script = str(PROGRAMS / "_dtensor.py:dtensor_mlp_correct")
    return capture(script, 1), capture(script, 2)


def test_dtensor_parameters_are_captured_as_their_local_tensors(mlp):
    seq, dist = mlp
    for g in dist.ranks:
        shapes = {p.name: tuple(g.node(p.node).val.shape) for p in g.inputs}
        assert shapes == {"input:x": (2, 4, 8), "param:fc1.weight": (8, 8), "param:fc2.weight": (8, 8)}
        assert [p.name for p in g.outputs] == ["out"]
        assert any(n.target == "_c10d_functional.all_reduce.default" for n in g.nodes)
    assert {p.name: tuple(seq.rank(0).node(p.node).val.shape) for p in seq.rank(0).inputs}["param:fc1.weight"] == (16, 8)
    assert DTENSOR_PLACEMENTS not in seq.meta
    assert json.loads(dist.meta[DTENSOR_PLACEMENTS]) == {"param:fc1.weight": "shard(0)", "param:fc2.weight": "shard(1)"}


def test_the_relation_of_a_dtensor_comes_from_its_placements(mlp):
    seq, dist = mlp
    res = Checker(seq, dist, S.parse_spec({"inputs": {"input:x": "replicate"}})).run()
    assert res.status == "refines", res.failure
    assert res.inferred_inputs == {"param:fc1.weight": "shard(0)", "param:fc2.weight": "shard(1)"}


def _with_placements(bundle, placements):
    return G.Bundle(ranks=bundle.ranks, kind=bundle.kind,
                    meta={**bundle.meta, DTENSOR_PLACEMENTS: json.dumps(placements)})


def test_placements_are_read_not_shapes(mlp):
    # a placement that is not what the shapes say is taken as the program's claim: the ranks'
    # [8, 8] parts of a [16, 8] weight cannot be a replicate, so the check refuses the input
    seq, dist = mlp
    wrong = _with_placements(dist, {"param:fc1.weight": "replicate", "param:fc2.weight": "shard(1)"})
    with pytest.raises(InputError, match="param:fc1.weight"):
        Checker(seq, wrong, S.parse_spec({"inputs": {"input:x": "replicate"}})).run()
    # a partial placement (same shapes as replicate) is a sum over ranks, never a replicate
    part = _with_placements(dist, {"param:fc1.weight": "shard(0)", "param:fc2.weight": "shard(1)",
                                   "input:x": "partial"})
    checker = Checker(seq, part, S.parse_spec({}))
    rels = checker.input_relations()
    assert str(rels["input:x"]) == "partial" and str(rels["param:fc1.weight"]) == "shard(0)"


def test_the_spec_overrides_the_placements(mlp):
    seq, dist = mlp
    res = Checker(seq, dist, S.parse_spec({"inputs": {"input:x": "replicate", "param:fc1.weight": "shard(0)",
                                                      "param:fc2.weight": "shard(1)"}})).run()
    assert res.status == "refines" and res.inferred_inputs == {}


def test_placements_the_spec_cannot_say_are_refused(mlp):
    seq, dist = mlp
    odd = _with_placements(dist, {"param:fc1.weight": "unmapped: a DTensor on the mesh [[0, 1], [2, 3]]",
                                  "param:fc2.weight": "shard(1)"})
    with pytest.raises(InputError, match=r"param:fc1.weight.*cannot say.*\[inputs\]"):
        Checker(seq, odd, S.parse_spec({"inputs": {"input:x": "replicate"}})).run()
    # ... unless the spec gives the relation itself
    res = Checker(seq, odd, S.parse_spec({"inputs": {"input:x": "replicate", "param:fc1.weight": "shard(0)"}})).run()
    assert res.status == "refines"


def test_a_missing_all_reduce_behind_a_partial_output_placement_fails():
    script = str(PROGRAMS / "_dtensor.py:dtensor_mlp_partial_output")
    res = Checker(capture(script, 1), capture(script, 2), S.parse_spec({"inputs": {"input:x": "replicate"}})).run()
    assert res.status == "fails"
    assert res.failure.target == "aten.add.Tensor" and "_dtensor.py" in res.failure.source


def test_the_plan_entries_are_recorded_with_their_lines(mlp):
    _, dist = mlp
    styles = json.loads(dist.meta[PARALLEL_STYLES])
    assert set(styles) == {"fc1", "fc2"}
    assert styles["fc1"]["style"].startswith("ColwiseParallel(") and styles["fc2"]["style"].startswith("RowwiseParallel(")
    plan_line = next(i for i, ln in enumerate((PROGRAMS / "_dtensor.py").read_text().splitlines(), 1)
                     if '"fc2": RowwiseParallel(output_layouts=out)' in ln)
    assert styles["fc2"]["file"].endswith("_dtensor.py") and styles["fc2"]["line"] == plan_line


def test_a_failure_inside_a_parallelized_module_names_its_plan_entry():
    """The partial-output bug is a plan entry (RowwiseParallel(output_layouts=Partial())): the
    failure, reported at the forward line, names fc2's entry, its Partial layout and its line."""
    from entangle_py.check.culprit import annotate
    from entangle_py.report.common import culprit_lines
    script = str(PROGRAMS / "_dtensor.py:dtensor_mlp_partial_output")
    checker = Checker(capture(script, 1), capture(script, 2), S.parse_spec({"inputs": {"input:x": "replicate"}}))
    res = checker.run()
    annotate(checker, res)
    (plan,) = res.failure.detail["plans"]
    assert plan["module"] == "fc2" and "Partial(sum)" in plan["style"] and plan["line"] > 0
    assert any("module fc2 is parallelized by RowwiseParallel(" in ln for ln in culprit_lines(res.failure.detail))


def test_dtensor_gradients_are_their_local_tensors():
    script = str(PROGRAMS / "_dtensor.py:dtensor_mlp_correct")
    dist = capture(script, 2, joint=True)
    for g in dist.ranks:
        outs = {p.name: tuple(g.node(p.node).val.shape) for p in g.outputs}
        assert outs == {"out": (2, 4, 8), "grad:fc1.weight": (8, 8), "grad:fc2.weight": (8, 8)}
        assert "tangent:out" in {p.name for p in g.inputs}


def test_a_gradients_device_mesh_held_as_a_constant_is_dropped():
    """Once a DTensor program was traced in the process, torch holds the device mesh of a later
    one's Partial gradients (the sequence-parallel norm's) as a script-object constant the graph
    returns; only returned as the DTensor's mesh, it is dropped like the mesh input (it was
    refused as "a constant tensor")."""
    capture(str(PROGRAMS / "_dtensor.py:dtensor_bias_mlp_correct"), 2, joint=True)
    dist = capture(str(PROGRAMS / "_dtensor.py:dtensor_bias_sp_correct"), 2, joint=True)
    for g in dist.ranks:
        outs = {p.name for p in g.outputs}
        assert {"grad:norm.weight", "grad:norm.bias", "grad:fc2.bias"} <= outs
        assert all(n.target != "get_attr" for n in g.nodes)
