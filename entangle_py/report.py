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

from entangle_py.check.checker import Result
from entangle_py.oracle.recheck import print_numeric


def to_json(res: Result, seq: str, dist: str) -> dict:
    return {
        "seq": seq,
        "dist": dist,
        "status": res.status,
        "exit_code": res.exit_code,
        "relations": res.relations,
        "expectations": [{"output": o, "required": req, "found": found, "holds": ok}
                         for o, req, found, ok in res.expectations],
        "outputs": res.outputs,
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
        mark = "[green]holds[/]" if ok else "[yellow]unknown[/]" if ok is None else "[red]violated[/]"
        detail = found if found.startswith(("no clean term", "unknown")) else f"found {out} = {found}"
        console.print(f"  expect {out} = {req}: {mark}" + ("" if ok else f" ({detail})"), highlight=False)
    for out, v in res.outputs.items():
        if v["verdict"] != "holds":
            console.print(f"  output {out}: {v['verdict']}" + (f" (the check stopped at {v['at']})"
                          if v["verdict"] == "not reached" else f" (at {v['at']})"), highlight=False)
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
        print_numeric(res.numeric, console, verbose)
    if verbose:
        console.print("phases: " + ", ".join(f"{k} {v:.3f} s" for k, v in res.timings.items()))
        if res.retired:
            console.print(f"e-graph restarted {res.retired} times keeping only live facts"
                          + ("; the failure was decided again keeping every fact" if res.rechecked else ""))
