"""The whole job, stage by stage: load or import the graphs (frontend), check (check), the
numeric second opinion (oracle), then the report.  ``entangle check`` and the pytest helper run
through here; the stages below know nothing of each other's callers."""
from __future__ import annotations

import json
import sys
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from entangle_py.check import spec as S
from entangle_py.check.checker import Checker, Result
from entangle_py.config import Limits, Policy
from entangle_py.frontend.decompose import decompose
from entangle_py.frontend.fx_import import dump_files, import_fx
from entangle_py.ir import graph as G
from entangle_py.ir.rank_classes import rank_classes
from entangle_py.oracle.recheck import DEFAULT_BUDGET, attach, refuter
from entangle_py.report.jsonout import to_json
from entangle_py.report.text import print_result


def check_files(seq_path, dist_path, spec_path=None, lemma_files=(), limits=None, progress=None,
                policy=None, numeric=True, budget_bytes=DEFAULT_BUDGET, assume=()) -> tuple[Result, "Checker"]:
    """Load the graph files and the spec, then ``check_graphs``."""
    t0 = time.perf_counter()
    spec = S.load_spec(spec_path) if spec_path else S.Spec()
    seq = _load_graphs(seq_path)
    dist = _load_graphs(dist_path)
    load_time = time.perf_counter() - t0
    res, checker = check_graphs(seq, dist, spec, lemma_files=lemma_files, limits=limits, progress=progress,
                                policy=policy, numeric=numeric, budget_bytes=budget_bytes, assume=assume)
    res.timings = {"load": load_time, **res.timings}
    return res, checker


def check_graphs(seq, dist, spec, lemma_files=(), limits=None, progress=None, policy=None, numeric=True,
                 budget_bytes=DEFAULT_BUDGET, assume=()) -> tuple[Result, "Checker"]:
    """The one pipeline behind every entry point (``entangle check``, ``assert_refines``): plugin
    ops decomposed, the check, and with ``numeric`` the interpreter's second opinion -- it may
    refute an [expect] equality the lemmas did not prove in the exploration window, which ends
    its search (recheck.refuter), and it re-checks the verdict (recheck.attach).  ``assume``:
    assumptions given on the command line, as if the spec's [assume] said ``name = true``."""
    if spec.stages:
        raise S.SpecError(f"{spec.path}: [stages] splits a check into one check per pipeline stage, which "
                          f"`entangle check` runs (docs/scale-out.md); this entry point checks a pair whole: "
                          f"remove [stages] to check it whole")
    spec.assume = S.with_assumptions(spec.assume, assume, "--assume")
    checker = Checker(decompose(seq), decompose(dist), spec, limits=limits, lemma_files=lemma_files,
                      progress=progress, policy=policy,
                      refute=refuter(budget_bytes=budget_bytes) if numeric else None)
    res = checker.run()
    res.rank_classes = rank_classes(dist)
    if numeric:
        attach(res, checker, budget_bytes=budget_bytes)
    return res, checker


def _load_graphs(path):
    """A bundle file, or FX text dumps (a .py file, or a directory of per-rank dumps) imported
    on the fly -- what `entangle import-fx` would write."""
    files = dump_files(path)
    return G.load(path) if files is None else import_fx(files)


def _write_reports(res: Result, args):
    """--json, --html, --sarif: all three written from the one JSON report."""
    if not (args.json or getattr(args, "html", None) or getattr(args, "sarif", None)):
        return
    data = to_json(res, args.seq, args.dist, args.spec)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(data, fh, indent=1)
    if getattr(args, "html", None):
        from entangle_py.report.html import to_html
        with open(args.html, "w", encoding="utf-8") as fh:
            fh.write(to_html(data))
    if getattr(args, "sarif", None):
        from entangle_py.report.sarif import to_sarif
        with open(args.sarif, "w") as fh:
            json.dump(to_sarif(data), fh, indent=1)


def run_check_cli(args) -> int:
    # piped (CI logs, files): never wrap, so paths and terms stay whole on one line
    console = Console(stderr=False, highlight=False, emoji=False, soft_wrap=not sys.stdout.isatty())
    err = Console(stderr=True, emoji=False)
    t0 = time.perf_counter()
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True, disable=not err.is_terminal) as prog:
        task = prog.add_task("relating operators", total=None)

        def progress(i, total, name):
            prog.update(task, total=total, completed=i, description=f"relating {name}")
        res, checker = check_files(args.seq, args.dist, args.spec, lemma_files=args.lemmas,
                                   limits=Limits(iterations=args.max_iterations, nodes=args.max_enodes,
                                                 matches=args.max_matches, seconds=args.max_seconds,
                                                 memory=args.max_memory),
                                   progress=progress, numeric=not getattr(args, "no_numeric", False),
                                   policy=Policy(memoize=not getattr(args, "no_memo", False)),
                                   budget_bytes=getattr(args, "recheck_budget", DEFAULT_BUDGET),
                                   assume=getattr(args, "assume", ()))
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
    _write_reports(res, args)
    if args.verbose:
        console.print(f"report {res.timings['report']:.3f} s, total {res.timings['total']:.3f} s")
    return res.exit_code
