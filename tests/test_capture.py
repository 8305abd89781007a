"""Capture: script contract, stable port names, collectives and groups, provenance, graph breaks,
round trips through the file format, and committed graphs/ that equal a fresh capture."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from entangle_py import cli
from entangle_py.ir import graph
from entangle_py.frontend.capture import CaptureError, capture, load_script

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
MLP = EXAMPLES / "mlp.py"

MLP_INPUTS = ["input:x", "param:fc1.weight", "param:fc1.bias", "param:fc2.weight", "param:fc2.bias"]
MLP_GRADS = ["grad:input:x", "grad:fc1.weight", "grad:fc1.bias", "grad:fc2.weight", "grad:fc2.bias"]


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
    # Source paths are stored relative to the working directory (the committed ones to the root).
    monkeypatch.chdir(ROOT)


@pytest.fixture(scope="module")
def mlp_tp2():
    return capture(MLP, 2)


@pytest.fixture(scope="module")
def mlp_tp2_joint():
    return capture(MLP, 2, joint=True)


@pytest.fixture(scope="module")
def mlp_tp2_dynamic():
    return capture(MLP, 2, dynamic=True)


def _ports(g):
    return [p.name for p in g.inputs], [p.name for p in g.outputs]


def _targets(g):
    return [n.target for n in g.nodes if not n.is_placeholder]


# ----------------------------------------------------------------------------- round trip

@pytest.mark.parametrize("suffix", [".pt", ".json.gz", ".json"])
@pytest.mark.parametrize("which", ["mlp_tp2_joint", "mlp_tp2_dynamic"])
def test_round_trip(which, suffix, tmp_path, request):
    b = request.getfixturevalue(which)
    path = tmp_path / f"b{suffix}"
    graph.save(b, path)
    back = graph.load(path)
    assert graph.encode_bundle(back) == graph.encode_bundle(b)


# ----------------------------------------------------------------------------- ports

def test_forward_ports_and_kind(mlp_tp2):
    assert mlp_tp2.kind == "forward" and mlp_tp2.world_size == 2
    for g in mlp_tp2.ranks:
        assert _ports(g) == (MLP_INPUTS, ["out"])
    assert mlp_tp2.meta["world_size"] == "2" and mlp_tp2.meta["script"] == "mlp.py"
    assert all(isinstance(v, str) and type(v) is str for v in mlp_tp2.meta.values())


def test_joint_ports(mlp_tp2_joint):
    assert mlp_tp2_joint.kind == "joint"
    for g in mlp_tp2_joint.ranks:
        ins, outs = _ports(g)
        assert sorted(ins) == sorted(MLP_INPUTS + ["tangent:out"])
        assert outs[0] == "out" and sorted(outs[1:]) == sorted(MLP_GRADS)
        # shapes of gradients are the shapes of what they differentiate (the local shards)
        for p in g.inputs:
            if p.name.startswith("param:"):
                grad = g.output_node("grad:" + p.name[len("param:"):])
                assert grad.val.shape == g.node(p.node).val.shape
        assert g.input_node("param:fc1.weight").val.shape == (10, 8)     # FFN 20 / 2 rows
        assert g.input_node("param:fc2.weight").val.shape == (8, 10)     # sharded along dim 1
        assert g.input_node("tangent:out").val.shape == (2, 6, 8)


def test_sequential_program_has_no_collectives():
    b = capture(MLP, 1, joint=True)
    g = b.rank(0)
    assert b.world_size == 1 and g.groups == {}
    assert not any(n.namespace == "_c10d_functional" for n in g.nodes)
    assert g.input_node("param:fc1.weight").val.shape == (20, 8)
    assert sorted(_ports(g)[1]) == sorted(["out"] + MLP_GRADS)


def test_tuple_output_names(tmp_path):
    script = tmp_path / "two_outputs.py"
    script.write_text(textwrap.dedent("""\
        import torch, torch.nn as nn
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 3)
                self.register_buffer("scale", torch.ones(3))
            def forward(self, a, b):
                y = self.fc(a) * self.scale
                return y, y + b
        def build(rank, world_size):
            return M(), {"a": torch.randn(2, 4), "b": torch.randn(2, 3)}
        """))
    g = capture(script, 1).rank(0)
    assert sorted(_ports(g)[0]) == ["buffer:scale", "input:a", "input:b", "param:fc.bias", "param:fc.weight"]
    assert _ports(g)[1] == ["out:0", "out:1"]


# ----------------------------------------------------------------------------- collectives

def test_collectives_and_groups(mlp_tp2, mlp_tp2_joint):
    for g in mlp_tp2.ranks:
        assert _targets(g).count("_c10d_functional.all_reduce.default") == 1
        assert "_c10d_functional.wait_tensor.default" in _targets(g)
        assert g.groups == {"0": [0, 1]}
        ar = next(n for n in g.nodes if n.target == "_c10d_functional.all_reduce.default")
        assert ar.args[1] == "sum" and ar.args[2] in g.groups and ar.module == "fc2"
    for g in mlp_tp2_joint.ranks:   # reduce_from_tp forward + copy_to_tp backward
        assert _targets(g).count("_c10d_functional.all_reduce.default") == 2
        assert g.output_node("grad:input:x").target == "_c10d_functional.wait_tensor.default"


def test_tp4_group_and_shards():
    b = capture(MLP, 4)
    assert [g.groups for g in b.ranks] == [{"0": [0, 1, 2, 3]}] * 4
    assert b.rank(3).input_node("param:fc1.weight").val.shape == (5, 8)


def test_missing_allreduce_has_no_forward_collective():
    b = capture(EXAMPLES / "mlp_missing_allreduce.py", 2)
    assert all(g.groups == {} and not any(n.namespace == "_c10d_functional" for n in g.nodes) for g in b.ranks)


def test_sequence_parallel_collectives():
    b = capture(EXAMPLES / "seqpar_block.py", 2)
    t = _targets(b.rank(0))
    ag, rs = t.index("_c10d_functional.all_gather_into_tensor.default"), t.index("_c10d_functional.reduce_scatter_tensor.default")
    assert t.index("aten.native_layer_norm.default") < ag < t.index("aten.gelu.default") < rs
    g = b.rank(1)
    assert g.input_node("input:x").val.shape == (5, 3, 8)          # the sequence shard
    assert g.output_node("out").val.shape == (5, 3, 8)


def test_per_rank_graphs_differ_where_rank_dependent():
    b = capture(EXAMPLES / "vocab_embedding.py", 2)

    def consts(g):
        return [(n.target, n.args[1]) for n in g.nodes if n.target in ("aten.lt.Scalar", "aten.ge.Scalar", "aten.sub.Tensor")]
    assert consts(b.rank(0)) == [("aten.lt.Scalar", 0), ("aten.ge.Scalar", 10), ("aten.sub.Tensor", 0)]
    assert consts(b.rank(1)) == [("aten.lt.Scalar", 10), ("aten.ge.Scalar", 20), ("aten.sub.Tensor", 10)]
    assert _targets(b.rank(0)) == _targets(b.rank(1))


# ----------------------------------------------------------------------------- provenance

def test_source_locations_point_into_the_example(mlp_tp2_joint):
    lines = MLP.read_text().splitlines()
    g = mlp_tp2_joint.rank(0)
    ops = [n for n in g.nodes if not n.is_placeholder]
    assert all(n.source is not None and n.source.file == "examples/mlp.py" for n in ops)
    for n in ops:
        assert lines[n.source.line - 1].strip() == n.source.code
    gelu = next(n for n in ops if n.target == "aten.gelu.default")
    assert "F.gelu" in gelu.source.code and gelu.source.fn == "forward"
    assert next(n for n in ops if n.target == "aten.addmm.default").module == "fc1"
    ar = [n for n in ops if n.target == "_c10d_functional.all_reduce.default"]
    assert [n.module for n in ar] == ["fc2", "fc1"]  # forward reduce; backward of fc1's copy_to_tp
    assert all("funcol.all_reduce" in n.source.code for n in ar)


def test_helper_module_frames_are_used_when_the_script_has_none():
    b = capture(EXAMPLES / "mlp_missing_allreduce.py", 2)
    assert {n.source.file for n in b.rank(0).nodes if n.source} == {"examples/mlp.py"}


# ----------------------------------------------------------------------------- dynamic shapes

def test_dynamic_symbols(mlp_tp2_dynamic):
    for g in mlp_tp2_dynamic.ranks:
        assert g.symbols == {"x_size0": (2, None), "x_size1": (2, None)}
        x = g.input_node("input:x")
        assert [str(d) for d in x.val.shape] == ["x_size0", "x_size1", "8"]
        sizes = {p.name: g.node(p.node).val for p in g.inputs if p.name.startswith("size:")}
        assert {k: str(v.expr) for k, v in sizes.items()} == {"size:input:x:0": "x_size0", "size:input:x:1": "x_size1"}
        assert all(isinstance(v, graph.SymIntMeta) for v in sizes.values())
        view = next(n for n in g.nodes if n.target == "aten.view.default")
        assert str(view.args[1][0]) in ("x_size0*x_size1", "x_size1*x_size0")
        assert g.output_node("out").val.shape[2] == 8


# ----------------------------------------------------------------------------- errors

BREAK = """\
import torch, torch.nn as nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
    def forward(self, x):
        y = self.fc(x)
        {line}
            y = y * 2
        return y
