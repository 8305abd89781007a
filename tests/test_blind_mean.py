"""The mean over ranks (issue 25, "a sum over ranks of per-rank means as a mean"), on programs
written blind for that class (tests/corpus/blind_mean/, tests/corpus/blind_patterns/; labels
confirmed on gloo, first-run tables in docs/blind-corpus.md): each correct program the fix made
refine refines through ``assert_refines``, the way a user's test suite calls the checker, and its
buggy twin (one line changed, ``# BUG``) does not.  The corpus tier (each captures twice)."""
from __future__ import annotations

from pathlib import Path

import pytest

from entangle_py.testing import assert_refines

CORPUS = Path(__file__).resolve().parent / "corpus"

# (corpus directory, pair, world size): pairs whose correct program refines since the mean over
# ranks is clean; every other blind pair is tabulated in docs/blind-corpus.md
PAIRS = [
    ("blind_mean", "megatron_avg_losses", 2),        # in-place all_reduce, / group.size()
    ("blind_mean", "titan_dist_mean", 2),            # funcol.all_reduce(x, "AVG"); DP token ids
    ("blind_patterns", "megatron_dp_loss_avg", 2),   # in-place all_reduce, / world_size
]


@pytest.mark.parametrize("corpus, pair, world", PAIRS, ids=[p[1] for p in PAIRS])
def test_correct_twin_refines(corpus, pair, world):
    d = CORPUS / corpus
    res = assert_refines(str(d / f"{pair}_correct.py"), world_size=world, spec=str(d / f"{pair}.toml"))
    assert res.status == "refines"


@pytest.mark.parametrize("corpus, pair, world", PAIRS, ids=[p[1] for p in PAIRS])
def test_buggy_twin_fails(corpus, pair, world):
    d = CORPUS / corpus
    with pytest.raises(AssertionError, match=r"\(exit 1\)"):
        assert_refines(str(d / f"{pair}_buggy.py"), world_size=world, spec=str(d / f"{pair}.toml"))
