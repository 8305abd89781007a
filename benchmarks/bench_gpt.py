"""`entangle check` on the Megatron-LM GPT pair (entangle-data/gpt: paral1_layer1 vs paral2_layer1,
TP=2 with sequence parallelism and vocab-parallel embedding / cross-entropy), end to end.

    python benchmarks/bench_gpt.py [--repeat 3]

Each step is a fresh process, as a user runs it.  End to end: `entangle check` given the dumps
directly (paral1_layer1/ and paral2_layer1/; imported in the same process), with
graphs/gpt_tp2/spec.toml.  The two-step way is timed too: `entangle import-fx` of each side, then
`entangle check` on the bundles.  The table gives the median over runs of wall time per step, and
the checker's own phases (from its JSON report): load (includes the import of the dumps), insert
(G_d and inputs into the e-graph), infer (the operator loop) and report.
Published: Entangle, 13.6 s for this pair on a 16-core EPYC 7302P.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GPT = ROOT.parent / "shared" / "external" / "entangle-data" / "gpt"
SPEC = ROOT / "graphs" / "gpt_tp2" / "spec.toml"


def _run(args) -> float:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "entangle_py", *args], capture_output=True, text=True, cwd=ROOT)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"entangle {' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return dt


def one_run(tmp: Path) -> dict:
    seq, dist, rep = tmp / "seq.pt", tmp / "dist.pt", tmp / "report.json"
    out = {"end to end: check on the dumps": _run(["check", str(GPT / "paral1_layer1"), str(GPT / "paral2_layer1"),
                                                   "--spec", str(SPEC), "--json", str(rep)])}
    report = json.loads(rep.read_text())
    assert report["status"] == "refines", report
    for k, v in report["timings_s"].items():
        out[f"  phase: {k}"] = v
    out["two steps: import-fx seq"] = _run(["import-fx", "-o", str(seq), str(GPT / "paral1_layer1" / "fw.g0.r0.py")])
    out["two steps: import-fx dist"] = _run(["import-fx", "-o", str(dist)] +
                                            [str(GPT / "paral2_layer1" / f"fw.g0.r{r}.py") for r in (0, 1)])
    out["two steps: check bundles"] = _run(["check", str(seq), str(dist), "--spec", str(SPEC)])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not GPT.exists():
        raise SystemExit(f"entangle-data not found at {GPT}")
    runs = []
    with tempfile.TemporaryDirectory() as d:
        for _ in range(args.repeat):
            runs.append(one_run(Path(d)))
    print(f"Megatron GPT TP2+SP, one layer (median of {args.repeat} runs, seconds)")
    print(f"{'step':<34} {'s':>8}")
    for k in runs[0]:
        print(f"{k:<34} {statistics.median(r[k] for r in runs):>8.3f}")
    print(f"{'published (Entangle), inference':<34} {13.6:>8.3f}   (16-core EPYC 7302P)")


if __name__ == "__main__":
    main()
