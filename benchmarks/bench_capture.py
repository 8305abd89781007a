"""Capture times of the examples (seconds, median of N runs; all ranks of each bundle).

    python benchmarks/bench_capture.py [--repeat 3]

Each row captures one bundle from scratch: the sequential program (world size 1) or every rank of
the distributed one, each rank traced by TorchDynamo + AOTAutograd on meta tensors with the fake
process group.  The first capture in a process pays one-off import/warm-up costs; it is excluded
(a warm-up capture runs first) and reported separately.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

# (label, script, world size, joint, dynamic)
CASES = [
    ("mlp seq forward", "mlp.py", 1, False, False),
    ("mlp seq joint", "mlp.py", 1, True, False),
    ("mlp TP=2 forward", "mlp.py", 2, False, False),
    ("mlp TP=4 forward", "mlp.py", 4, False, False),
    ("mlp TP=2 joint", "mlp.py", 2, True, False),
    ("mlp TP=4 joint", "mlp.py", 4, True, False),
    ("mlp TP=2 forward dynamic", "mlp.py", 2, False, True),
    ("mlp TP=2 missing all-reduce", "mlp_missing_allreduce.py", 2, False, False),
    ("seq-parallel block TP=2", "seqpar_block.py", 2, False, False),
    ("attention TP=2", "attention.py", 2, False, False),
    ("vocab embedding TP=2", "vocab_embedding.py", 2, False, False),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default=None, help="substring filter on the case label")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    import torch  # noqa: F401  (import cost is not capture cost)
    t_import = time.perf_counter() - t0
    from entangle_py.frontend.capture import capture

    t0 = time.perf_counter()
    capture(EXAMPLES / "mlp.py", 1)
    t_warm = time.perf_counter() - t0

    print(f"torch {torch.__version__}; import torch {t_import:.2f} s; first (warm-up) capture {t_warm:.2f} s")
    print(f"{'case':32} {'ranks':>5} {'ops/rank':>8} {'median s':>9} {'min s':>7} {'s/rank':>7}")
    for label, script, ws, joint, dynamic in CASES:
        if args.only and args.only not in label:
            continue
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            b = capture(EXAMPLES / script, ws, joint=joint, dynamic=dynamic)
            times.append(time.perf_counter() - t0)
        ops = sum(1 for n in b.rank(0).nodes if not n.is_placeholder)
        med = statistics.median(times)
        print(f"{label:32} {ws:>5} {ops:>8} {med:>9.2f} {min(times):>7.2f} {med / ws:>7.2f}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
