"""The program corpus (tests/corpus/programs): small distributed programs users write, correct/buggy
twins over every parallelism, labels confirmed on real gloo (one spawn per world size: 2 and 4).

`entangle check` SHOULD say: correct -> exit 0, buggy -> exit 1.  Correct programs the checker
cannot prove today are strict xfails naming what stops them (issue 13); buggy programs stopped by
something other than a refutation (exit 2: an op without semantics / capture) are strict xfails
too.  A buggy program that refines (exit 0) is a soundness bug: never xfail it.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT / "tests" / "corpus" / "programs", ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from corpus import CORPUS  # noqa: E402

XFAIL = {
    # helper-adv2: correct twins the checker cannot prove yet (their buggy twins are refuted)
    # helper-adv4: correct twins the checker cannot prove yet (their buggy twins are refuted)
}
XFAIL = {k: v for k, v in XFAIL.items() if v}


def _params():
    out = []
    for e in CORPUS:
        marks = [pytest.mark.xfail(strict=True, reason=XFAIL[e.id])] if e.id in XFAIL else []
        out.append(pytest.param(e, id=e.id, marks=marks))
    return out


@pytest.fixture(scope="module")
def gloo_report():
    import run_gloo
    return run_gloo.run(CORPUS, verbose=False)


@pytest.mark.gloo   # every label re-run on real gloo ranks: opt-in (pytest -m gloo)
def test_corpus_labels_confirmed_on_gloo(gloo_report):
    assert set(gloo_report) == {e.id for e in CORPUS}
    wrong = {n: r for n, r in gloo_report.items() if r["gloo"] != r["label"]}
    assert not wrong, wrong


def test_corpus_shape():
    from corpus import bug_line
    from entangle_py.frontend.capture_target import load_script
    scripts = {e.script for e in CORPUS}
    assert len(scripts) >= 30
    for e in CORPUS:
        assert Path(e.file).is_file() and Path(e.spec).is_file(), e.id
        assert e.builder == e.name, e.id        # a program is the builder its family module names
    for file in sorted({e.file for e in CORPUS}):
        named = [e for e in CORPUS if e.file == file]
        for e in named[:1]:     # the target form imports the family module and finds the builder
            assert callable(load_script(e.script).build), e.id
        assert (e.label == "buggy") == (bug_line(e) is not None), e.id
    assert set(XFAIL) <= {e.id for e in CORPUS}


def test_every_correct_program_has_both_modes_or_a_reason():
    """Issue 13: a correct program refines forward AND joint.  One without a joint entry is in
    NO_JOINT with the reason it has no training step (a kernel without autograd, raw p2p); a
    NO_JOINT program has no joint entry, and is a correct program of the corpus.  (A program
    correct forward may be wrong joint -- its backward is -- and is then a buggy joint entry.)"""
    from corpus import NO_JOINT
    correct = {e.name for e in CORPUS if e.label == "correct"}
    modes: dict = {}
    for e in CORPUS:
        if e.name in correct:
            modes.setdefault(e.name, set()).add(e.mode)
    lacking = sorted(n for n, m in modes.items() if "joint" not in m and n not in NO_JOINT)
    assert not lacking, f"correct programs with no joint entry and no NO_JOINT reason: {lacking}"
    stale = sorted(n for n in NO_JOINT if n not in modes or "joint" in modes[n])
    assert not stale, f"NO_JOINT names programs that are not correct forward-only entries: {stale}"
    assert all("forward" in m for m in modes.values())


_CHECKED: dict = {}
_SEQ_CAPTURES: dict = {}


@pytest.fixture(scope="session")
def checks_dir(tmp_path_factory, worker_id):
    """A directory every xdist worker of this run shares (the parent of their base temps)."""
    root = tmp_path_factory.getbasetemp()
    d = (root if worker_id == "master" else root.parent) / "program_checks"
    d.mkdir(exist_ok=True)
    return d


def _check(entry, tmp_path, checks_dir):
    """``check_entry`` once per entry in the whole run: the soundness and location tests read
    the verdict test's result, whichever worker ran it (a worker that finds another one checking
    the entry waits for its result instead of checking it again).  An entry at another world
    size reuses its program's sequential capture (in the worker)."""
    import fcntl
    import hashlib
    import json

    from program_table import check_entry
    if entry.id not in _CHECKED:
        done = checks_dir / (hashlib.sha1(entry.id.encode()).hexdigest() + ".json")
        with open(done.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not done.exists():
                done.write_text(json.dumps(check_entry(entry, tmp_path, _SEQ_CAPTURES)))
        _CHECKED[entry.id] = json.loads(done.read_text())
    return _CHECKED[entry.id]


@pytest.mark.parametrize("entry", _params())
def test_checker_verdict(entry, tmp_path, checks_dir):
    r = _check(entry, tmp_path, checks_dir)
    if entry.label == "buggy":
        assert r["exit"] != 0, f"SOUNDNESS: {entry.id} is buggy (confirmed on gloo) but refines:\n{r['text']}"
    want = 0 if entry.label == "correct" else 1
    assert r["exit"] == want, (f"{entry.id} is {entry.label} (confirmed on gloo) but `entangle check` exits "
                               f"{r['exit']}, expected {want}:\n{r['text']}")


@pytest.mark.parametrize("entry", [e for e in CORPUS if e.label == "buggy"], ids=lambda e: e.id)
def test_no_buggy_program_refines(entry, tmp_path, checks_dir):
    """Soundness, for every buggy entry, xfailed ones included (a strict xfail would hide a buggy
    program stopped today at exit 2 or 3 that starts to refine)."""
    r = _check(entry, tmp_path, checks_dir)
    assert r["exit"] != 0, f"SOUNDNESS: {entry.id} is buggy (confirmed on gloo) but refines:\n{r['text']}"


# Buggy programs whose failure is reported far from the bug's line, and why.
FAR = {
    "adv_pp_wrong_rank[forward]": "the bug is the spec's (fc2 named as rank 0's parameter, which rank 1 never "
                                  "reads): the report names where rank 1 computes the output with its own fc2 "
                                  "(_adv_pp.py:43), not the spec line",
    "gqa_causal_x_grad_not_reduced[joint]": "the bug is a missing copy_to (no operator on its line, 38): the "
        "report names the q/k/v projections that read x and whose gradients are never summed (lines 46-47)",
    "sp_dropout_scale_grad_not_reduced[joint]": "the bug is a missing copy_to (no operator on its line, 28): the "
        "report names where the scale is read (line 34), whose gradient is never all-reduced",
    # helper-adv6: a DDP construction whose effect shows where the forward reads what it set up
    "adv6_dswap_after[joint]": "the bug is where fc's weight is replaced after DDP (line 159): its reducer "
        "stalls and averages no gradient; the report names the loss (line 177) whose gradient the ranks' own "
        "gradients do not average, and capture's note names the DDP it stalls (line 153)",
    **{f"fused_qkv_split_swapped[joint{at}]": "the bug is in a custom autograd Function's backward (the cat "
       "of the q/k/v gradients, line 55): the report names the view of that cat the weight's gradient reads "
       "(line 74) and the weight's gradient (line 73)" for at in ("", "@4")},
    "adv6_dbuf_bcast[forward]": "the bug is DDP's default broadcast_buffers (line 142): the report names where the "
        "forward adds the buffer (line 101), rank 0's rows on every rank",
    "adv6_dbuf_bcast[joint]": "the bug is DDP's default broadcast_buffers (line 142): the report names where the "
        "forward adds the buffer (line 101), rank 0's rows on every rank",
}
NEAR = 5     # lines


def _located():
    out = []
    for e in CORPUS:
        if e.label != "buggy" or e.id in XFAIL:
            continue
        marks = [pytest.mark.xfail(strict=True, reason=FAR[e.id])] if e.id in FAR else []
        out.append(pytest.param(e, id=e.id, marks=marks))
    return out


@pytest.mark.parametrize("entry", _located())
def test_buggy_failure_is_reported_at_the_bug(entry, tmp_path, checks_dir):
    """The failing operator, or the distributed program's culprit the report names, is within a
    few lines of the bug.  A failure at an output (its certificate names what the distributed
    program does not return, or breaks an expectation) has no operator: the witness names where
    each rank computes that output."""
    from program_table import distance_to_bug
    r = _check(entry, tmp_path, checks_dir)
    assert r["exit"] == 1
    d = distance_to_bug(entry, r["lines"])
    assert d is not None and d <= NEAR, (entry.id, r["lines"], d)


# One pipeline (issue 27): entangle_py.testing.assert_refines, given a corpus entry's build, says
# what `entangle check` says.  A plugin op (vLLM's fused norm), a joint entry, a refuted entry.
AGREE = ["vllm_mlp_correct[forward]", "vllm_mlp_swapped_halves[forward]", "tp_mlp2d_correct[joint]",
         "tp_mlp2d_missing_allreduce[forward]", "adv_vllm_rope_gptj[forward]", "adv_slice_head_correct[forward]"]


@pytest.mark.parametrize("entry", [e for e in CORPUS if e.id in AGREE], ids=lambda e: e.id)
def test_assert_refines_agrees_with_the_cli(entry, tmp_path, checks_dir):
    from entangle_py.testing import assert_refines
    assert len(AGREE) == len({e.id for e in CORPUS if e.id in AGREE})
    # the entry's capture target (``_family.py:name``): the ranks' processes import the builder
    # by it, instead of being forked from this one, which has run egglog and torch
    cli = _check(entry, tmp_path, checks_dir)
    try:
        res = assert_refines(entry.script, world_size=entry.world_size, spec=entry.spec,
                             joint=entry.mode == "joint")
        exit_code, text = res.exit_code, ""
    except AssertionError as err:
        text = str(err)
        exit_code = int(text.split("(exit ", 1)[1].split(")", 1)[0])
    assert exit_code == cli["exit"], f"assert_refines exits {exit_code}, the CLI {cli['exit']}:\n{text}\n--\n{cli['text']}"
    if exit_code == 1:     # the failure message carries the report, with the numeric witness
        assert "witness" in text, text
