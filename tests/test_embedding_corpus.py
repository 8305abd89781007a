"""Masked vocab-parallel lookups written as DTensor writes them (``local[mask] = 0``, lookup,
``out[mask] = 0.0``, all-reduce) over uneven blocks of the table, at 2 and 4 ranks
(tests/corpus/embedding), and as torchtitan writes it (ids clamped into the block, rows multiplied
by the owner mask): the correct program refines under the assumptions its spec states, each wrong twin (the mask off by one at the
block's end, the output rows not zeroed, the ids shifted by another block's start) fails at the
lookup; every label confirmed on gloo."""
from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "tests" / "corpus" / "embedding"
for p in (HERE, ROOT / "tests" / "corpus" / "programs", ROOT / "tests" / "corpus"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from embedding_corpus import CORPUS  # noqa: E402

pytestmark = pytest.mark.corpus


def _check(entry, tmp: Path):
    from entangle_py.cli import main
    from entangle_py.frontend.capture import capture
    from entangle_py.ir import graph
    paths = []
    for ws in (1, entry.world_size):
        p = tmp / f"{entry.name}.{ws}.pt"
        graph.save(capture(entry.script, ws), p)
        paths.append(str(p))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(["check", *paths, "--spec", entry.spec])
    return rc, out.getvalue()


@pytest.mark.parametrize("entry", CORPUS, ids=lambda e: e.id)
def test_masked_lookup_verdict(entry, tmp_path):
    rc, text = _check(entry, tmp_path)
    if entry.label == "correct":
        assert rc == 0, text
        assert "valid_indices" in text, "the assumption the proof rests on is printed with the verdict"
    else:
        assert rc == 1, text
        assert "embedding" in text, text


@pytest.mark.parametrize("form,assumption", [("masked", "valid_indices"), ("clamp_mul", "valid_indices"),
                                             ("clamp_mul", "finite_values")])
def test_masked_lookup_needs_its_assumptions(form, assumption, tmp_path):
    """Without either assumption the correct program does not refine: a negative id wraps in the
    whole table's W[ids] while every rank masks it; a foreign row holding inf, multiplied by the
    mask, is nan (inf * 0) in the sum over ranks."""
    entry = next(e for e in CORPUS if e.label == "correct" and e.name.startswith(form))
    spec = tmp_path / "fewer_assumptions.toml"
    spec.write_text(Path(entry.spec).read_text().replace(f"{assumption} = true", ""))
    rc, text = _check(type(entry)(entry.name, entry.script, str(spec), entry.label, entry.mode,
                                  entry.world_size, entry.bug), tmp_path)
    assert rc == 1, text


@pytest.mark.gloo   # every label re-run on real gloo ranks: opt-in (pytest -m gloo)
def test_labels_confirmed_on_gloo():
    from run_gloo import run
    res = run(CORPUS, verbose=False)
    for e in CORPUS:
        assert res[e.id]["gloo"] == e.label, (e.id, res[e.id])
        if e.label == "buggy":            # a wrong value, not a rank that raised
            assert "max |diff|" in res[e.id]["detail"], (e.id, res[e.id])
