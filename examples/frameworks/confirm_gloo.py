"""Confirm the label of every framework entry (framework_corpus.py) on real gloo ranks: the recipe's
sequential program on the CPU in float64, every rank on a gloo process with its parameters
derived from the sequential ones through the spec (or a DTensor's own placements), outputs (and
gradients, joint) compared through the spec's [expect] (tests/corpus/programs/run_gloo.py does the
work).  ``python examples/frameworks/confirm_gloo.py [ID...]``; exit 1 on a label gloo contradicts."""
from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1] / "tests" / "corpus" / "programs"), str(HERE.parent)]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from framework_corpus import BY_ID, CORPUS  # noqa: E402
import run_gloo as programs_gloo  # noqa: E402   (tests/corpus/programs/run_gloo.py)


def main(ids) -> int:
    picked = [BY_ID[i] for i in ids] if ids else CORPUS
    report = programs_gloo.run(picked)
    return 0 if all(r["label"] == r["gloo"] for r in report.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
