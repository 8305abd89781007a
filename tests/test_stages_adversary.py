"""Attacks on checking by stages (entangle_py/stages.py, docs/scale-out.md): a wrong program (or a
false boundary) must never refine through [stages] where the same program checked whole fails.

Each attack runs a WRONG program, or a false boundary, under a staged spec and asserts it does not
refine; where the attack is a legitimate spec, the correct twin is run too and refines (so the
refusal is the bug's, not the spec's).  Programs, labels confirmed on gloo:

* tests/corpus/programs/_pp.py's three-stage ``skip`` (rank 0: h1 = relu(fc1 x) to ranks 1 and 2;
  rank 1: h2 = relu(fc2 h1) to rank 2; rank 2: fc3(h2) + h1), correct and ``swapped_peers`` (rank
  2 takes h1 as h2 and h2 as the skip), forward (program corpus);
* tests/corpus/soundness/c9_stages_skip.py: the same, joint, and a twin whose rank 0 drops the
  skip's gradient of h1 (every forward value right, grad:fc1 wrong; tests/corpus/programs/run_gloo.py,
  joint, 3 ranks);
* tests/corpus/soundness/c9_stages_state_*.py: a replicated weight decayed in place, rank 1 by the
  wrong factor (tests/corpus/soundness/run_gloo.py).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from entangle_py.cli import main
from entangle_py.ir import graph as G

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "corpus" / "programs"
SOUND = ROOT / "tests" / "corpus" / "soundness"
SKIP_BASE = (PROGRAMS / "pp_skip.toml").read_text().split("[expect]")[0]
SKIP_EXPECT = '[expect]\n"out" = "r2.out"\n'
JOINT_BASE = (PROGRAMS / "pp_skip_joint.toml").read_text().split("[expect]")[0]
JOINT_EXPECT = ('[expect]\n"out" = "r2.out"\n"grad:fc1" = "r0.grad:fc1"\n"grad:fc2" = "r1.grad:fc2"\n'
                '"grad:fc3" = "r2.grad:fc3"\n')
STATE_BASE = '[inputs]\n"input:x" = "replicate"\n[outputs]\ncheck = ["out"]\n[expect]\nout = "replicate"\n'


def _capture(d: Path, targets) -> dict:
    from entangle_py.frontend.capture import capture
    out = {}
    for key, target, ws, joint in targets:
        out[key] = str(d / f"{key}.pt")
        G.save(capture(target, ws, joint=joint), out[key])
    return out


def _twins(factory, name, target, correct, wrong, ws, joint=False) -> dict:
    """A family's sequential program (the correct builder at 1 rank) and its two twins, captured."""
    return _capture(factory.mktemp(name), [("seq", f"{target}{correct}", 1, joint),
                                           ("correct", f"{target}{correct}", ws, joint),
                                           ("wrong", f"{target}{wrong}", ws, joint)])


@pytest.fixture(scope="module")
def skip(tmp_path_factory):
    return _twins(tmp_path_factory, "skip", f"{PROGRAMS}/_pp.py:", "pp_skip_correct", "pp_skip_swapped_peers", 3)


@pytest.fixture(scope="module")
def joint(tmp_path_factory):
    return _twins(tmp_path_factory, "joint", f"{SOUND}/c9_stages_skip.py:", "skip_correct", "skip_grad_dropped", 3,
                  joint=True)


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    return _twins(tmp_path_factory, "state", f"{SOUND}/c9_stages_state_", "correct.py", "wrong.py", 2)


def _check(graphs, which, tmp_path, text, name="spec.toml"):
    """``entangle check`` of ``which`` against the sequential program under ``text``: (exit code,
    the --json report or None)."""
    spec, out = tmp_path / name, tmp_path / (name + ".json")
    spec.write_text(text)
    out.unlink(missing_ok=True)
    code = main(["check", graphs["seq"], graphs[which], "--spec", str(spec), "--no-numeric", "--json", str(out)]
                + (["--workers", "1"] if "[stages]" in text else []))
    return code, (json.loads(out.read_text()) if out.exists() else None)


def _stages(*pairs) -> str:
    return "[stages]\n" + "".join(f'"{k}" = "{v}"\n' for k, v in pairs)


