"""The adversarial soundness corpus (tests/corpus/soundness): every label confirmed on real gloo, and
`entangle check` must give each program its verdict (correct -> exit 0, wrong -> exit 1, or 2 where
the corpus entry says refusing is acceptable).

The check tests of wrong programs the checker accepts today FAIL on purpose: they are the
soundness bugs being fixed.  Do not xfail them.
"""
from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import pytest

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"
if str(CORPUS_DIR) not in sys.path:
    sys.path.insert(0, str(CORPUS_DIR))

from soundness.corpus import CORPUS  # noqa: E402


@pytest.fixture(scope="module")
def gloo_report():
    from soundness import run_gloo
    return run_gloo.run(CORPUS, verbose=False)


@pytest.mark.gloo   # every label re-run on real gloo ranks: opt-in (pytest -m gloo)
def test_corpus_labels_confirmed_on_gloo(gloo_report):
    assert set(gloo_report) == {e.name for e in CORPUS}
    wrong = {n: r for n, r in gloo_report.items() if r["gloo"] != r["label"]}
    assert not wrong, wrong


def test_corpus_has_wrong_and_correct_programs_in_every_class():
    for cls in range(1, 9):
        labels = [e.label for e in CORPUS if e.cls == cls]
        assert labels.count("wrong") >= 2 and labels.count("correct") >= 2, (cls, labels)


@pytest.mark.parametrize("entry", CORPUS, ids=[e.name for e in CORPUS])
def test_checker_verdict(entry, tmp_path):
    from entangle_py.ir import graph as G
    from entangle_py.frontend.capture import capture
    from entangle_py.cli import main
    joint = entry.mode == "joint"
    seq, dist = tmp_path / "seq.pt", tmp_path / "dist.pt"
    G.save(capture(entry.script, 1, joint=joint), seq)
    G.save(capture(entry.script, entry.world_size, joint=joint), dist)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["check", str(seq), str(dist), "--spec", entry.spec])
    assert rc in entry.exits, (f"{entry.name} is {entry.label} (confirmed on gloo) but `entangle check` "
                               f"exits {rc}, expected {entry.exits}:\n{out.getvalue()}{err.getvalue()}")
