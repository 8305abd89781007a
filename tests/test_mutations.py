"""Mutation harness, fast subset (the full run: ``python benchmarks/mutation_harness.py``).

Mutants of mlp_tp2 and of one soundness-corpus program are labelled with the interpreter and
checked, each in a forked, memory-capped child: no non-equivalent mutant may refine, a refined
mutant's own certificate must hold numerically, and every check must end with a verdict (no
out-of-memory, crash or overrun).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "tests" / "corpus") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests" / "corpus"))

from entangle_py.ir import graph as G  # noqa: E402
from entangle_py.oracle import interp  # noqa: E402
from tooling import isolated_check  # noqa: E402
from tooling import mutant_labels as ML  # noqa: E402
from tooling import mutate as M  # noqa: E402
from entangle_py.check import spec as S  # noqa: E402
from entangle_py.config import Limits  # noqa: E402

LIMITS = Limits(seconds=20, nodes=200_000)


def _mlp():
    d = ROOT / "graphs" / "mlp_tp2"
    return G.load(d / "seq.pt"), G.load(d / "dist.pt"), S.load_spec(d / "spec.toml")


def _corpus(name):
    from soundness.corpus import BY_NAME

    from entangle_py.frontend.capture import capture
    e = BY_NAME[name]
    return capture(e.script, 1), capture(e.script, e.world_size), S.load_spec(e.spec)


CASES = {
    "mlp_tp2": (_mlp, ("drop_collective", "dup_collective", "ar_to_ag", "reduce_op", "group_split",
                       "swap_ranks", "scalar", "dropout")),
    "c4_colpar_gather_feature_correct": (lambda: _corpus("c4_colpar_gather_feature_correct"),
                                         ("ag_to_ar", "group_reversed", "swap_ranks", "swap_inputs", "scalar", "change_dim", "dropout")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_non_equivalent_mutant_refines(case):
    import torch
    build, kinds = CASES[case]
    seq, dist, spec = build()
    orig = isolated_check.check_isolated(seq, dist, spec, LIMITS, timeout=120)
    assert orig["exit"] == 0, orig
    dws = ML.draws(seq, dist, spec)
    muts = M.mutants(dist, kinds=kinds, per_kind=1)
    assert len(muts) >= 4
    labels = []
    for mu in muts:
        lab, why = ML.label(seq, dist, spec, mu.bundle, dws, orig["certificates"])
        labels.append(lab)
        if lab == ML.INVALID:
            continue
        out = isolated_check.check_isolated(seq, mu.bundle, spec, LIMITS, timeout=120)
        assert out["status"] not in ("oom", "crash", "timeout"), (mu.desc, out)
        assert out["exit"] in (0, 1, 2, 3), (mu.desc, out)
        if out["exit"] == 0:
            assert lab == ML.EQUIVALENT, f"non-equivalent mutant refines: {mu.desc} ({why})"
            for d in dws:
                env = interp.run_bundle(mu.bundle, [dict(x) for x in d.dist_inputs], float_dtype=torch.float64)
                ok, bad = ML.relations_hold(seq, mu.bundle, spec, d.seq_values,
                                           interp.named_values(mu.bundle, env), out["certificates"], None)
                assert ok, f"refined {mu.desc} with a certificate that does not hold: {bad}"
    assert labels.count(ML.NON_EQUIVALENT) >= 3, labels


def test_mutants_are_copies_and_round_trip():
    seq, dist, spec = _mlp()
    before = G.encode_bundle(dist)
    muts = M.mutants(dist)
    assert G.encode_bundle(dist) == before
    kinds = {m.kind for m in muts}
    assert {"drop_collective", "dup_collective", "reduce_op", "group_reversed", "scalar"} <= kinds
    for m in muts:
        assert G.encode_bundle(m.bundle) != before, m.desc
        G.decode_bundle(G.encode_bundle(m.bundle))


def test_labels_of_known_mutants():
    seq, dist, spec = _mlp()
    orig = isolated_check.check_isolated(seq, dist, spec, LIMITS, timeout=120)
    dws = ML.draws(seq, dist, spec)
    by = {m.desc: m for m in M.mutants(dist)}
    lab = {d: ML.label(seq, dist, spec, m.bundle, dws, orig["certificates"])[0] for d, m in by.items()}
    assert lab["drop all_reduce 'all_reduce' on every rank"] == ML.NON_EQUIVALENT
    assert lab["all_reduce 'all_reduce' on its group in reversed rank order"] == ML.EQUIVALENT
    assert lab["all_reduce 'all_reduce' -> all_gather then the sum of the chunks"] == ML.EQUIVALENT
    assert lab["rank 0 'view' multiplied by 1.0"] == ML.EQUIVALENT