def _statuses(rep):
    return [s["status"] for s in rep["stages"]]


# -- the programs' labels as the whole check gives them: what a staged check must not beat ----------

@pytest.mark.parametrize("family", ["skip", "joint", "state"])
def test_checked_whole_the_wrong_twins_fail_and_the_correct_ones_refine(family, request, tmp_path):
    graphs = request.getfixturevalue(family)
    text = {"skip": SKIP_BASE + SKIP_EXPECT, "joint": JOINT_BASE + JOINT_EXPECT,
            "state": STATE_BASE.replace('[outputs]', '"param:weight" = "replicate"\n[outputs]')}[family]
    assert _check(graphs, "correct", tmp_path, text)[0] == 0
    assert _check(graphs, "wrong", tmp_path, text)[0] == 1


# -- order, names, duplicates --------------------------------------------------------------------

def test_boundaries_out_of_pipeline_order_cost_work_never_soundness(skip, tmp_path):
    """h2 listed before h1: stage 0 proves h2 from scratch (no boundary given), stage 1 proves h1
    given h2; the swapped-peers bug is still caught, the correct program still refines."""
    text = SKIP_BASE + _stages(("relu_1", "r1.relu"), ("relu", "r0.relu")) + SKIP_EXPECT
    code, rep = _check(skip, "wrong", tmp_path, text)
    assert code == 1 and _statuses(rep) == ["refines", "refines", "fails"]
    assert _check(skip, "correct", tmp_path, text)[0] == 0


def test_a_boundary_naming_the_output_cannot_stand_in_for_its_proof(skip, tmp_path):
    """``out`` as a boundary: the stage that must prove it fails on the bug; the last stage,
    given it, still needs a certificate over what the ranks return."""
    text = SKIP_BASE + _stages(("relu", "r0.relu"), ("out", "r2.out")) + SKIP_EXPECT.replace('"out" = "r2.out"\n', "")
    code, rep = _check(skip, "wrong", tmp_path, text)
    assert code == 1 and rep["stages"][1]["status"] == "fails", _statuses(rep)
    assert _check(skip, "correct", tmp_path, text)[0] == 0


def test_a_boundary_the_programs_do_not_have_or_an_input_port_is_refused(skip, tmp_path):
    for pairs in ([("nosuch", "r0.relu")],                   # no such G_s tensor
                  [("relu", "r0.nosuch")],                   # no such rank tensor
                  [("input:x", "r0.input:x")],               # an input port, related in [inputs] too
                  [("relu", "r0.relu"), ("relu_1", "r2.relu")]):     # rank 2 has no relu
        code, rep = _check(skip, "wrong", tmp_path, SKIP_BASE + _stages(*pairs) + SKIP_EXPECT)
        assert code == 2, (pairs, code)
        assert rep is None or rep["status"] != "refines"


def test_a_boundary_on_an_input_is_proved_from_its_relation_or_refused(skip, tmp_path):
    """The batch's placeholder (G_s ``arg1_1``, port input:x) as a boundary instead of an [inputs]
    entry: the later stages are given it as the input's relation, but stage 0 must prove it from
    the input's own relation, which it cannot infer (only rank 0 holds the batch): refused (exit
    2), for the wrong program and the correct one alike."""
    base = SKIP_BASE.replace('"input:x" = "r0.input:x"\n', "")
    text = base + _stages(("arg1_1", "r0.input:x"), ("relu", "r0.relu")) + SKIP_EXPECT
    for which in ("wrong", "correct"):
        code, rep = _check(skip, which, tmp_path, text)
        assert code == 2 and rep["stages"][0]["status"] == "bad-input", (which, code, _statuses(rep))


