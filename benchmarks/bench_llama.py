"""`entangle check` on a Llama-style stack (examples/llama_stack.py: RMSNorm, RoPE, GQA attention,
SwiGLU, Megatron column / row parallel with explicit all-reduces) at layers L in {1, 8, 32} x
tensor-parallel degree P in {2, 4, 8}, each against the sequential model of the same depth.

    python benchmarks/bench_llama.py [--layers 1 8 32] [--tp 2 4 8] [--cache DIR] [--no-memo-too]
                                     [--capture-timeout S] [--json F] [-- ARGS...]

The bundles are made by `entangle capture` (a real capture, in a fresh process per bundle; kept in
``--cache`` so that a rerun checks without capturing again).  Every check is a fresh process, as a
user runs it; ARGS after ``--`` are passed to `entangle check`.  Per cell: the verdict, the wall
seconds capture took, the check's CPU seconds (user + sys of the child, from the kernel's
accounting: bench_grid.run_measured), its peak RSS, the blocks proved / reused (layer
memoization), CPU ms per G_s operator; with ``--no-memo-too`` the same check with ``--no-memo``
beside it.  Then time(TP 8) / time(TP 2) at each depth and time(L 32) / time(L 1) at each degree
(targets in issue 24: at most 1.5 and at most 4).  A capture slower than ``--capture-timeout``
is reported as such in its cell, not dropped.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_grid import compile_package, run_measured  # noqa: E402

SCRIPT = ROOT / "examples" / "llama_stack.py"


def capture(layers: int, tp: int, cache: Path, timeout: float) -> tuple[Path | None, float, str]:
    """The bundle of the model at this depth and degree (tp 1: sequential): (path or None, wall
    seconds of the capture (0 when cached), why it is missing)."""
    out = cache / f"llama_L{layers}_P{tp}.pt"
    if out.exists():
        return out, 0.0, ""
    env = dict(os.environ, LLAMA_LAYERS=str(layers))
    t0 = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, "-m", "entangle_py", "capture", str(SCRIPT), "--world-size", str(tp),
                            "-o", str(out)], env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - t0, f"capture over {timeout:.0f} s"
    if r.returncode != 0:
        return None, time.perf_counter() - t0, f"capture exit {r.returncode}: {r.stderr.strip().splitlines()[-1:]}"
    return out, time.perf_counter() - t0, ""


def spec_text(layers: int) -> str:
    """The model's spec, from a child process: importing the model imports torch, and a child
    forked from a process holding torch starts with its peak RSS (Linux keeps it across exec)."""
    code = f"import llama_stack; print(llama_stack.spec_text({layers}), end='')"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT / "examples", capture_output=True, text=True,
                          check=True).stdout


def check(seq: Path, dist: Path, spec: Path, extra=()) -> dict:
    with tempfile.TemporaryDirectory() as d:
        rep = Path(d) / "report.json"
        rc, usage, wall, err = run_measured([sys.executable, "-m", "entangle_py", "check", str(seq), str(dist),
                                             "--spec", str(spec), "--json", str(rep), *extra], Path(d))
        report = json.loads(rep.read_text()) if rep.exists() else {}
    return {"exit": rc, "status": report.get("status", f"exit {rc}"), "cpu": usage.ru_utime + usage.ru_stime,
            "rss": usage.ru_maxrss * 1024, "wall": wall, "ops": report.get("ops_checked", 0),
            "blocks": report.get("blocks", {}), "err": err.strip().splitlines()[-1:] if rc not in (0, 1) else []}


def blocks_text(b: dict) -> str:
    return f"{b['proved']} / {b['reused']}" if b else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--tp", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--cache", default=None, help="directory keeping the captured bundles (default: a temporary one)")
    ap.add_argument("--capture-timeout", type=float, default=1800)
    ap.add_argument("--no-memo-too", action="store_true", help="also check every cell with --no-memo")
    ap.add_argument("--json", metavar="F")
    ap.add_argument("extra", nargs="*", help="arguments passed to `entangle check` (after --)")
    args = ap.parse_args()
    compile_package()
    tmp = None if args.cache else tempfile.TemporaryDirectory()
    cache = Path(args.cache or tmp.name)
    cache.mkdir(parents=True, exist_ok=True)
    cells = {}
    for layers in args.layers:
        spec = cache / f"llama_L{layers}.toml"
        spec.write_text(spec_text(layers))
        seq, seq_s, seq_why = capture(layers, 1, cache, args.capture_timeout)
        for tp in args.tp:
            dist, dist_s, why = capture(layers, tp, cache, args.capture_timeout) if seq else (None, 0.0, seq_why)
            cell = {"capture_s": seq_s + dist_s, "missing": why}
            seq_s = 0.0          # the sequential capture is counted once, in the first cell of its depth
            if dist is not None:
                cell["memo"] = check(seq, dist, spec, args.extra)
                if args.no_memo_too:
                    cell["no_memo"] = check(seq, dist, spec, [*args.extra, "--no-memo"])
            cells[(layers, tp)] = cell
            m = cell.get("memo")
            print(f"  L{layers} TP{tp}: " + (f"{m['status']}, {m['cpu']:.2f} CPU-s" if m else why), file=sys.stderr)
    print(f"Llama-style stack (examples/llama_stack.py), one run per cell; CPU = user + sys of the check's process")
    print()
    head = "| L | TP | capture s (wall) | verdict | CPU s | peak RSS | blocks proved / reused | CPU ms / op |"
    if args.no_memo_too:
        head += " --no-memo CPU s | --no-memo RSS |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for (layers, tp), cell in cells.items():
        m = cell.get("memo")
        if m is None:
            print(f"| {layers} | {tp} | {cell['capture_s']:.0f} | {cell['missing']} | - | - | - | - |"
                  + (" - | - |" if args.no_memo_too else ""))
            continue
        row = (f"| {layers} | {tp} | {cell['capture_s']:.0f} | {m['status']} | {m['cpu']:.2f} | {m['rss'] / 2**20:.0f} MB | "
               f"{blocks_text(m['blocks'])} | {1000 * m['cpu'] / max(m['ops'], 1):.1f} |")
        if args.no_memo_too:
            n = cell["no_memo"]
            row += f" {n['cpu']:.2f} | {n['rss'] / 2**20:.0f} MB |"
        print(row)
    print()
    cpu = {k: c["memo"]["cpu"] for k, c in cells.items() if "memo" in c}
    for layers in args.layers:
        if (layers, 2) in cpu and (layers, 8) in cpu:
            print(f"time(TP 8) / time(TP 2) at L{layers}: {cpu[(layers, 8)] / cpu[(layers, 2)]:.2f}")
    lo, hi = min(args.layers), max(args.layers)
    for tp in args.tp:
        if (lo, tp) in cpu and (hi, tp) in cpu and lo != hi:
            print(f"time(L {hi}) / time(L {lo}) at TP{tp}: {cpu[(hi, tp)] / cpu[(lo, tp)]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({f"L{k[0]} TP{k[1]}": v for k, v in cells.items()}, indent=1))


if __name__ == "__main__":
    main()
