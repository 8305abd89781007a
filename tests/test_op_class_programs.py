"""Programs whose ops lower by class (ir/op_classes.py), end to end: capture, check, and the labels
on real gloo ranks.  tests/corpus/opclass/<name>_{correct,buggy}.py share the spec <name>.toml.

tp_clamp_pow_norm: a tensor-parallel MLP with clamp (two scalars), pow (Tensor_Scalar and
Scalar), linalg_vector_norm over a dim with keepdim and logsumexp.  Before op classes the first
clamp of a sharded tensor was opaque and the norm and log-sum-exp had no semantics (exit 2).
The buggy twin clamps each rank's partial sum before the all-reduce: a clamp does not commute with
a sum, and the checker must point at that clamp.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "tests" / "corpus" / "opclass"
sys.path.insert(0, str(ROOT / "tests" / "corpus" / "blind"))

from blind_gloo import assert_label_confirmed  # noqa: E402

PAIRS = ["tp_clamp_pow_norm"]
# the ops each correct program must relate (each lowered by its class, none opaque)
BY_CLASS = {"tp_clamp_pow_norm": {"aten.clamp.default", "aten.pow.Tensor_Scalar", "aten.pow.Scalar",
                                  "aten.linalg_vector_norm.default", "aten.logsumexp.default"}}
CASES = [(name, label) for name in PAIRS for label in ("correct", "buggy")]


def _entangle(*args, cwd):
    return subprocess.run([sys.executable, "-m", "entangle_py", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=900)


@pytest.mark.parametrize("name,label", CASES, ids=[f"{n}-{l}" for n, l in CASES])
def test_checker_verdict(name, label, tmp_path):
    script, spec = HERE / f"{name}_{label}.py", HERE / f"{name}.toml"
    for args in ((), ("--world-size", "2")):
        out = tmp_path / ("dist.pt" if args else "seq.pt")
        p = _entangle("capture", str(script), *args, "-o", str(out), cwd=tmp_path)
        assert p.returncode == 0, p.stderr[-2000:]
    p = _entangle("check", "seq.pt", "dist.pt", "--spec", str(spec), "--json", "r.json", cwd=tmp_path)
    assert p.returncode == (0 if label == "correct" else 1), p.stdout[-3000:] + p.stderr[-2000:]
    if label == "buggy":
        bug = next(i for i, line in enumerate(script.read_text().splitlines(), 1) if "# BUG" in line)
        assert f"{script.name}:{bug}" in p.stdout, p.stdout[-3000:]
        assert "numeric witness: confirmed" in p.stdout, p.stdout[-3000:]
    else:
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["status"] == "refines"
        related = {o["target"] for o in report["operators"] if o["status"] == "related"}
        assert BY_CLASS[name] <= related, BY_CLASS[name] - related


@pytest.mark.gloo   # every label re-run on real gloo ranks: opt-in (pytest -m gloo)
@pytest.mark.parametrize("name,label", CASES, ids=[f"{n}-{l}" for n, l in CASES])
def test_label_confirmed_on_gloo(name, label):
    entry = {"script": str(HERE / f"{name}_{label}.py"), "spec": {"forward": str(HERE / f"{name}.toml")},
             "world_size": 2, "label": label}
    assert_label_confirmed(entry, "forward")