@pytest.mark.parametrize("section", ["cut", "expect", "inputs"])
def test_a_boundary_written_twice_is_refused_before_any_stage_runs(skip, tmp_path, section, capsys):
    """A boundary given a second relation elsewhere in the spec (one a stage would assume, the
    other one it would prove or an input relation), or the same key twice in [stages] (TOML)."""
    twice = '"relu" = "r1.relu"\n'
    if section == "inputs":     # the base's own [inputs] table
        text = SKIP_BASE.replace("[inputs]\n", "[inputs]\n" + twice) + _stages(("relu", "r0.relu")) + SKIP_EXPECT
    else:
        text = SKIP_BASE + _stages(("relu", "r0.relu")) + f"[{section}]\n" + twice
        text += SKIP_EXPECT if section == "cut" else ""
    assert _check(skip, "wrong", tmp_path, text) == (2, None)
    assert "a stage boundary's relation is written once" in capsys.readouterr().err
    text = SKIP_BASE + '[stages]\n"relu" = "r0.relu"\n"relu" = "r1.relu"\n' + SKIP_EXPECT
    assert _check(skip, "wrong", tmp_path, text) == (2, None)
    assert "not valid TOML" in capsys.readouterr().err


def test_one_tensor_under_two_names_is_proved_under_each(skip, tmp_path):
    """The output by its node (``add``) and by its port (``out``): each is proved by the stage
    before the one given it; the swapped peers fail where ``add`` is proved."""
    text = SKIP_BASE + _stages(("add", "r2.out"), ("out", "r2.out")) + '[outputs]\ncheck = ["out"]\n'
    code, rep = _check(skip, "wrong", tmp_path, text)
    assert code == 1 and rep["stages"][0]["status"] == "fails", _statuses(rep)
    assert _check(skip, "correct", tmp_path, text)[0] == 0


def test_a_name_in_stages_and_in_the_users_check_list_is_checked_not_dropped(skip, tmp_path):
    """The user's [outputs] check naming a boundary: the last stage checks it (given), and the
    stage before it proves it; with the swapped peers and only inner tensors checked, the program's
    h1 and h2 are right, so it refines -- as it does checked whole under the same spec."""
    users = '[outputs]\ncheck = ["relu", "relu_1"]\n'
    whole = SKIP_BASE + users + '[expect]\n"relu" = "r0.relu"\n"relu_1" = "r1.relu"\n'
    staged = SKIP_BASE + users + _stages(("relu", "r0.relu"), ("relu_1", "r1.relu"))
    assert _check(skip, "wrong", tmp_path, whole, "whole.toml")[0] == 0
    code, rep = _check(skip, "wrong", tmp_path, staged)
    assert code == 0 and rep["stages"][2]["report"]["outputs"].keys() >= {"relu", "relu_1"}


# -- false boundaries: facts a stage assumes are facts a stage proves -------------------------------

@pytest.mark.parametrize("relation", ["replicate", "partial", "shard(0)", "r1.relu"])
def test_a_false_boundary_relation_fails_where_it_is_discharged(skip, tmp_path, relation):
    """h1 related as every rank's relu, their sum, their concat, or rank 1's relu (h2): none
    holds; the stage proving it fails, even for the correct program (a boundary is a fact to
    prove, not a hint)."""
    for which in ("correct", "wrong"):
        code, rep = _check(skip, which, tmp_path, SKIP_BASE + _stages(("relu", relation)) + SKIP_EXPECT)
        assert code in (1, 2), (which, relation, code)
        if code == 1:
            assert rep["stages"][0]["status"] == "fails"


def test_a_boundary_through_the_copy_another_rank_received(skip, tmp_path):
    """h1 related as rank 2's copy of it (its receive from rank 0: the second one in the correct
    program, the first in the swapped one): true, so stage 0 refines, and the verdict is the whole
    check's; related as rank 2's other receive (h2): stage 0 fails."""
    for which, h1, h2 in (("correct", "wait_tensor_3", "wait_tensor_1"), ("wrong", "wait_tensor_1", "wait_tensor_3")):
        code, rep = _check(skip, which, tmp_path, SKIP_BASE + _stages(("relu", f"r2.{h1}")) + SKIP_EXPECT)
        assert _statuses(rep) == ["refines", "refines" if which == "correct" else "fails"], which
        assert code == (0 if which == "correct" else 1)
        code, rep = _check(skip, which, tmp_path, SKIP_BASE + _stages(("relu", f"r2.{h2}")) + SKIP_EXPECT)
        assert code == 1 and rep["stages"][0]["status"] == "fails", which