def build(rank, world_size):
    return M(), {{"x": torch.randn(3, 4)}}
"""


@pytest.mark.parametrize("line, words", [
    ("if y.sum() > 0:", "Data-dependent branching"),
    ("for _ in range(int(y.sum().item())):", "data-dependent value"),
])
def test_graph_break_is_a_capture_error(tmp_path, line, words):
    script = tmp_path / "breaks.py"
    script.write_text(BREAK.format(line=line))
    with pytest.raises(CaptureError) as e:
        capture(script, 1)
    msg = str(e.value)
    assert "graph break" in msg and words in msg
    assert f"{script.as_posix()}:8" in msg or "breaks.py:8" in msg
    assert "\n" not in msg


def test_print_graph_break_via_cli(tmp_path, capsys):
    script = tmp_path / "prints.py"
    script.write_text(BREAK.format(line="if True:\n            print('shape', y.shape)").replace("y = y * 2", "pass"))
    rc = cli.main(["capture", str(script), "--world-size", "2", "-o", str(tmp_path / "x.pt")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert "graph break" in err and "print" in err and "prints.py:9" in err
    assert not (tmp_path / "x.pt").exists()


def test_shape_error_is_one_line_with_location(tmp_path, capsys):
    script = tmp_path / "shapes.py"
    script.write_text(BREAK.format(line="if True:").replace("self.fc(x)", "self.fc(x.t())"))
    with pytest.raises(CaptureError) as e:
        capture(script, 1)
    assert "must have same reduction dim" in str(e.value) and "shapes.py:7" in str(e.value)
    assert "\n" not in str(e.value) and capsys.readouterr().err == ""   # torch's traceback log is muted


def test_in_place_update_of_an_input_is_an_output(tmp_path):
    script = tmp_path / "inplace.py"
    script.write_text(BREAK.format(line="if True:").replace("y = y * 2", "x.add_(1)"))
    g = capture(script, 1).rank(0)
    assert _ports(g)[1] == ["mutated:input:x", "out"]


def test_bad_scripts(tmp_path):
    s = tmp_path / "nobuild.py"
    s.write_text("x = 1\n")
    with pytest.raises(CaptureError, match="build"):
        capture(s, 1)
    s = tmp_path / "badnames.py"
    s.write_text("import torch\ndef build(rank, world_size):\n    return torch.nn.Linear(2, 2), {'x': torch.randn(2)}\n")
    with pytest.raises(CaptureError, match="cannot be called with the inputs"):
        capture(s, 1)
    with pytest.raises(CaptureError, match="no such script"):
        capture(tmp_path / "missing.py", 1)


def test_cli_capture_writes_a_bundle(tmp_path, capsys):
    out = tmp_path / "mlp.json.gz"
    assert cli.main(["capture", str(MLP), "--world-size", "2", "--joint", "-o", str(out)]) == 0
    assert "2 rank(s)" in capsys.readouterr().out
    b = graph.load(out)
    assert b.kind == "joint" and b.world_size == 2


# ----------------------------------------------------------------------------- committed graphs

def _canonical(b: graph.Bundle):
    """Everything but node names (FX numbering can depend on what ran before in the process)."""
    out = []
    for g in b.ranks:
        index = {n.name: i for i, n in enumerate(g.nodes)}

        def arg(a):
            if isinstance(a, graph.Ref):
                return ("ref", index[a.name])
            if isinstance(a, (list, tuple)):
                return [arg(x) for x in a]
            return graph.encode_arg(a)
        nodes = [(n.target, [arg(a) for a in n.args], {k: arg(v) for k, v in n.kwargs.items()},
                  graph.encode_val(n.val), n.module, n.source and (n.source.file, n.source.line, n.source.code))
                 for n in g.nodes]
        out.append({"nodes": nodes,
                    "inputs": [(p.name, index[p.node]) for p in g.inputs],
                    "outputs": [(p.name, index[p.node]) for p in g.outputs],
                    "groups": g.groups, "symbols": g.symbols,
                    "guards": sorted(str(x) for x in g.guards)})
    return b.kind, out


def _committed_cases():
    cases = []
    for script in sorted(EXAMPLES.glob("*.py")):
        if "GRAPHS" not in script.read_text():    # a helper module (gloo_ranks.py), not a capture script
            continue
        for d, ws, joint, dynamic, spec in getattr(load_script(script), "GRAPHS", []):
            cases.append(pytest.param(script, d, ws, joint, dynamic, spec, id=d))
    return cases


@pytest.mark.parametrize("script, d, ws, joint, dynamic, spec", _committed_cases())
def test_committed_graphs_equal_a_fresh_capture(script, d, ws, joint, dynamic, spec):
    where = ROOT / "graphs" / d
    hint = f"graphs/{d} is stale: regenerate it with `python examples/{script.name}`"
    assert (where / "spec.toml").read_text() == spec, hint
    for name, world in (("seq.pt", 1), ("dist.pt", ws)):
        committed = graph.load(where / name)
        fresh = capture(script, world, joint=joint, dynamic=dynamic)
        assert _canonical(committed) == _canonical(fresh), f"{name}: {hint}"


def test_graphs_readme_lists_every_directory():
    readme = (ROOT / "graphs" / "README.md").read_text()
    dirs = sorted(p.name for p in (ROOT / "graphs").iterdir() if p.is_dir())
    assert dirs and all(f"`{d}/`" in readme for d in dirs)
    captured = {d for d in dirs if (ROOT / "graphs" / d / "seq.pt").exists()}
    assert {c.id for c in _committed_cases()} == captured
    for d in set(dirs) - captured:     # a spec for third-party graphs read from entangle-data
        assert (ROOT / "graphs" / d / "spec.toml").exists(), d
