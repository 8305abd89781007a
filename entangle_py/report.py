"""Reporting a check: terminal output (rich), the JSON report, and exit codes.

Exit codes: 0 refines, 1 refinement fails, 2 bad input, 3 unknown (a limit was hit), 4 internal
soundness error (the numeric re-check disagrees with a proof).
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .engine import Limits
from .infer import Result, check_files


def to_json(res: Result, seq: str, dist: str) -> dict:
    return {
        "seq": seq,
        "dist": dist,
        "status": res.status,
        "exit_code": res.exit_code,
        "relations": res.relations,
        "expectations": [{"output": o, "required": req, "found": found, "holds": ok}
                         for o, req, found, ok in res.expectations],
        "failure": asdict(res.failure) if res.failure else None,
        "inferred_inputs": res.inferred_inputs,
        "collectives": [{"group": g, "kind": k, "nodes": {str(r): n for r, n in nodes.items()}}
                        for g, k, nodes in res.collectives],
        "ops_checked": res.ops_checked,
        "assumptions": [{"name": a, "meaning": d} for a, d in res.assumptions],
        "timings_s": {k: round(v, 4) for k, v in res.timings.items()},
        "retired": res.retired,
        "rechecked": res.rechecked,
        "numeric": res.numeric,
    }


def print_result(res: Result, console: Console, verbose: bool = False):
    if res.inferred_inputs:
        console.print("[bold]inferred input relation[/] (review it; --write-spec F saves it):")
        for name, rel in res.inferred_inputs.items():
            console.print(f"  {name} = {rel}")
    for name, meaning in res.assumptions:
        console.print(f"[bold]assuming[/] {name}: {escape(meaning)} (spec {escape('[assume]')}; not proven)",
                      highlight=False)
    if res.status == "refines":
        console.print(f"[bold green]refines[/]: {res.ops_checked} operators related")
    elif res.status == "fails":
        console.print("[bold red]refinement fails[/]")
    elif res.status == "internal-error":
        console.print("[bold red]internal soundness error[/]: a proof step is wrong (a lemma or a lowering); "
                      "no verdict -- please report it")
    else:
        console.print("[bold yellow]unknown[/]: a limit was hit")
    for name, term in res.relations.items():
        console.print(f"  {name} = {term}", highlight=False)
    for out, req, found, ok in res.expectations:
        mark = "[green]holds[/]" if ok else "[red]violated[/]"
        detail = found if found.startswith("no clean term") else f"found {out} = {found}"
        console.print(f"  expect {out} = {req}: {mark}" + ("" if ok else f" ({detail})"), highlight=False)
    f = res.failure
    if f:
        head = ("first operator without a clean mapping" if f.reason == "no clean term"
                else "output not returned by the distributed program" if f.reason.startswith("output ")
                else "stopped at")
        console.print(f"[bold]{head}[/]: {f.node} = {f.target}", highlight=False)
        if f.source:
            console.print(f"  at {f.source}", highlight=False)
        if f.reason != "no clean term":
            console.print(f"  {f.reason}", highlight=False)
        for name, rel in f.inputs.items():
            console.print(f"  input {name} = {rel}", highlight=False)
        console.print(f"  best term found: {f.best}", highlight=False)
        if f.considered:
            console.print(f"  G_d tensors in it: {', '.join(f.considered[:12])}", highlight=False)
        if f.later:
            console.print(f"  later operators without a clean mapping either: {', '.join(f.later[:12])}"
                          + (" ..." if len(f.later) > 12 else ""), highlight=False)
    if res.numeric:
        from .recheck import print_numeric
        print_numeric(res.numeric, console, verbose)
    if verbose:
        console.print("phases: " + ", ".join(f"{k} {v:.3f} s" for k, v in res.timings.items()))
        if res.retired:
            console.print(f"e-graph restarted {res.retired} times keeping only live facts"
                          + ("; the failure was decided again keeping every fact" if res.rechecked else ""))


def run_check_cli(args) -> int:
    # piped (CI logs, files): never wrap, so paths and terms stay whole on one line
    console = Console(stderr=False, highlight=False, soft_wrap=not sys.stdout.isatty())
    err = Console(stderr=True)
    t0 = time.perf_counter()
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True, disable=not err.is_terminal) as prog:
        task = prog.add_task("relating operators", total=None)

        def progress(i, total, name):
            prog.update(task, total=total, completed=i, description=f"relating {name}")
        res, checker = check_files(args.seq, args.dist, args.spec, lemma_files=args.lemmas,
                                   limits=Limits(args.max_iterations, args.max_enodes, args.max_seconds),
                                   progress=progress)
    if not getattr(args, "no_numeric", False):      # the interpreter's second opinion (recheck.py)
        from .recheck import attach
        attach(res, checker, budget_bytes=getattr(args, "recheck_budget", 2 << 30))
    t_report = time.perf_counter()
    print_result(res, console, verbose=args.verbose)
    if args.write_spec:
        spec = checker.spec
        for name, rel in checker.inferred.items():
            spec.inputs[name] = rel
        with open(args.write_spec, "w") as fh:
            fh.write(spec.to_toml())
        console.print(f"wrote spec to {args.write_spec}")
    res.timings["report"] = time.perf_counter() - t_report
    res.timings["total"] = time.perf_counter() - t0
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(to_json(res, args.seq, args.dist), fh, indent=1)
    if args.verbose:
        console.print(f"report {res.timings['report']:.3f} s, total {res.timings['total']:.3f} s")
    return res.exit_code