def test_the_buggy_ranks_view_of_a_boundary_is_not_accepted(skip, tmp_path):
    """Rank 2 of the swapped program takes the tensor from rank 0 (h1) as h2: a boundary saying h2
    IS what rank 2 received first would make the last stage go through; the stage that proves it
    fails (G_s h2 is not h1)."""
    text = SKIP_BASE + _stages(("relu", "r0.relu"), ("relu_1", "r2.wait_tensor_1")) + SKIP_EXPECT
    code, rep = _check(skip, "wrong", tmp_path, text)
    assert code == 1 and rep["stages"][1]["status"] == "fails", _statuses(rep)


# -- joint programs: a gradient flows back through an earlier stage ---------------------------------

def test_forward_boundaries_do_not_hide_a_wrong_gradient(joint, tmp_path):
    """Boundaries at h1 and h2 (forward): rank 0's grad:fc1, missing the skip's share, fails in the
    last stage, at its output."""
    text = JOINT_BASE + _stages(("relu", "r0.relu"), ("relu_1", "r1.relu")) + JOINT_EXPECT
    code, rep = _check(joint, "wrong", tmp_path, text)
    assert code == 1 and _statuses(rep) == ["refines", "refines", "fails"]
    assert rep["stages"][2]["report"]["outputs"]["grad:fc1"]["verdict"] == "fails"
    assert _check(joint, "correct", tmp_path, text)[0] == 0


@pytest.mark.parametrize("relation", ["r0.wait_tensor_4", "r0.wait_tensor_5"])
def test_a_gradient_boundary_stating_the_buggy_ranks_gradient_fails(joint, tmp_path, relation):
    """G_s add_1 (h1's gradient: the skip's plus fc2's path) as a boundary related to one of the
    two gradients rank 0 receives (the one it keeps, or the one it drops): neither is h1's
    gradient; its stage fails."""
    text = JOINT_BASE + _stages(("relu", "r0.relu"), ("add_1", relation)) + JOINT_EXPECT
    code, rep = _check(joint, "wrong", tmp_path, text)
    assert code == 1 and rep["stages"][1]["status"] == "fails", _statuses(rep)


def test_a_gradient_output_as_a_boundary_is_proved_before_it_is_given(joint, tmp_path):
    text = JOINT_BASE + _stages(("grad:fc1", "r0.grad:fc1")) + JOINT_EXPECT.replace('"grad:fc1" = "r0.grad:fc1"\n', "")
    code, rep = _check(joint, "wrong", tmp_path, text)
    assert code == 1 and rep["stages"][0]["status"] == "fails"
    assert _check(joint, "correct", tmp_path, text)[0] == 0


# -- random draws: a boundary after a dropout -----------------------------------------------------

def test_a_boundary_after_a_dropout_is_proved_with_its_draws_coupled(tmp_path_factory, tmp_path):
    """_sp_dropout.py (program corpus): the ranks' dropout with the attention rate where the hidden
    one is configured.  The dropout's output as a boundary (shard(0), as the ranks hold it):
    stage 0, which must prove it, fails on the draws; the last stage, given it, refines; the
    verdict fails as checked whole.  The correct program refines."""
    graphs = _twins(tmp_path_factory, "dropout", f"{PROGRAMS}/_sp_dropout.py:", "sp_dropout_correct",
                    "sp_dropout_wrong_p", 2)
    base, expect = (PROGRAMS / "sp_dropout.toml").read_text().split("[expect]")
    text = base + _stages(("getitem", "shard(0)")) + "[expect]" + expect
    code, rep = _check(graphs, "wrong", tmp_path, text)
    assert code == 1 and _statuses(rep) == ["fails", "refines"]
    assert _check(graphs, "correct", tmp_path, text)[0] == 0


# -- state: a boundary on a parameter the programs write --------------------------------------------

