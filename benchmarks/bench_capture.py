"""Capture times of the examples (wall seconds, median of N runs; all ranks of each bundle).

    python benchmarks/bench_capture.py [--repeat 3] [--only LABEL] [--cli]

Each row captures one bundle from scratch: the sequential program (world size 1) or every rank of
the distributed one, each rank traced by TorchDynamo + AOTAutograd on fake tensors with the fake
process group, in a fresh process of its own (forked from the capture server; ranks in parallel
where cores allow, ``cores`` below).  The first capture in a process pays one-off costs (starting
the server, which imports torch and the capture modules); it is excluded (a warm-up capture runs
first) and reported separately.  ``--cli``: also ``entangle capture`` end to end in a fresh Python
process (what a user waits for: interpreter, imports, server, capture, writing the bundle).
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
    ap.add_argument("--cli", action="store_true", help="also time `entangle capture` in a fresh process")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    import torch  # noqa: F401  (import cost is not capture cost)
    t_import = time.perf_counter() - t0
    from entangle_py.frontend.capture import capture

    t0 = time.perf_counter()
    capture(EXAMPLES / "mlp.py", 1)
    t_warm = time.perf_counter() - t0

    try:
        from entangle_py.frontend.rank_processes import cores
        n_cores = cores()
    except ImportError:          # an entangle from before a process per rank
        n_cores = 1
    print(f"torch {torch.__version__}; import torch {t_import:.2f} s; first (warm-up) capture {t_warm:.2f} s; "
          f"cores {n_cores}")
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
    if args.cli:
        import subprocess
        import tempfile
        print(f"\n{'entangle capture (fresh process)':32} {'ranks':>5} {'median s':>18} {'min s':>7}")
        for label, script, ws, joint in CLI_CASES:
            if args.only and args.only not in label:
                continue
            times = []
            with tempfile.TemporaryDirectory() as tmp:
                for _ in range(args.repeat):
                    cmd = [sys.executable, "-m", "entangle_py", "capture", str(EXAMPLES / script),
                           "--world-size", str(ws), "-o", str(Path(tmp) / "b.pt")] + (["--joint"] if joint else [])
                    t0 = time.perf_counter()
                    subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
                    times.append(time.perf_counter() - t0)
            print(f"{label:32} {ws:>5} {statistics.median(times):>18.2f} {min(times):>7.2f}")
            sys.stdout.flush()
    return 0


# (label, script, world size, joint): `entangle capture` end to end
CLI_CASES = [
    ("mlp seq joint", "mlp.py", 1, True),
    ("mlp TP=2 joint", "mlp.py", 2, True),
    ("mlp TP=4 joint", "mlp.py", 4, True),
]


if __name__ == "__main__":
    raise SystemExit(main())
