"""CI guard against a check whose cost grows with the number of ranks (issue 24).

    python benchmarks/ci_guard.py [--record] [-- ARGS...]

Checks the shared Megatron GPT dumps at 1 and 8 layers, TP 2 and TP 8 (fresh processes, as
benchmarks/bench_grid.py runs them; ARGS after ``--`` go to `entangle check`) and fails when

* a cell does not refine;
* at either depth, TP 8 costs more than RATIO x TP 2 in CPU seconds measured in the same run (a
  ratio, so the machine's speed cancels); at 8 layers the stack is memoized (one block proved in
  an e-graph of its own), which one layer does not exercise;
* a cell's peak e-graph size, lemma steps or lemma matches exceed the bounds recorded from the
  fixed code (benchmarks/ci_bounds.json) by more than TOLERANCE: counts alone would not have
  caught the regression this guards against (the same matches, a search that grew), the ratio
  would.

Its message names the lemma families that grew: by search time from TP 2 to TP 8, and by matches
over the recorded bounds.  ``--record`` writes the bounds from this run.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_grid import GPT, run_check  # noqa: E402

BOUNDS = Path(__file__).resolve().parent / "ci_bounds.json"
CELLS = ((1, 2), (1, 8), (8, 2), (8, 8))
RATIO = 3.0          # time(TP 8) / time(TP 2) at most
TOLERANCE = 1.25     # peak e-nodes and matches may exceed the recorded bounds by 25 %
TIMEOUT = 900.0      # seconds per check: a regression of the kind guarded must still end


def grown(a: dict, b: dict, floor: float) -> list[tuple[str, float, float]]:
    """(family, before, after) where ``b`` exceeds ``a`` by more than TOLERANCE (and ``floor``),
    largest growth first."""
    out = [(k, a.get(k, 0), v) for k, v in b.items() if v > floor and v > TOLERANCE * a.get(k, 0)]
    return sorted(out, key=lambda t: -(t[2] - t[1]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", action="store_true", help=f"write the bounds from this run to {BOUNDS.name}")
    ap.add_argument("extra", nargs="*", help="arguments passed to `entangle check` (after --)")
    args = ap.parse_args()
    if not GPT.exists():
        print(f"ci_guard: the shared GPT dumps are not at {GPT}", file=sys.stderr)
        return 1
    runs = {cell: run_check(*cell, args.extra, timeout=TIMEOUT) for cell in CELLS}
    for (layers, tp), r in runs.items():
        w = r["work"]
        print(f"L{layers} TP{tp}: {r['status']}, {r['cpu']:.2f} CPU-s, {r['rss'] / 2**20:.0f} MB, "
              f"peak {w.get('peak_enodes')} e-nodes, {w.get('lemma_steps')} lemma steps, {w.get('matches')} matches")
    problems = []
    for (layers, tp), r in runs.items():
        if r["status"] != "refines":
            problems.append(f"L{layers} TP{tp} does not refine: {r['status']} {' '.join(r['stderr'])}")
    for layers in sorted({l for l, _ in CELLS}):
        small, big = runs[(layers, 2)], runs[(layers, 8)]
        ratio = big["cpu"] / max(small["cpu"], 1e-9)
        print(f"L{layers}: time(TP 8) / time(TP 2) = {ratio:.2f} (at most {RATIO:g})")
        if ratio > RATIO:
            slower = grown(small["work"].get("seconds_by_family", {}), big["work"].get("seconds_by_family", {}), 0.05)
            problems.append(f"L{layers}: TP 8 costs {ratio:.1f} x TP 2 in CPU time (at most {RATIO:g}); search time grew in: " +
                            (", ".join(f"{k} {a:.2f} -> {b:.2f} s" for k, a, b in slower[:5]) or "no lemma family"))
    if args.record:
        BOUNDS.write_text(json.dumps({f"L{l} TP{p}": {k: r["work"].get(k) for k in ("peak_enodes", "lemma_steps",
                                                                                     "matches", "matches_by_family")}
                                      for (l, p), r in runs.items()}, indent=1, sort_keys=True) + "\n")
        print(f"recorded the bounds in {BOUNDS}")
    else:
        bounds = json.loads(BOUNDS.read_text())
        for (layers, tp), r in runs.items():
            want, w = bounds.get(f"L{layers} TP{tp}", {}), r["work"]
            for key in ("peak_enodes", "lemma_steps", "matches"):
                if want.get(key) and w.get(key, 0) > TOLERANCE * want[key]:
                    fams = grown(want.get("matches_by_family", {}), w.get("matches_by_family", {}), 100)
                    problems.append(f"L{layers} TP{tp}: {key} {w.get(key)} over the recorded {want[key]} "
                                    f"(+{TOLERANCE - 1:.0%} allowed); matches grew in: " +
                                    (", ".join(f"{k} {a} -> {b}" for k, a, b in fams[:5]) or "no lemma family"))
    for p in problems:
        print(f"ci_guard: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
