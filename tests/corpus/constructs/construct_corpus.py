"""The generic constructs capture models for framework code (issue 26), each a small program
with no framework installed, as ``Entry``s of the program corpus (tests/corpus/programs/corpus.py):
labels confirmed on gloo by tests/corpus/programs/run_gloo.py, captured and checked by
tests/test_capture_framework_constructs.py."""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "tests" / "corpus" / "programs"))
from corpus import Entry, builders  # noqa: E402  (tests/corpus/programs/corpus.py)

TARGETS = builders(HERE)


def _e(script, spec="row_parallel.toml", mode="forward", bug=None, ws=2):
    target = TARGETS.get(script) or str(HERE / f"{script}.py")     # dtensor_output.py is a script of its own
    return Entry(script, target, str(HERE / spec), "buggy" if bug else "correct", mode, ws, bug)


CORPUS = [
    _e("async_waited"),
    _e("async_read_before_wait", bug=("_row_parallel.py", "read before wait")),
    _e("async_never_waited", bug=("_row_parallel.py", "never waited")),
    _e("gloo_group"),
    _e("gloo_group", ws=4),
    _e("gloo_group_pairs", bug=("_row_parallel.py", "a pair's group"), ws=4),
    _e("constant"),
    _e("constant_world_size", bug=("_row_parallel.py", "a world-size constant")),
    _e("dtensor_output", "dtensor_output.toml", "joint"),
]
BY_ID = {e.id: e for e in CORPUS}
