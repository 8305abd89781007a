"""Constructs of framework code that capture models (issue 26), on small programs with no
framework installed (tests/corpus/constructs/): ``async_op=True`` collectives and their ``wait()``,
process groups created for another backend, warnings and logging in ``forward``, constant tensors
written into ``forward``, a DTensor returned by a joint capture, and source locations in installed
packages.  Each construct has a wrong twin where it could hide a bug (a collective read before it
finishes, a group of the wrong members, a constant whose value differs); every label is confirmed
on gloo ranks (tests/corpus/programs/run_gloo.py)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from entangle_py.frontend import capture_errors
from entangle_py.frontend.capture import capture
from entangle_py.ir import graph
from entangle_py.pipeline import check_files

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT / "tests" / "corpus" / "constructs", ROOT / "tests" / "corpus" / "programs"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from construct_corpus import BY_ID, CORPUS  # noqa: E402

ALL_REDUCE = "_c10d_functional.all_reduce.default"


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.fixture(scope="module")
def gloo_report():
    import run_gloo
    return run_gloo.run(CORPUS, verbose=False)


@pytest.mark.gloo   # every label re-run on real gloo ranks: opt-in (pytest -m gloo)
def test_labels_confirmed_on_gloo(gloo_report):
    assert set(gloo_report) == {e.id for e in CORPUS}
    wrong = {n: r for n, r in gloo_report.items() if r["gloo"] != r["label"]}
    assert not wrong, wrong


def _check(tmp_path, entry_id):
    e = BY_ID[entry_id]
    seq, dist = tmp_path / "seq.pt", tmp_path / "dist.pt"
    joint = e.mode == "joint"
    graph.save(capture(e.script, 1, joint=joint), seq)
    b = capture(e.script, e.world_size, joint=joint)
    graph.save(b, dist)
    result, _ = check_files(seq, dist, Path(e.spec))
    assert result.status == ("refines" if e.label == "correct" else "fails"), result
    return b


def _targets(g):
    return [n.target for n in g.nodes if not n.is_placeholder]


def _out_node(g):
    return g.node(next(p.node for p in g.outputs if p.name == "out"))


def test_async_collective_waited_on_refines(tmp_path):
    """``dist.all_reduce(y, async_op=True)`` then ``handle.wait()``: the functional all-reduce, its
    result written into ``y`` at the wait."""
    b = _check(tmp_path, "async_waited[forward]")
    for g in b.ranks:
        assert _targets(g).count(ALL_REDUCE) == 1


@pytest.mark.parametrize("variant", ["async_read_before_wait", "async_never_waited"])
def test_async_collective_result_is_written_only_at_wait(tmp_path, variant):
    """A read between the call and ``wait()`` (a race), or a handle never waited on, does not see
    the reduced value (on gloo, with a slow peer, rank 0 reads its partial sums): capture never
    takes an unfinished collective for a finished one."""
    b = _check(tmp_path, f"{variant}[forward]")
    for g in b.ranks:
        assert "all_reduce" not in _out_node(g).target and "wait_tensor" not in _out_node(g).target


def test_gloo_group_warnings_and_logging_in_forward(tmp_path, recwarn):
    """A group created with ``backend="gloo"`` is made on the fake backend (same members); a warning
    and a log line in forward are no graph break."""
    for ws, entry in ((2, "gloo_group[forward]"), (4, "gloo_group[forward@4]")):
        b = _check(tmp_path, entry)
        for g in b.ranks:
            groups = [n.args[-1] for n in g.nodes if n.target == ALL_REDUCE]
            assert len(groups) == 1 and g.groups[groups[0]] == list(range(ws))


def test_gloo_groups_keep_their_members(tmp_path):
    """Groups of two ranks out of four: each rank's all-reduce names its pair, and the sum of half
    the partial sums does not refine."""
    b = _check(tmp_path, "gloo_group_pairs[forward@4]")
    for r, g in enumerate(b.ranks):
        (group,) = [n.args[-1] for n in g.nodes if n.target == ALL_REDUCE]
        assert g.groups[group] == [r - r % 2, r - r % 2 + 1]


def test_constant_tensors_in_forward_become_literals(tmp_path):
    """``torch.tensor(0.0)`` and ``torch.tensor([1., 2., ...])`` in forward: the trace lifts them as
    constants; capture writes their values (one fill, or one per element concatenated)."""
    b = _check(tmp_path, "constant[forward]")
    for g in b.ranks:
        values = sorted(n.args[1] for n in g.nodes if n.target == "aten.full.default")
        assert values == [0.0] + [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0], values
        assert not any(p.name.startswith("const:") for p in g.inputs)


def test_constants_of_other_values_do_not_refine(tmp_path):
    """A constant whose value is ``1 / world_size``: seq's and the ranks' literals differ (1 and 0.5),
    so the program does not refine -- a constant is its value, never a name matched across graphs."""
    b = _check(tmp_path, "constant_world_size[forward]")
    for g in b.ranks:
        assert {n.args[1] for n in g.nodes if n.target == "aten.full.default"} == {0.5}


def test_constant_literal_refuses_what_it_cannot_write():
    import torch
    from entangle_py.frontend.convert import MAX_LITERAL_ELEMENTS, constant_literal
    assert constant_literal("c", torch.arange(MAX_LITERAL_ELEMENTS + 1.0), None, None) is None
    assert constant_literal("c", torch.empty(3, device="meta"), None, None) is None
    big_uniform = constant_literal("c", torch.full((100, 100), 7), None, None)
    assert [n.target for n in big_uniform] == ["aten.full.default"] and big_uniform[0].args == ([100, 100], 7)
    nodes = constant_literal("c", torch.tensor([[True, False]]), None, None)
    assert [n.target for n in nodes][-2:] == ["aten.cat.default", "aten.view.default"] and nodes[-1].name == "c"
    assert nodes[-1].val == graph.TensorMeta((1, 2), "bool")


def test_dtensor_output_joint(tmp_path):
    """A DTensor returned by forward: its tangent is the rank's local shard (``tangent:out``), laid
    out as the output (recorded with the DTensor placements); forward and gradient refine."""
    b = _check(tmp_path, "dtensor_output[joint]")
    assert json.loads(b.meta["dtensor_placements"])["tangent:out"] == "shard(1)"
    assert all(g.input_node("tangent:out").val.shape == (4, 8) for g in b.ranks)


def test_installed_package_sources_shown_relative_to_the_package(tmp_path):
    site = "/opt/venv/lib/python3.11/site-packages"
    assert capture_errors.display_path(f"{site}/megatron/core/tensor_parallel/layers.py") == \
        "megatron/core/tensor_parallel/layers.py"
    assert capture_errors.display_path("/usr/lib/python3/dist-packages/transformers/x.py") == "transformers/x.py"
    # a framework's frame inside the standard library's prefix is the program's code, not torch's
    import contextlib
    stdlib = Path(contextlib.__file__).resolve().parent
    assert capture_errors._is_library(str(stdlib / "contextlib.py"))
    assert not capture_errors._is_library(str(stdlib / "site-packages" / "megatron" / "core" / "layers.py"))
    # the op's location is the innermost frame outside torch: the framework's line under a wrapper script
    script = str(tmp_path / "wrapper.py")
    frames = [(script, 10, "forward", "return self.model(x)"),
              (f"{site}/megatron/core/tensor_parallel/layers.py", 512, "forward", "output = matmul(x, w)"),
              (str(Path(__import__("torch").__file__).parent / "nn" / "functional.py"), 1, "linear", "")]
    assert capture_errors.pick_frame(frames, script)[1] == 512
    assert capture_errors.pick_frame(frames, script, prefer_script=True)[1] == 10
    # ... but a helper of the program's own beside it (not installed) is shown at the script's call
    helper = [frames[0], (str(tmp_path / "helpers.py"), 52, "forward", "return all_reduce(x)"), frames[2]]
    assert capture_errors.pick_frame(helper, script)[1] == 10
    assert capture_errors.pick_frame(helper[1:], script)[1] == 52     # no script frame: the helper's
