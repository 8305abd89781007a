"""Shared fixtures: the command line run as a user runs it, and the shipped example graphs."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GRAPHS = ROOT / "graphs"


def run_entangle(*args, env=None, cwd=ROOT) -> subprocess.CompletedProcess:
    """``entangle ARGS...`` in a fresh process (text output captured)."""
    return subprocess.run([sys.executable, "-m", "entangle_py", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env)


def shipped_example(name: str) -> tuple[str, str, str | None]:
    """(seq.pt, dist.pt, spec.toml or None) of ``graphs/<name>``."""
    d = GRAPHS / name
    if not (d / "seq.pt").exists():
        pytest.fail(f"example graphs missing: {d} (regenerate with examples/*.py)")
    spec = d / "spec.toml"
    return str(d / "seq.pt"), str(d / "dist.pt"), (str(spec) if spec.exists() else None)


@pytest.fixture
def entangle():
    """Run the CLI: ``entangle("check", seq, dist, "--spec", spec)`` -> CompletedProcess."""
    return run_entangle


@pytest.fixture
def example():
    """``example("mlp_tp2")`` -> (seq.pt, dist.pt, spec.toml or None) from graphs/."""
    return shipped_example


# Test tiers.  The default run (the README's command) keeps every unit test and a fixed sample of
# each corpus-sized file; `pytest -m corpus` runs the rest of them (and .ci/run runs both).  A test
# is in the sample when a hash of its id falls in 1/N: the sample does not change between runs or
# machines, and a new entry lands in one tier or the other by its name alone.
SAMPLE_ONE_IN = {
    "test_program_corpus.py": 100,
    "test_opinfo_conformance.py": 20,
    "test_lemmas.py": 12,
    "test_lemma_properties.py": 12,
    "test_lemma_goals.py": 12,
    "test_adversary.py": 20,
    "test_soundness_corpus.py": 10,
    "test_random_draws.py": 5,
    "test_stages_adversary.py": 5,      # each attack captures its programs: a sample by default
}
# Integration files that spawn gloo ranks or a process per mutant: the corpus tier, whole.
CORPUS_FILES = {"test_capture_isolation.py", "test_interp_gloo.py", "test_gloo_ranks.py", "test_mutations.py",
                "test_blind_mean.py"}


def pytest_collection_modifyitems(config, items):
    import zlib
    corpus = pytest.mark.corpus
    for item in items:
        n = SAMPLE_ONE_IN.get(item.path.name)
        if item.get_closest_marker("corpus"):
            continue
        if item.path.name in CORPUS_FILES or (n and zlib.crc32(item.nodeid.encode()) % n):
            item.add_marker(corpus)