@pytest.mark.parametrize("relation", ["replicate", "r0.param:weight"])
def test_a_boundary_on_written_state_does_not_weaken_the_state_check(state, tmp_path, relation):
    """The weight (inferred replicated) as a boundary, related as replicate or as rank 0's copy
    alone: rank 1's wrong write still fails.  (Rank 0's copy alone loses the fact that rank 1 holds
    the same weight, so the correct twin does not go through either: a cost, not a hole.)"""
    text = STATE_BASE.replace("[outputs]", _stages(("arg0_1", relation)) + "[outputs]")
    code, rep = _check(state, "wrong", tmp_path, text)
    assert code == 1 and rep["stages"][-1]["status"] == "fails"
    assert _check(state, "correct", tmp_path, text)[0] == (0 if relation == "replicate" else 1)


def test_a_boundary_on_the_state_after_the_step_is_proved_with_the_state_check(state, tmp_path):
    text = STATE_BASE.replace("[outputs]", _stages(("mutated:param:weight", "r0.mutated:param:weight")) + "[outputs]")
    code, rep = _check(state, "wrong", tmp_path, text)
    assert code == 1 and rep["stages"][0]["status"] == "fails"


# -- a stack of layers cut into stages (layer memoization) ----------------------------------------

STACK_BASE = (SOUND / "c8_stack_correct.toml").read_text().split("[outputs]")[0]
STACK_END = '[outputs]\ncheck = ["out"]\n[expect]\nout = "replicate"\n'


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    return _twins(tmp_path_factory, "stack", f"{SOUND}/c8_stack_", "correct.py", "noreduce_wrong.py", 2)


def _stack_check(stack, which, tmp_path, boundaries, memo):
    spec = tmp_path / "stack.toml"
    spec.write_text(STACK_BASE + _stages(*((b, "replicate") for b in boundaries)) + STACK_END)
    out = tmp_path / "stack.json"
    out.unlink(missing_ok=True)
    code = main(["check", stack["seq"], stack[which], "--spec", str(spec), "--no-numeric", "--workers", "1",
                 "--json", str(out)] + ([] if memo else ["--no-memo"]))
    return code, json.loads(out.read_text())


@pytest.mark.parametrize("boundaries", [("add_1", "add_4"), ("add_4",), ("add_5",)])
def test_a_stack_cut_around_its_wrong_block_fails_in_the_stage_holding_it(stack, tmp_path, boundaries):
    """c8's 8 Megatron MLP blocks, block 5 without its all-reduce: boundaries at block outputs
    (replicated after the all-reduce) before it, or at its own output; the stage holding block 5
    fails, with or without layer memoization, and the correct stack refines."""
    holding = sum(1 for b in boundaries if int(b.split("_")[1]) < 5)     # the stage that relates block 5
    for memo in (False, True):
        code, rep = _stack_check(stack, "wrong", tmp_path, boundaries, memo)
        assert code != 0, (boundaries, memo)
        assert code == 1 and rep["stages"][holding]["status"] == "fails", (memo, _statuses(rep))
    for memo in (False, True):
        assert _stack_check(stack, "correct", tmp_path, boundaries, memo)[0] == 0, memo


def test_a_correct_stack_refines_by_stages_with_layer_memoization(stack, tmp_path):
    """Layer memoization defines only the blocks' operators the checked outputs need and no spec
    entry gives: it once defined every block, also those a boundary cuts off, and refused the
    parameters nobody related (exit 2, 'reads param:layers.4.w1 as a tensor operand')."""
    assert _stack_check(stack, "correct", tmp_path, ("add_4",), memo=True)[0] == 0


@pytest.mark.parametrize("entry", ['[cut]\n"add_3" = "replicate"\n', '[outputs]\ncheck = ["add_3"]\n'])
def test_a_memoized_stack_cut_by_the_spec_is_checked_where_it_is_needed(stack, tmp_path, entry):
    """Without [stages]: a [cut] inside the stack, or an inner tensor as the only checked output;
    the correct stack refines memoized, the wrong one fails (block 5 is after add_3: with the
    inner output only, nothing checked reads it)."""
    spec = tmp_path / "cut.toml"
    spec.write_text(STACK_BASE + entry + ("" if "outputs" in entry else STACK_END))
    assert main(["check", stack["seq"], stack["correct"], "--spec", str(spec), "--no-numeric"]) == 0
    assert main(["check", stack["seq"], stack["wrong"], "--spec", str(spec), "--no-numeric"]) == \
        (0 if "outputs" in entry else 1)
