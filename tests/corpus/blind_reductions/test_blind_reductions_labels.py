"""The blind reductions corpus: every label is what real gloo ranks compute (opt-in: ``pytest -m
gloo``; 940 s wall for the 30 runs on the shared 2-core machine under load), and every buggy twin is its correct program with ONE line
replaced, marked ``# BUG`` (default tier).  The checker's verdicts are not asserted here: they are
the first-run table in docs/blind-corpus.md."""
from __future__ import annotations

import difflib
import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "blind"))

from blind_gloo import assert_label_confirmed  # noqa: E402
from manifest import load_entries  # noqa: E402  (tests/corpus/blind/manifest.py)

ENTRIES = load_entries(HERE)
CASES = [(e, m) for e in ENTRIES for m in e["modes"]]
PAIRS = sorted({e["pair"] for e in ENTRIES})


def _derive_module():
    spec = importlib.util.spec_from_file_location("blind_reductions_derive", HERE / "derive_buggy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("pair", PAIRS)
def test_buggy_twin_is_one_marked_line_away(pair):
    correct = (HERE / f"{pair}_correct.py").read_text().splitlines()
    buggy = (HERE / f"{pair}_buggy.py").read_text().splitlines()
    changed = [d for d in difflib.ndiff(correct, buggy) if d[:2] in ("- ", "+ ")]
    assert len(changed) == 2 and "# BUG" in changed[1] and "# BUG" not in "\n".join(correct), changed
    old, new = _derive_module().BUGS[pair]
    assert changed[0][2:].strip() == old and changed[1][2:].strip() == new   # derive_buggy.py wrote it


def test_entries_carry_their_corpus_and_bug_line():
    assert {e["dir"] for e in ENTRIES} == {str(HERE)}
    assert len(ENTRIES) == 2 * len(PAIRS)
    for e in ENTRIES:
        assert (HERE / e["script"]).exists() and all((HERE / s).exists() for s in e["spec"].values())
        if e["label"] == "buggy":
            lines = (HERE / e["script"]).read_text().splitlines()
            assert "# BUG" in lines[e["bug_line"] - 1]


@pytest.mark.gloo
@pytest.mark.parametrize("entry,mode", CASES, ids=[f"{e['name']}-{m}" for e, m in CASES])
def test_reduction_label_confirmed_on_gloo(entry, mode):
    assert_label_confirmed(entry, mode)
