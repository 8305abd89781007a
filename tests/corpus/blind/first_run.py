"""Run the checker on the blind corpus as a user would, and tabulate what it says.

Per program and mode: ``entangle capture S.py [--joint] -o seq.pt``, ``entangle capture S.py
--world-size W [--joint] -o dist.pt``, ``entangle check seq.pt dist.pt --spec S.toml --json R``,
each under a time limit and a memory cap (``ulimit -v``).  Recorded: the check's exit code (or
the capture's, when capture fails), the first line of its reason, whether a bug was located
within 5 lines of its ``# BUG`` line (any source line the report names in the script: the failing
operator, culprits and their readers, producers, failing outputs, capture notes, the numeric
witness's sources of the output), whether the
numeric witness said "confirmed" on a correct program (misleading), and the wall time.

    python tests/corpus/blind/first_run.py [NAME ...] [--mode M] [--json OUT] [--markdown OUT]
        [--reports DIR] [--timeout 300] [--mem-kb 6000000] [--corpus DIR]

(``--corpus DIR``: another corpus of this layout, with its own ``manifest.py``; default this one.)
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from manifest import load_entries  # noqa: E402

NEAR = 5
EXIT_NAMES = {0: "refines", 1: "fails", 2: "refused", 3: "limit", 4: "internal error"}


def _limits(mem_kb):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (mem_kb * 1024, mem_kb * 1024))
    return apply


def _run(cmd, timeout, mem_kb, cwd):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                           preexec_fn=_limits(mem_kb))
        return p.returncode, p.stdout, p.stderr, time.time() - t0
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return "timeout", out, "", time.time() - t0


def _entangle():
    return [sys.executable, "-m", "entangle_py"]


def _lines_named(report: dict, script: str) -> list[int]:
    """Every source line of ``script`` the report points at for the failure."""
    locs = []
    fail = report.get("failure") or {}
    if fail.get("location"):
        locs.append(fail["location"])
    for c in fail.get("culprits") or []:
        locs += [c.get(k) for k in ("location", "reader", "counterpart")]
    locs += fail.get("producers") or []
    for out in (report.get("outputs") or {}).values():
        if out.get("verdict") != "holds" and out.get("location"):
            locs.append(out["location"])
    locs += report.get("capture_notes") or []
    locs += (report.get("numeric") or {}).get("output_sources") or []  # where the ranks compute it
    return [loc["line"] for loc in locs
            if isinstance(loc, dict) and loc.get("line") and Path(str(loc.get("file") or "")).name == script]


def _reason(code, out, err, report):
    """The first line that says why: the refinement line, the failing operator, the violated
    expectation, the refusal or the limit."""
    if code == "timeout":
        return "timeout"
    lines = [x.strip() for x in out.strip().splitlines()]
    if code == 0:
        return next((x for x in lines if x.startswith("refines")), lines[0] if lines else "")
    if report and report.get("failure") and report["failure"].get("node"):
        f = report["failure"]
        loc = f.get("location") or {}
        where = f" at {loc.get('code')!r} (line {loc.get('line')})" if loc.get("line") else ""
        return f"{f.get('reason')}: {f.get('node')} = {f.get('target')}{where}"
    if code == 1:
        for key in (": violated", ": fails"):
            hit = next((x for x in lines if key in x), None)
            if hit:
                return hit
    text = (err.strip() or out.strip()).splitlines()
    if code not in (0, 1) and text:  # a refusal, a limit, a crash: its last words
        return text[-1]
    return next((x for x in lines if not x.startswith(("assuming", "inferred", "param:"))), "")


def _outcome(code) -> str:
    if isinstance(code, int) and code < 0:
        return f"crashed (signal {-code})"
    return EXIT_NAMES.get(code, str(code))


def _witness(out: str) -> str:
    for line in out.splitlines():
        if "numeric witness:" in line:
            return line.split("numeric witness:", 1)[1].strip().split(":")[0]
    return ""


def run_one(entry, mode, timeout, mem_kb, work: Path, keep: Path | None = None) -> dict:
    corpus = Path(entry.get("dir", HERE))
    script = corpus / entry["script"]
    spec = corpus / entry["spec"][mode]
    joint = ["--joint"] if mode == "joint" else []
    seq, dist, rep = work / "seq.pt", work / "dist.pt", work / "report.json"
    for f in (seq, dist, rep):
        f.unlink(missing_ok=True)
    row = {"program": entry["name"], "pair": entry["pair"], "label": entry["label"], "mode": mode,
           "world_size": entry["world_size"], "bug_line": entry["bug_line"]}
    t0 = time.time()
    for what, cmd in (("capture seq", [*_entangle(), "capture", str(script), *joint, "-o", str(seq)]),
                      ("capture dist", [*_entangle(), "capture", str(script), "--world-size",
                                        str(entry["world_size"]), *joint, "-o", str(dist)])):
        code, out, err, _ = _run(cmd, timeout, mem_kb, work)
        if code != 0:
            if keep is not None:
                keep.mkdir(parents=True, exist_ok=True)
                (keep / f"{entry['name']}.{mode}.txt").write_text(f"{what}\n{out}\n--- stderr ---\n{err}")
            text = (err.strip() or out.strip()).splitlines()
            row.update(stage=what, exit=code, outcome=f"{what} failed",
                       reason=(text[-1] if text else str(code))[:300], located=None, misleading_witness=None,
                       seconds=round(time.time() - t0, 1))
            return row
    code, out, err, _ = _run([*_entangle(), "check", str(seq), str(dist), "--spec", str(spec), "--json", str(rep)],
                             timeout, mem_kb, work)
    if keep is not None:  # the check's own words, for reading the causes afterwards
        keep.mkdir(parents=True, exist_ok=True)
        (keep / f"{entry['name']}.{mode}.txt").write_text(out + "\n--- stderr ---\n" + err)
        if rep.exists():
            (keep / f"{entry['name']}.{mode}.json").write_text(rep.read_text())
    report = json.loads(rep.read_text()) if rep.exists() else None
    row.update(stage="check", exit=code, outcome=_outcome(code))
    _judge(row, entry, code, out, err, report)
    row["seconds"] = round(time.time() - t0, 1)
    return row


def _failure_site(row):
    return (row.get("failing_op"), row.get("failing_line"))


def mark_twins(rows):
    """For a buggy run: did its correct twin refine in the same mode (so the rejection is owed to
    the bug), and does it fail at the same operator as a failing twin (so it says nothing)?"""
    by = {(r["pair"], r["mode"], r["label"]): r for r in rows}
    for r in rows:
        if r["label"] != "buggy":
            continue
        twin = by.get((r["pair"], r["mode"], "correct"))
        r["twin_exit"] = twin["exit"] if twin else None
        r["same_failure_as_twin"] = bool(twin and twin.get("exit") == r.get("exit") == 1
                                         and _failure_site(twin) == _failure_site(r) and _failure_site(r) != (None, None))


def rebuild(rows, reports: Path, corpus=None):
    """Recompute reasons, lines and witnesses from the kept outputs (no capture, no check)."""
    entries = {e["name"]: e for e in load_entries(corpus)}
    for r in rows:
        txt = reports / f"{r['program']}.{r['mode']}.txt"
        if r.get("stage") != "check" or not txt.exists():
            continue
        out, _, err = txt.read_text().partition("\n--- stderr ---\n")
        rep = reports / f"{r['program']}.{r['mode']}.json"
        report = json.loads(rep.read_text()) if rep.exists() else None
        r["outcome"] = _outcome(r["exit"])
        _judge(r, entries[r["program"]], r["exit"], out, err, report)
    return rows


def _judge(row, entry, code, out, err, report):
    script = Path(entry["script"]).name
    lines = _lines_named(report, script) if report else []
    bug = entry["bug_line"]
    witness = _witness(out)
    fail = (report or {}).get("failure") or {}
    row.update(reason=_reason(code, out, err, report)[:300], lines=sorted(set(lines)),
               failing_op=fail.get("target"), failing_line=(fail.get("location") or {}).get("line"),
               located=(any(abs(x - bug) <= NEAR for x in lines) if bug and code == 1 else None),
               witness=witness,
               misleading_witness=(witness == "confirmed") if entry["label"] == "correct" else None)


def markdown(rows) -> str:
    head = ("| program | mode | W | label | exit | outcome | reason (first line) | bug located | "
            "witness | s |\n|---|---|---|---|---|---|---|---|---|---|\n")
    mark_twins(rows)
    body = []
    for r in rows:
        loc = {True: "yes", False: "no", None: ""}[r.get("located")]
        if r["label"] == "buggy" and r.get("exit") == 1 and r.get("located") is False:
            loc = f"no ({', '.join(map(str, r.get('lines', []))) or 'no line'}; bug {r['bug_line']})"
        if r.get("same_failure_as_twin"):
            loc += " (twin fails here too)"
        wit = (r.get("witness") or "").split(" on ")[0].split(":")[0]
        if r.get("misleading_witness"):
            wit = "**confirmed, on a correct program**"
        reason = str(r.get("reason", "")).replace("|", "\\|").replace("\n", " ")
        reason = reason if len(reason) <= 170 else reason[:167] + "..."
        body.append(f"| {r['program']} | {r['mode']} | {r['world_size']} | {r['label']} | {r['exit']} | "
                    f"{r['outcome']} | {reason} | {loc} | {wit} | {r['seconds']} |")
    return head + "\n".join(body) + "\n"


def summary(rows) -> str:
    correct = [r for r in rows if r["label"] == "correct"]
    buggy = [r for r in rows if r["label"] == "buggy"]
    by_prog = {}
    for r in correct:
        by_prog.setdefault(r["program"], []).append(r["exit"] == 0)
    mark_twins(rows)
    owed = [r for r in buggy if r.get("twin_exit") == 0]
    lines = [
        f"- runs: {len(rows)} ({len(correct)} correct, {len(buggy)} buggy)",
        f"- correct runs that refine: {sum(r['exit'] == 0 for r in correct)} / {len(correct)}; "
        f"correct programs refining in every mode checked: {sum(all(v) for v in by_prog.values())} / {len(by_prog)}",
        f"- buggy runs rejected (exit 1): {sum(r['exit'] == 1 for r in buggy)} / {len(buggy)}; "
        f"located within {NEAR} lines of # BUG: {sum(bool(r.get('located')) for r in buggy)}",
        f"- buggy runs accepted (exit 0): {sum(r['exit'] == 0 for r in buggy)}",
        f"- buggy runs whose correct twin refines in that mode: {len(owed)}; of them rejected: "
        f"{sum(r['exit'] == 1 for r in owed)}, located: {sum(bool(r.get('located')) for r in owed)}",
        f"- buggy runs failing at the same operator as their (failing) correct twin: "
        f"{sum(bool(r.get('same_failure_as_twin')) for r in buggy)}",
        f"- misleading witness (confirmed on a correct program): {sum(bool(r.get('misleading_witness')) for r in correct)}",
    ]
    for lab, rs in (("correct", correct), ("buggy", buggy)):
        counts = {}
        for r in rs:
            counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
        lines.append(f"- {lab} outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    lines.append(f"- total wall time: {sum(r['seconds'] for r in rows):.0f} s")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--mode", choices=["forward", "joint"])
    ap.add_argument("--json", help="write the rows here (appended per run, so a partial run is kept)")
    ap.add_argument("--markdown", help="write the table and summary here")
    ap.add_argument("--reports", help="keep each check's output and JSON report in this directory")
    ap.add_argument("--rebuild", help="re-judge the rows of this JSON from --reports (no capture, no check)")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--mem-kb", type=int, default=6_000_000)
    ap.add_argument("--corpus", help="a corpus directory with its own manifest.py (default: this one)")
    args = ap.parse_args(argv)
    if args.rebuild:
        rows = rebuild(json.loads(Path(args.rebuild).read_text()), Path(args.reports), args.corpus)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
        print(summary(rows))
        if args.markdown:
            Path(args.markdown).write_text(markdown(rows) + "\n" + summary(rows))
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for e in load_entries(args.corpus):
            if args.names and e["name"] not in args.names and e["pair"] not in args.names:
                continue
            for mode in e["modes"]:
                if args.mode and mode != args.mode:
                    continue
                r = run_one(e, mode, args.timeout, args.mem_kb, Path(d), Path(args.reports) if args.reports else None)
                rows.append(r)
                print(f"{r['program']:38s} {mode:8s} exit={r['exit']!s:8s} {r['seconds']:6.1f}s "
                      f"located={r.get('located')!s:5s} {r['reason'][:110]}", flush=True)
                if args.json:
                    Path(args.json).write_text(json.dumps(rows, indent=1))
    print(summary(rows))
    if args.markdown:
        Path(args.markdown).write_text(markdown(rows) + "\n" + summary(rows))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
