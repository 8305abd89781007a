"""`entangle check` on the shared Megatron GPT grid (entangle-data/gpt): layers L in {1, 8} x tensor
parallel degree P in {2, 4, 8}, each against the sequential model of the same depth, with the spec
the data ships (specs/layer{L}_tp{P}.toml) and `--assume same_rng` (FX dumps carry no evidence of
the ranks' generators).

    python benchmarks/bench_grid.py [--layers 1 8] [--tp 2 4 8] [--repeat 3] [--json F] [-- ARGS...]

Every check is a fresh process, as a user runs it; ARGS after ``--`` are passed to `entangle check`.
Per cell: the verdict, CPU seconds of the whole process (user + sys, from the kernel's accounting
of the child; median of the repeats), its peak resident memory, CPU milliseconds per G_s operator
related (whole process over the operators), the work in deterministic units from the JSON report
(peak e-nodes, lemma steps, lemma matches), and the published figure (Entangle, 16-core EPYC 7302P,
whole check; wall) beside it.  Then the ratios time(TP 8) / time(TP 2) and time(L 8) / time(L 1),
and the phases of each cell: start-up (CPU of the imports a check does, measured once), and load,
insert, infer, re-check and report (wall, from the report's timings).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GPT = ROOT.parent / "shared" / "external" / "entangle-data" / "gpt"
# Entangle's published whole-check times for these pairs (16-core EPYC 7302P, seconds)
PUBLISHED = {(1, 2): 13.6, (1, 4): 18.9, (1, 8): 52.8, (8, 2): 68.7, (8, 4): 94.7, (8, 8): 174.4}
PHASES = ("load", "insert", "infer", "numeric", "report")
# the dumps are FX graphs: no evidence of the ranks' random generators, so their dropouts are
# coupled only by assumption (the specs do not set it)
ASSUME = ("--assume", "same_rng")


def cell_paths(layers: int, tp: int) -> tuple[Path, Path, Path]:
    return GPT / f"paral1_layer{layers}", GPT / f"paral{tp}_layer{layers}", GPT / "specs" / f"layer{layers}_tp{tp}.toml"


def run_check(layers: int, tp: int, extra=(), timeout: float | None = None) -> dict:
    """One `entangle check` of a grid cell in a fresh process: verdict, CPU seconds (user + sys),
    peak RSS in bytes, wall seconds, and the JSON report's ops, phases and work."""
    seq, dist, spec = cell_paths(layers, tp)
    with tempfile.TemporaryDirectory() as d:
        rep = Path(d) / "report.json"
        rc, usage, wall, err = run_measured([sys.executable, "-m", "entangle_py", "check", str(seq), str(dist),
                                             "--spec", str(spec), "--json", str(rep), *ASSUME, *extra], Path(d), timeout)
        report = json.loads(rep.read_text()) if rep.exists() else {}
    return {"exit": rc, "status": report.get("status", f"exit {rc}"),
            "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss * 1024, "wall": wall,
            "ops": report.get("ops_checked", 0), "timings": report.get("timings_s", {}),
            "work": report.get("work", {}), "operators": report.get("operators", []),
            "stderr": err.strip().splitlines()[-1:] if rc not in (0, 1) else []}


def run_measured(cmd, tmp: Path, timeout: float | None = None):
    """Run ``cmd`` and reap it with wait4: (exit code, its own resource use, wall seconds, stderr)."""
    out, err = tmp / "stdout", tmp / "stderr"
    t0 = time.perf_counter()
    with open(out, "w") as fo, open(err, "w") as fe:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=fo, stderr=fe)
        timer = threading.Timer(timeout, proc.kill) if timeout else None
        if timer:
            timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        if timer:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage, time.perf_counter() - t0, err.read_text()


