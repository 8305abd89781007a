"""Capture and check every program of tests/corpus/programs/ and print a markdown table: program,
label, mode, verdict / exit code, failing operator and source line, seconds.

    python benchmarks/program_table.py [ID...]     # print the rows
    python benchmarks/program_table.py --write     # every entry, written into docs/corpus-results.md
    python benchmarks/program_table.py --write --from-checks DIR...   # the same, from the results
        the corpus tests saved (tests/test_program_corpus.py: <pytest basetemp>/program_checks/,
        one JSON per entry) instead of checking every entry again; an entry no DIR has is checked
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "corpus" / "programs"))

from corpus import BY_ID, CORPUS, bug_line  # noqa: E402

# The generated part of docs/corpus-results.md lies between these two lines.
DOC = ROOT / "docs" / "corpus-results.md"
BEGIN = "<!-- program-table: begin (python benchmarks/program_table.py --write) -->"
END = "<!-- program-table: end -->"

VERDICT = {0: "refines", 1: "fails", 2: "refused", 3: "limit", 4: "internal error"}


def check_entry(entry, tmp, captured=None):
    """Capture seq and dist and run ``entangle check``; returns a dict (exit, verdict, where, message, seconds).
    ``captured``: a dict keeping the sequential captures, reused by entries of the same program
    and mode at another world size (keyed by the program file's content)."""
    from entangle_py.ir import graph as G
    from entangle_py.frontend.capture import capture
    from entangle_py.cli import main
    t0 = time.perf_counter()
    joint = entry.mode == "joint"
    seq, dist, rep = (Path(tmp) / f"{entry.name}.{entry.mode}.{k}" for k in ("seq.pt", "dist.pt", "json"))
    out, err = io.StringIO(), io.StringIO()
    key = (hashlib.sha256(Path(entry.file).read_bytes()).hexdigest(), entry.script, joint)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            if captured is None or key not in captured:
                bundle = capture(entry.script, 1, joint=joint)
                if captured is not None:
                    captured[key] = bundle
            G.save(captured[key] if captured is not None else bundle, seq)
            G.save(capture(entry.script, entry.world_size, joint=joint), dist)
    except Exception as ex:   # noqa: BLE001 - a capture error is a row of the table
        msg = str(ex).splitlines()[0] if str(ex) else type(ex).__name__
        return {"exit": 2, "verdict": "capture error", "where": "", "message": msg[:300], "lines": [],
                "seconds": time.perf_counter() - t0, "text": msg}
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["check", str(seq), str(dist), "--spec", entry.spec, "--json", str(rep)])
    where, message, lines = "", "", []
    text = out.getvalue() + err.getvalue()
    if rep.exists():
        data = json.loads(rep.read_text())
        f = data.get("failure") or {}
        if f:
            src = (f.get("source") or "").replace("tests/corpus/programs/", "")
            where = f"`{f.get('node')}` ({f.get('target')}) at {src}"
        lines = _failure_lines(f, data.get("numeric") or {}, data.get("capture_notes") or [])
    if rc != 0 and not where:
        said = [ln.strip() for ln in text.splitlines() if ln.strip()]
        message = said[-1][:300] if said else ""
    return {"exit": rc, "verdict": VERDICT.get(rc, str(rc)), "where": where, "message": message,
            "lines": lines, "seconds": time.perf_counter() - t0, "text": text}


def _failure_lines(f: dict, numeric: dict, notes: list = ()) -> list[str]:
    """``file:line`` of the failing operator and of the distributed program's culprits (the G_d
    operator behind the best term, and the operator reading it), the plan entries of a DTensor
    program, where the program computes an output the numeric witness finds wrong, and the
    capture notes (what capture modelled, e.g. a stalled DDP reducer), as the report gives them."""
    locs = [f.get("location") or {}] + list(numeric.get("output_sources") or ())
    for c in f.get("culprits") or ():
        locs += [c.get("location") or {}, c.get("reader") or {}]
    locs += f.get("plans") or []
    locs += list(notes)
    out = []
    for loc in locs:
        if loc.get("file") and loc.get("line"):
            key = f"{Path(loc['file']).name}:{loc['line']}"
            if key not in out:
                out.append(key)
    return out


