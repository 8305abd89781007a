"""Times of the framework recipes as a user runs them (examples/frameworks/, issue 26): each row
is the three commands of a recipe -- ``entangle capture`` of the sequential program, of the
distributed one, then ``entangle check`` -- each in a fresh Python process (interpreter, imports,
the ranks' processes, writing the bundle).  Wall seconds and CPU seconds (the commands' processes
and all their children), median of N runs.

    python benchmarks/bench_frameworks.py [--repeat 1] [--only ID...]

Needs the frameworks installed (docs/frameworks.md); an entry whose framework is missing is skipped.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "examples" / "frameworks"), str(ROOT / "tests" / "corpus" / "programs")]
from framework_corpus import CORPUS, framework  # noqa: E402


def _timed(cmd) -> tuple[float, float, int]:
    """(wall s, CPU s of the command and its children, exit code)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    rc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        env={**os.environ, "HF_HUB_OFFLINE": "1"}).returncode
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), rc


def _run(entry, tmp: Path) -> dict:
    joint = ["--joint"] if entry.mode == "joint" else []
    seq, dist = tmp / "seq.pt", tmp / "dist.pt"
    entangle = [sys.executable, "-m", "entangle_py"]
    steps = {
        "capture seq": entangle + ["capture", entry.script, *joint, "-o", str(seq)],
        f"capture TP={entry.world_size}": entangle + ["capture", entry.script, "--world-size", str(entry.world_size),
                                                      *joint, "-o", str(dist)],
        "check": entangle + ["check", str(seq), str(dist), "--spec", entry.spec],
    }
    return {name: _timed(cmd) for name, cmd in steps.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--only", nargs="*", default=None, help="entry ids (default: every correct recipe)")
    args = ap.parse_args(argv)
    import importlib.util
    entries = [e for e in CORPUS if (e.id in args.only if args.only else e.label == "correct")]
    print(f"{'entry':36} {'step':14} {'wall s':>8} {'CPU s':>8}  exit   (median of {args.repeat}, {os.cpu_count()} cores)")
    for e in entries:
        if importlib.util.find_spec(framework(e).split(".")[0]) is None:
            print(f"{e.id:36} skipped: {framework(e)} not installed")
            continue
        runs = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as tmp:
                runs.append(_run(e, Path(tmp)))
        for step in runs[0]:
            wall = statistics.median(r[step][0] for r in runs)
            cpu = statistics.median(r[step][1] for r in runs)
            rcs = sorted({r[step][2] for r in runs})
            print(f"{e.id:36} {step:14} {wall:8.1f} {cpu:8.1f}  {','.join(map(str, rcs))}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
