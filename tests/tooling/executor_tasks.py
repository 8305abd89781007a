"""Tasks and a manifest for the executor tests (tests/test_executor.py, tests/test_executor_ray.py).

The task functions live in a module (not a test file) so that a spawned pool worker and a Ray
worker import them by name, as they import a check's.  Killing is real: the worker sends itself
SIGKILL, as the OOM killer would."""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"

# quick shipped pairs (graphs/) and corpus programs captured here, correct and wrong
SHIPPED = ["mlp_tp2", "mlp_tp2_missing_allreduce", "attention_tp2", "vocab_embedding_tp2"]
SOUNDNESS = ["c1_scaled_allreduce_correct", "c1_scaled_allreduce_wrong", "c2_sum_last_correct", "c2_sum_last_wrong"]


def square(x):
    return x * x, os.getpid()


def die_once(marker: str):
    """Killed on its first attempt (the marker file does not exist yet), then returns."""
    if not os.path.exists(marker):
        Path(marker).write_text("killed once")
        os.kill(os.getpid(), signal.SIGKILL)
    return "survived"


def die_always():
    os.kill(os.getpid(), signal.SIGKILL)


def raise_error():
    raise ValueError("a task's own failure")


def corpus_manifest(directory: Path) -> Path:
    """A check-many manifest of the shipped pairs and of soundness corpus programs captured into
    ``directory`` at world sizes 1 and 2, with the exit code each must give."""
    from entangle_py.frontend.capture import capture
    from entangle_py.ir import graph as G
    if str(CORPUS) not in sys.path:
        sys.path.insert(0, str(CORPUS))
    from soundness.corpus import CORPUS as ENTRIES
    lines = []
    for name in SHIPPED:
        d = ROOT / "graphs" / name
        lines += ["[[check]]", f'name = "{name}"', f'seq = "{d / "seq.pt"}"', f'dist = "{d / "dist.pt"}"',
                  f'spec = "{d / "spec.toml"}"', ""]
    by_name = {e.name: e for e in ENTRIES}
    for name in SOUNDNESS:
        e = by_name[name]
        seq, dist = directory / f"{name}.seq.pt", directory / f"{name}.dist.pt"
        G.save(capture(e.script, 1, joint=e.mode == "joint"), seq)
        G.save(capture(e.script, e.world_size, joint=e.mode == "joint"), dist)
        lines += ["[[check]]", f'name = "{name}"', f'seq = "{seq}"', f'dist = "{dist}"', f'spec = "{e.spec}"', ""]
    path = directory / "manifest.toml"
    path.write_text("\n".join(lines))
    return path


EXPECTED = {"mlp_tp2": 0, "mlp_tp2_missing_allreduce": 1, "attention_tp2": 0, "vocab_embedding_tp2": 0,
            "c1_scaled_allreduce_correct": 0, "c1_scaled_allreduce_wrong": 1,
            "c2_sum_last_correct": 0, "c2_sum_last_wrong": 1}

TIMING_KEYS = {"seconds", "timings_s", "seconds_by_family"}


def without_timings(x):
    """A report with every wall-time field dropped: what must not depend on the executor."""
    if isinstance(x, dict):
        return {k: without_timings(v) for k, v in x.items() if k not in TIMING_KEYS}
    if isinstance(x, list):
        return [without_timings(v) for v in x]
    return x
