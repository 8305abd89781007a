"""``entangle check-many MANIFEST``: many whole checks fanned out through an executor.

The manifest is TOML, one ``[[check]]`` table per graph pair::

    [[check]]
    name = "mlp_tp2"               # optional (default: the dist file's directory and name)
    seq = "graphs/mlp_tp2/seq.pt"  # paths relative to the manifest's directory
    dist = "graphs/mlp_tp2/dist.pt"
    spec = "graphs/mlp_tp2/spec.toml"   # optional
    assume = ["valid_indices"]     # optional, as --assume
    numeric = false                # optional, as --no-numeric

Each check is one task (``check_task``: the pipeline's ``check_files``, its JSON report); a
progress line is printed as each finishes, then a table, and ``--json`` writes one entry per task.
The exit code is the largest of the checks' (0 when all refine); a check whose worker died twice
is 3 (unknown: it could not finish), one whose checker raised is 4.
"""
from __future__ import annotations

import json
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from entangle_py.errors import InputError
from entangle_py.executor import Task, make_executor

EXIT_DIED = 3       # the check could not finish (its worker died twice): unknown
EXIT_RAISED = 4     # the checker raised: an internal error

_KEYS = {"name", "seq", "dist", "spec", "assume", "numeric"}


@dataclass(frozen=True)
class CheckTask:
    """One check as a picklable description: the files, the flags."""
    name: str
    seq: str
    dist: str
    spec: str | None = None
    assume: tuple = ()
    numeric: bool = True
    max_memory: int = 0         # resident bytes before the check gives up (0: the default limit)
    limits: object = None       # a config.Limits for every limit (then max_memory is its memory)
    memo: bool = True           # layer memoization (--no-memo: False)
    text: bool = False          # also the verdict as `entangle check` prints it (a stage's report)


@dataclass
class CheckOutcome:
    """What one check returns to the caller: its verdict, exit code, JSON report (None when the
    input was refused: then ``message`` says why, as `entangle check` would on stderr)."""
    status: str
    exit_code: int
    report: dict | None = None
    message: str = ""
    text: str = ""              # the verdict as `entangle check` prints it


def check_task(t: CheckTask) -> CheckOutcome:
    """One whole check, as ``entangle check SEQ DIST --spec SPEC`` runs it (a task's function)."""
    from entangle_py.config import Limits, Policy
    from entangle_py.pipeline import check_files
    from entangle_py.report.jsonout import to_json
    try:
        res, _ = check_files(t.seq, t.dist, t.spec, limits=t.limits or Limits(memory=t.max_memory),
                             numeric=t.numeric, assume=t.assume, policy=Policy(memoize=t.memo))
    except InputError as e:
        return CheckOutcome("bad-input", 2, None, str(e))
    return CheckOutcome(res.status, res.exit_code, to_json(res, t.seq, t.dist, t.spec),
                        text=_printed(res) if t.text else "")


def _printed(res) -> str:
    import io
    from rich.console import Console
    from entangle_py.report.text import print_result
    out = io.StringIO()
    print_result(res, Console(file=out, highlight=False, emoji=False, soft_wrap=True, color_system=None))
    return out.getvalue()


def preload():
    """What every check imports (the pipeline, torch for the numeric re-check), imported once by
    each pool worker before its first check."""
    import entangle_py.pipeline  # noqa: F401
    from entangle_py.lazy import torch
    torch.zeros(1)