def compile_package():
    """Byte-compile the package first, as pip does when it installs the wheel: where Python may
    not write its caches (PYTHONDONTWRITEBYTECODE, a read-only tree) every check would compile the
    sources again (0.15 CPU-s of start-up here), which no installed copy does."""
    import compileall
    compileall.compile_dir(str(ROOT / "entangle_py"), quiet=1)


def startup_cpu(repeat: int = 3) -> float:
    """CPU seconds of a fresh process importing what `entangle check` imports before it reads a
    file (median of ``repeat``)."""
    code = "import entangle_py.cli, entangle_py.pipeline"
    runs = []
    with tempfile.TemporaryDirectory() as d:
        for _ in range(repeat):
            _, usage, _, _ = run_measured([sys.executable, "-c", code], Path(d))
            runs.append(usage.ru_utime + usage.ru_stime)
    return statistics.median(runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--tp", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", metavar="F", help="write the measurements as JSON")
    ap.add_argument("extra", nargs="*", help="arguments passed to `entangle check` (after --)")
    args = ap.parse_args()
    if not GPT.exists():
        raise SystemExit(f"entangle-data not found at {GPT}")
    compile_package()
    start = startup_cpu()
    cells = {}
    for layers in args.layers:
        for tp in args.tp:
            runs = [run_check(layers, tp, args.extra) for _ in range(args.repeat)]
            cells[(layers, tp)] = runs
            r = runs[0]
            print(f"  L{layers} TP{tp}: {r['status']}, {statistics.median(x['cpu'] for x in runs):.2f} CPU-s", file=sys.stderr)
    print(f"Megatron GPT grid (entangle-data/gpt), median of {args.repeat} run(s) per cell; CPU = user + sys of the "
          f"whole process; published = Entangle, 16-core EPYC 7302P (wall)")
    print(f"start-up (imports of a check): {start:.3f} CPU-s")
    print()
    print("| L | TP | verdict | CPU s | peak RSS | CPU ms / op | peak e-nodes | lemma steps | matches | published s | x faster |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    summary = {}
    for (layers, tp), runs in cells.items():
        cpu = statistics.median(x["cpu"] for x in runs)
        r = runs[0]
        w = r["work"]
        pub = PUBLISHED.get((layers, tp))
        summary[f"L{layers} TP{tp}"] = {"status": r["status"], "cpu": cpu, "rss": max(x["rss"] for x in runs),
                                        "ops": r["ops"], "work": w, "timings": r["timings"]}
        faster = f"{pub / cpu:.1f}" if pub else "-"
        print(f"| {layers} | {tp} | {r['status']} | {cpu:.2f} | {max(x['rss'] for x in runs) / 2**20:.0f} MB | "
              f"{1000 * cpu / max(r['ops'], 1):.1f} | {w.get('peak_enodes', '?')} | {w.get('lemma_steps', '?')} | "
              f"{w.get('matches', '?')} | {pub if pub else '-'} | {faster} |")
    print()
    for layers in args.layers:
        if (layers, 2) in cells and (layers, 8) in cells:
            a, b = (statistics.median(x["cpu"] for x in cells[(layers, p)]) for p in (2, 8))
            print(f"time(TP 8) / time(TP 2) at L{layers}: {b / a:.2f}")
    for tp in args.tp:
        if (1, tp) in cells and (8, tp) in cells:
            a, b = (statistics.median(x["cpu"] for x in cells[(L, tp)]) for L in (1, 8))
            print(f"time(L 8) / time(L 1) at TP{tp}: {b / a:.2f}")
    print()
    print("phases (wall seconds, from the report's timings_s; numeric = the re-check)")
    print("| L | TP | " + " | ".join(PHASES) + " |")
    print("|---|---|" + "---|" * len(PHASES))
    for (layers, tp), runs in cells.items():
        t = runs[0]["timings"]
        print(f"| {layers} | {tp} | " + " | ".join(f"{t.get(p, 0):.2f}" for p in PHASES) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps({"startup_cpu": start, "cells": summary}, indent=1))


if __name__ == "__main__":
    main()
