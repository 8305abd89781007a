"""Terminal output of a check (rich).

Exit codes: 0 refines, 1 refinement fails, 2 bad input, 3 unknown (a limit was hit), 4 internal
soundness error (the numeric re-check disagrees with a proof).

Certificates and relations print in spec syntax (``sum(r0.x, r1.x)``, pasteable into a spec); a
failure's terms print in words (``sum over ranks of x``, check/readable.py), with the distributed
program's operators and source lines that the failure comes from (check/culprit.py).
"""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from entangle_py.check.checker import Result
from entangle_py.ir.rank_classes import describe
from entangle_py.oracle.recheck import plain, print_numeric
from entangle_py.report.common import MAX_LISTED, coverage_line, culprit_lines, hints, paren_phase


def print_result(res: Result, console: Console, verbose: bool = False):
    if res.inferred_inputs:
        console.print("[bold]inferred input relation[/] (review it; --write-spec F saves it):")
        for name, rel in res.inferred_inputs.items():
            plain(console, f"  {name} = {rel}")
    for name, meaning in res.assumptions:
        console.print(f"[bold]assuming[/] {name}: {escape(meaning)} (written by the user; not proven)",
                      highlight=False)
        where = res.assumption_uses.get(name, [])
        plain(console, "  used " + "; ".join(where[:MAX_LISTED]) + (" ..." if len(where) > MAX_LISTED else "")
              if where else "  not used by this check")
    for d in res.random_draws:
        if d["coupling"] is not None:
            plain(console, f"random draw {d['draw']}{_at(d)} = {d['coupling']}: {d['why']}"
                           + (" (evidence from capture)" if d["basis"] == "evidence" else ""))
    for name, rel in res.given.items():
        plain(console, f"given (spec, not checked: what computes it is not verified): {name} = {rel}")
    for name, value in res.constants.items():
        plain(console, f"declared (spec [constants], not checked: the graphs do not carry it): {name} = {value}")
    for path, used in res.user_lemmas.items():
        plain(console, f"user lemmas (--lemmas {path}, not checked by entangle-py): "
                       + (f"applied: {', '.join(used)}" if used else "none applied"))
    for n in res.capture_notes:
        at = f" at {n['file']}:{n['line']}" if n.get("file") else ""
        plain(console, f"capture note (rank {', '.join(map(str, n['ranks']))}){at}: {n['text']}")
        if n.get("code"):
            plain(console, f"    {n['code']}")
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
        plain(console, f"  {name} = {term}")
    if coverage_line(res):
        plain(console, f"  {coverage_line(res)}")
    for out, req, found, ok in res.expectations:
        mark = "[green]holds[/]" if ok else "[yellow]unknown[/]" if ok is None else "[red]violated[/]"
        detail = found if found.startswith(("no clean term", "unknown")) else f"found {out} = {found}"
        console.print(escape(f"  expect {out} = {req}: ") + mark + ("" if ok else escape(f" ({detail})")),
                      highlight=False)
    for out, v in res.outputs.items():
        if v["verdict"] != "holds":
            plain(console, f"  output {out}: {v['verdict']}" + (f" (the check stopped at {v['at']})"
                           if v["verdict"] == "not reached" else f" (at {v['at']})"))
    f = res.failure
    if f:
        head = ("first operator without a clean mapping" if f.reason == "no clean term"
                else "output not returned by the distributed program" if f.reason.startswith("output ")
                else "state written by one program only" if f.reason.startswith("state ")
                else "stopped at")
        detail = f.detail or {}
        console.print(f"[bold]{head}[/]: {f.node} = {f.target}{paren_phase(detail.get('location'))}",
                      highlight=False)
        if f.source:
            plain(console, f"  at {f.source}")
        if f.reason != "no clean term":
            plain(console, f"  {f.reason}")
        for name, rel in detail.get("inputs", f.inputs).items():
            plain(console, f"  input {name} = {rel}")
        plain(console, f"  best term found: {detail.get('best', f.best)}")
        if f.considered:
            plain(console, f"  G_d tensors in it: {', '.join(f.considered[:MAX_LISTED])}")
        for line in culprit_lines(detail):
            plain(console, line)
        if f.later:
            plain(console, f"  later operators without a clean mapping either: {', '.join(f.later[:12])}"
                           + (" ..." if len(f.later) > 12 else ""))
        for h in hints(res):
            console.print(f"  [bold]hint[/]: {escape(h)}", highlight=False)
    uncoupled = [d for d in res.random_draws if d["coupling"] is None]
    if res.status != "refines" and uncoupled:
        plain(console, "  random draws of the sequential program with no counterpart in the distributed one "
                       "(nothing computed from them is proven):")
        for d in uncoupled[:MAX_LISTED]:
            plain(console, f"    {d['draw']}{_at(d)}: {d['why']}")
    if res.status != "refines" and res.unknown_values:
        plain(console, "  values of the distributed program the checker does not know (nothing is proven from them):")
        for key, why in list(res.unknown_values.items())[:MAX_LISTED]:
            plain(console, f"    {key}: {why}")
    if res.numeric:
        print_numeric(res.numeric, console, verbose)
    if res.blocks:
        b = res.blocks
        rest = b["count"] - b["proved"] - b["reused"]
        plain(console, f"blocks: {b['proved']} proved, {b['reused']} reused"
                       + (f", {rest} checked on their own" if rest else "") + f" ({b['period']} operators each)")
    if verbose:
        for line in describe(res.rank_classes):
            plain(console, line)
        plain(console, "phases: " + ", ".join(f"{k} {v:.3f} s" for k, v in res.timings.items()))
        if res.retired:
            plain(console, f"e-graph restarted {res.retired} times keeping only live facts"
                           + ("; the failure was decided again keeping every fact" if res.rechecked else ""))


def _at(draw: dict) -> str:
    return f" at {draw['source'].split(' in ', 1)[0]}" if draw.get("source") else ""