def distance_to_bug(entry, lines) -> int | None:
    """Lines between the bug line and the nearest reported location in the same file (None: no
    location in the bug's file)."""
    bug = bug_line(entry)
    if bug is None:
        return None
    file, line = bug.rsplit(":", 1)
    near = [abs(int(l.rsplit(":", 1)[1]) - int(line)) for l in lines if l.rsplit(":", 1)[0] == file]
    return min(near) if near else None


def saved_check(entry, dirs):
    """The result tests/test_program_corpus.py saved for ``entry`` in one of ``dirs`` (its
    ``checks_dir``: ``sha1(entry id).json``), or None."""
    name = hashlib.sha1(entry.id.encode()).hexdigest() + ".json"
    for d in dirs:
        if (Path(d) / name).exists():
            return json.loads((Path(d) / name).read_text())
    return None


def table(entries=None, from_checks=()):
    entries = list(entries or CORPUS)
    rows = []
    captured: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for e in entries:
            r = saved_check(e, from_checks) if from_checks else None
            if r is None:       # (an entry of the default run's sample: the corpus tier skips it)
                r = check_entry(e, tmp, captured)
            rows.append((e, r))
            print(f"  {e.id}: exit {r['exit']} ({r['seconds']:.1f} s)", file=sys.stderr)
    lines = ["| program | label | mode | ranks | verdict (exit) | expected | failing operator and source line | "
             "culprit lines (G_s, G_d) | bug line | s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for e, r in rows:
        want = 0 if e.label == "correct" else 1
        flag = "ok" if r["exit"] == want else ("**REFINES (soundness bug)**" if e.label == "buggy" and r["exit"] == 0 else "no")
        where = r["where"] or r["message"]
        where = where.replace("|", "\\|")
        lines.append(f"| {e.name} | {e.label} | {e.mode} | {e.world_size} | {r['verdict']} ({r['exit']}) | {flag} | {where} | "
                     f"{', '.join(r['lines'])} | {bug_line(e) or ''} | {r['seconds']:.1f} |")
    return "\n".join(lines), rows


def write_doc(path: Path, text: str) -> None:
    """Replace what lies between BEGIN and END in ``path`` by ``text``; the rest of the page is
    prose a person wrote and stays as it is."""
    doc = path.read_text()
    if doc.count(BEGIN) != 1 or doc.count(END) != 1 or doc.index(BEGIN) > doc.index(END):
        raise SystemExit(f"{path}: expected one {BEGIN!r} line followed by one {END!r} line")
    head, rest = doc.split(BEGIN)
    _, tail = rest.split(END)
    path.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ids", nargs="*", help="entry ids (default: every entry)")
    ap.add_argument("--write", action="store_true", help="write the table into docs/corpus-results.md")
    ap.add_argument("--from-checks", nargs="+", default=[], metavar="DIR",
                    help="read the corpus tests' saved results instead of checking again")
    args = ap.parse_args()
    if args.write and args.ids:
        raise SystemExit("--write regenerates the whole table: give no IDs")
    picked = [BY_ID[n] for n in args.ids] if args.ids else CORPUS
    write, dirs = args.write, args.from_checks
    text, rows = table(picked, dirs)
    ok = sum(1 for e, r in rows if r["exit"] == (0 if e.label == "correct" else 1))
    summary = f"{ok}/{len(rows)} as expected; {sum(r['seconds'] for _, r in rows):.0f} s total ({date.today()})"
    if dirs:
        summary += "; from the results the corpus tests saved (wall seconds under `pytest -n 2`)"
    if write:
        write_doc(DOC, f"{text}\n\n{summary}")
        print(f"wrote {len(rows)} rows to {DOC.relative_to(ROOT)}: {summary}")
    else:
        print(text)
        print(f"\n{summary}")
