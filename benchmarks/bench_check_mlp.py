"""Checker time on a synthetic Megatron MLP stack: N blocks (column-parallel fc1, gelu,
row-parallel fc2 + all-reduce; examples/mlp_stack.py) on P ranks, forward.

    python benchmarks/bench_check_mlp.py [--layers 1 8 32 64] [--ranks 2 4 8] [--repeat 3]

For each (N, P) the graphs are captured once (time reported separately, not part of the check),
then `check_files` runs `--repeat` times in this process; the table gives the median of the
checker's insert phase (G_d and inputs into the e-graph), its infer phase (the operator loop), and
milliseconds per related G_s operator (insert + infer over operators).  Every run must refine.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

from entangle_py.ir import graph as G  # noqa: E402
from entangle_py.frontend.capture import capture  # noqa: E402
from entangle_py.pipeline import check_files  # noqa: E402

import mlp_stack  # noqa: E402


def run_case(layers: int, ranks: int, repeat: int, tmp: Path) -> dict:
    mlp_stack.LAYERS = layers
    t0 = time.perf_counter()
    seq, dist = capture(mlp_stack, 1), capture(mlp_stack, ranks)
    cap = time.perf_counter() - t0
    paths = {k: tmp / f"{k}_{layers}_{ranks}.pt" for k in ("seq", "dist")}
    G.save(seq, paths["seq"])
    G.save(dist, paths["dist"])
    spec = tmp / f"spec_{layers}_{ranks}.toml"
    spec.write_text(mlp_stack.spec_text(layers))
    runs = []
    for _ in range(repeat):
        res, _ = check_files(str(paths["seq"]), str(paths["dist"]), str(spec))
        if res.status != "refines":
            raise SystemExit(f"N={layers} P={ranks}: {res.status}: {res.failure}")
        runs.append((res.timings["insert"], res.timings["infer"], res.ops_checked))
    insert = statistics.median(r[0] for r in runs)
    infer = statistics.median(r[1] for r in runs)
    ops = runs[0][2]
    return {"capture": cap, "insert": insert, "infer": infer, "ops": ops,
            "ms_per_op": 1000 * (insert + infer) / ops}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, nargs="+", default=[1, 8, 32, 64])
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{'N':>3} {'P':>2} {'G_s ops':>8} {'capture s':>10} {'insert s':>9} {'infer s':>8} {'ms/op':>7}")
    with tempfile.TemporaryDirectory() as d:
        for n in args.layers:
            for p in args.ranks:
                r = run_case(n, p, args.repeat, Path(d))
                print(f"{n:>3} {p:>2} {r['ops']:>8} {r['capture']:>10.2f} {r['insert']:>9.3f} {r['infer']:>8.3f} "
                      f"{r['ms_per_op']:>7.2f}", flush=True)


if __name__ == "__main__":
    main()
