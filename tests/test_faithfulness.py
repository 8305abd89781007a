"""Capture faithfulness: the committed example graphs compute what their programs compute.

For every ``graphs/<example>/{seq.pt,dist.pt,spec.toml}``: random sequential inputs (float64, token
ids in range), the sequential graph run with torch, the inputs distributed to the ranks per the
spec's input relation, the distributed graph run with simulated collectives, and every checked
output rebuilt from the ranks through its expected relation (replicate = rank 0 when the spec
expects nothing).  Correct examples must reproduce the sequential outputs (and gradients, for joint
graphs); the buggy ones (``*missing*``, ``*wrong*``, ``*bug*``) must not.

``ENTANGLE_GRAPHS_DIR`` points the test at another graphs directory.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import torch

from entangle_py.ir import graph as G
from entangle_py.oracle import interp
from entangle_py.oracle import placement
from entangle_py.oracle.numeric_runs import choose_sizes, int_ranges
from entangle_py.check import spec as S

ROOT = Path(__file__).resolve().parent.parent
GRAPHS = Path(os.environ.get("ENTANGLE_GRAPHS_DIR", ROOT / "graphs"))
REQUIRED = {"mlp_tp2", "mlp_tp2_missing_allreduce"}
BUGGY = re.compile(r"missing|wrong|bug")

F64 = torch.float64
RTOL = ATOL = 1e-9        # float64 throughout: a faithful capture agrees to rounding
BIG = 1e-3                # a buggy example must be off by at least this (relative)


def _examples() -> list[str]:
    if not GRAPHS.is_dir():
        return []
    return sorted(d.name for d in GRAPHS.iterdir()
                  if d.is_dir() and all((d / f).is_file() for f in ("seq.pt", "dist.pt", "spec.toml")))


EXAMPLES = _examples()


def test_examples_exist():
    assert EXAMPLES, f"no example graphs under {GRAPHS}"
    missing = REQUIRED - set(EXAMPLES)
    assert not missing, f"required examples missing under {GRAPHS}: {sorted(missing)}"
    assert any(BUGGY.search(e) for e in EXAMPLES) and any(not BUGGY.search(e) for e in EXAMPLES)


# ----------------------------------------------------------------------------- helpers

# integer ids within their tables, small symbol values: the re-check's own choices
_int_ranges, _sizes = int_ranges, choose_sizes


def _rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    if a.shape != b.shape:
        return float("inf")
    if a.numel() == 0:
        return 0.0
    return float((a.double() - b.double()).abs().max() / max(1.0, float(b.double().abs().max())))


def _run_example(name: str, seed: int = 0):
    d = GRAPHS / name
    seq, dist = G.load(d / "seq.pt"), G.load(d / "dist.pt")
    spec = S.load_spec(d / "spec.toml")
    assert seq.world_size == 1, f"{name}: seq.pt holds {seq.world_size} ranks"
    W = dist.world_size
    g0 = seq.rank(0)
    gen = torch.Generator().manual_seed(seed)
    ranges = _int_ranges(g0)
    if any(n.target == "aten.embedding.default" for n in g0.nodes):
        assert ranges and all(hi > 2 for _, hi in ranges.values()), \
            f"{name}: could not find the vocabulary size for the token ids ({ranges})"
    seq_in = placement.random_inputs(g0, gen, sizes=_sizes(g0, W), int_ranges=ranges, float_dtype=F64)
    seq_out = interp.output_values(seq, interp.run_bundle(seq, [seq_in], float_dtype=F64))[0]
    unknown = set(spec.inputs) - {p.name for p in g0.inputs}
    assert not unknown, f"{name}: spec names inputs the sequential graph lacks: {sorted(unknown)}"
    dist_in = placement.distribute_inputs(seq_in, spec, dist, gen, float_dtype=F64)
    dist_vals = interp.named_values(dist, interp.run_bundle(dist, dist_in, float_dtype=F64))
    checked = spec.check if spec.check is not None else [p.name for p in g0.outputs]
    errors = {}
    for out in checked:
        assert out in seq_out, f"{name}: checked output {out!r} is not an output of seq.pt"
        for r in range(W):
            assert out in dist_vals[r], f"{name}: rank {r} of dist.pt has no output {out!r}"
        rel = spec.expect.get(out)
        terms = S.relation_terms(rel, out, W, spec.mesh) if rel is not None else [S.Leaf(0, out)]
        errors[out] = max(_rel_err(placement.eval_term(t, dist_vals), seq_out[out]) for t in terms)
    return errors


# ----------------------------------------------------------------------------- the test

@pytest.mark.parametrize("example", EXAMPLES)
def test_capture_is_faithful(example):
    errors = _run_example(example)
    assert errors, f"{example}: no outputs checked"
    report = ", ".join(f"{k}: {v:.2e}" for k, v in errors.items())
    if BUGGY.search(example):
        assert max(errors.values()) > BIG, f"{example} is a buggy example but reproduces the spec ({report})"
    else:
        bad = {k: v for k, v in errors.items() if not v <= max(RTOL, ATOL)}
        assert not bad, f"{example}: distributed outputs differ from the sequential ones ({report})"


@pytest.mark.parametrize("example", [e for e in EXAMPLES if not BUGGY.search(e)][:3])
def test_faithful_for_another_seed(example):
    errors = _run_example(example, seed=7)
    assert max(errors.values()) <= RTOL, errors
