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