def load_manifest(path: str | Path, max_memory: int = 0) -> list[CheckTask]:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise InputError(f"cannot read manifest {path}: {e}") from None
    entries = data.get("check")
    if not isinstance(entries, list) or not entries or set(data) - {"check"}:
        raise InputError(f"{path}: expected one or more [[check]] tables and nothing else")
    base, tasks, names = path.parent, [], set()
    for k, e in enumerate(entries, 1):
        where = f"{path}: check {k}"
        if set(e) - _KEYS:
            raise InputError(f"{where}: unknown key(s) {sorted(set(e) - _KEYS)} (known: {sorted(_KEYS)})")
        for key in ("seq", "dist"):
            if not isinstance(e.get(key), str):
                raise InputError(f"{where}: '{key}' (a graph file) is required")
        files = {key: str(base / e[key]) for key in ("seq", "dist", "spec") if e.get(key) is not None}
        for key, f in files.items():
            if not Path(f).exists():
                raise InputError(f"{where}: {key} file not found: {f}")
        assume = e.get("assume", [])
        if not (isinstance(assume, list) and all(isinstance(a, str) for a in assume)):
            raise InputError(f"{where}: 'assume' must be a list of assumption names")
        if not isinstance(e.get("numeric", True), bool):
            raise InputError(f"{where}: 'numeric' must be true or false")
        name = e.get("name") or f"{Path(e['dist']).parent.name}/{Path(e['dist']).name}"
        if name in names:
            raise InputError(f"{where}: a second check named {name!r} (give each a unique 'name')")
        names.add(name)
        tasks.append(CheckTask(name, files["seq"], files["dist"], files.get("spec"), tuple(assume),
                               e.get("numeric", True), max_memory))
    return tasks


def run_check_many(tasks: list[CheckTask], executor, on_result=None) -> list[dict]:
    """Every check through ``executor``; one entry per task, in the manifest's order."""
    results = executor.run([Task(t.name, check_task, (t,)) for t in tasks], on_result=on_result)
    return [entry(t, r) for t, r in zip(tasks, results)]


def entry(t: CheckTask, r) -> dict:
    if r.ok:
        out: CheckOutcome = r.value
        status, code, report, message = out.status, out.exit_code, out.report, out.message
    else:
        died = bool(r.deaths) and len(r.deaths) == r.attempts
        status, code = ("died", EXIT_DIED) if died else ("error", EXIT_RAISED)
        report, message = None, r.error
    return {"name": t.name, "seq": t.seq, "dist": t.dist, "spec": t.spec, "status": status, "exit_code": code,
            "seconds": round(r.seconds, 3), "worker": r.worker, "peak_rss": r.peak_rss, "attempts": r.attempts,
            "message": message, "report": report}


def run_check_many_cli(args) -> int:
    from rich.console import Console
    from rich.table import Table
    from entangle_py.config import Limits
    console = Console(highlight=False, emoji=False, soft_wrap=not sys.stdout.isatty())
    executor = make_executor(args.workers, args.ray, args.ray_address, preload)
    # the machine's default share of memory, split between the workers that run at once
    memory = args.max_memory or Limits().memory_bytes() // executor.workers
    tasks = load_manifest(args.manifest, memory)
    console.print(f"{len(tasks)} checks on {executor.name}, {executor.workers} worker(s)")
    t0, finished = time.perf_counter(), [0]

    def progress(i, r):
        finished[0] += 1
        e = entry(tasks[i], r)
        what = e["status"] + (f": {e['message']}" if e["message"] else "")
        retried = f", {r.attempts} attempts" if r.attempts > 1 else ""
        console.print(f"[{finished[0]}/{len(tasks)}] {e['name']}: {what} (exit {e['exit_code']}) "
                      f"{e['seconds']:.1f} s on {e['worker']}, peak {e['peak_rss'] / 2**20:.0f} MB{retried}")

    entries = run_check_many(tasks, executor, on_result=progress)
    wall = time.perf_counter() - t0
    table = Table("check", "verdict", "exit", "seconds", "worker", "peak MB", "attempts")
    for e in entries:
        table.add_row(e["name"], e["status"], str(e["exit_code"]), f"{e['seconds']:.1f}", e["worker"],
                      f"{e['peak_rss'] / 2**20:.0f}", str(e["attempts"]))
    console.print(table)
    counts = {}
    for e in entries:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    console.print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + f"; wall {wall:.1f} s")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"executor": executor.name, "workers": executor.workers, "wall_seconds": round(wall, 3),
                       "tasks": entries}, fh, indent=1)
    return max(e["exit_code"] for e in entries)

