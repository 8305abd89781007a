"""Mutation harness: mutate every correct example's distributed graphs, label each mutant with the
interpreter, check it, and keep score (issue 12, item 3).

    python benchmarks/mutation_harness.py [--only NAME ...] [--per-kind 2] [--no-joint] [--json OUT]

For every correct shipped example (graphs/*, the missing-all-reduce twins excluded) and every
correct program of the soundness corpus (tests/corpus/soundness, captured forward and, where it has
parameters, joint): check the original, generate mutants (``tests/tooling/mutate.py``), label each on 2
float64 draws (equivalent iff the original's certificates and [expect] relations still hold),
and check each in a forked child with its address space capped (``--mem-budget``, default 3 GB
over the parent's) and ``Limits(seconds=20, nodes=200_000)``.  Two checks run at once.

Required: no non-equivalent mutant refines.  A refined mutant is also judged by its OWN
certificate, evaluated numerically: if that certificate is wrong the checker is unsound, whatever
the label.  Every offending mutant is saved under --save-dir with the command reproducing it.
Exit status: 1 if a non-equivalent mutant refined or a check ran out of memory / crashed /
overran, else 0.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "corpus"))
sys.path.insert(0, str(ROOT / "tests"))     # tooling: the mutant writer

import torch  # noqa: E402

from entangle_py.ir import graph as G  # noqa: E402
from tooling import isolated_check  # noqa: E402
from tooling import mutant_labels as ML  # noqa: E402
from tooling import mutate as M  # noqa: E402
from entangle_py.check import spec as S  # noqa: E402
from entangle_py.config import Limits  # noqa: E402

GRAPH_EXAMPLES = ["mlp_tp2", "mlp_tp2_dynamic", "mlp_tp2_joint", "mlp_tp4", "mlp_tp4_joint",
                  "seqpar_block_tp2", "attention_tp2", "vocab_embedding_tp2"]


def examples(joint=True, only=None):
    """(name, seq bundle, dist bundle, spec, spec path) of every correct example."""
    for name in GRAPH_EXAMPLES:
        if only and name not in only:
            continue
        d = ROOT / "graphs" / name
        yield name, G.load(d / "seq.pt"), G.load(d / "dist.pt"), S.load_spec(d / "spec.toml"), str(d / "spec.toml")
    from entangle_py.frontend.capture import CaptureError, capture
    from soundness.corpus import CORPUS
    for e in CORPUS:
        if e.label != "correct":
            continue
        for j in ((False, True) if joint else (False,)):
            name = e.name + ("_joint" if j else "")
            if only and name not in only:
                continue
            try:
                seq, dist = capture(e.script, 1, joint=j), capture(e.script, e.world_size, joint=j)
            except CaptureError:
                continue      # no parameter needs a gradient: no joint graph
            yield name, seq, dist, S.load_spec(e.spec), e.spec


def run_example(name, seq, dist, spec, spec_path, args, findings, rows, skipped):
    limits = Limits(seconds=args.seconds, nodes=args.nodes)
    t0 = time.perf_counter()
    orig = isolated_check.check_isolated(seq, dist, spec, limits, args.mem_budget, args.timeout)
    certs = orig.get("certificates") or {}
    try:
        dws = ML.draws(seq, dist, spec, n=args.draws)
    except Exception as e:
        print(f"{name}: cannot draw inputs ({type(e).__name__}: {e}); skipped", flush=True)
        return
    if orig.get("exit") == 0:
        # the interpreter must agree with the original's own certificate, or its labels mean nothing
        lab, why = ML.label(seq, dist, spec, dist, dws, certs)
        if lab != ML.EQUIVALENT:
            print(f"{name}: SKIPPED, the interpreter disagrees with the original's own certificate ({lab}: {why}); "
                  f"its simulation of this program cannot label mutants", flush=True)
            skipped.append((name, f"{lab}: {why}"))
            return
    muts = M.mutants(dist, per_kind=args.per_kind)
    todo = []
    for i, mu in enumerate(muts):
        lab, why = ML.label(seq, dist, spec, mu.bundle, dws, certs if orig.get("exit") == 0 else None)
        rec = {"example": name, "i": i, "kind": mu.kind, "desc": mu.desc, "label": lab, "why": why}
        rows.append(rec)
        if lab != ML.INVALID:
            todo.append((rec, mu))
    # two checks at a time, each in its own memory-capped child
    running = []
    while todo or running:
        while todo and len(running) < args.jobs:
            rec, mu = todo.pop(0)
            running.append((rec, mu, isolated_check.start_check(seq, mu.bundle, spec, limits, args.mem_budget)))
        still = []
        for rec, mu, h in running:
            out = isolated_check.poll_check(h, args.timeout)
            if out is None:
                still.append((rec, mu, h))
                continue
            rec.update(exit=out.get("exit"), status=out.get("status"), reason=out.get("reason", ""),
                       seconds=round(out.get("seconds", 0.0), 2), maxrss_mb=out.get("maxrss_mb"))
            if out.get("exit") == 0:
                _judge_refined(rec, seq, dist, spec, mu, dws, out.get("certificates") or {})
            bad = (rec["exit"] == 0 and rec["label"] == ML.NON_EQUIVALENT) or rec.get("own_certificate_wrong") \
                or rec["status"] in ("oom", "crash", "timeout") or rec["exit"] == 4
            if bad:
                _save(rec, seq, mu, spec_path, args.save_dir)
                findings.append(rec)
                print(f"  FINDING {name} #{rec['i']} {rec['kind']}: {rec['desc']} -> {rec['status']} "
                      f"({rec['label']}; {rec.get('reason') or rec.get('why')})", flush=True)
        running = still
        if running:
            time.sleep(0.05)
    n = sum(1 for r in rows if r["example"] == name)
    print(f"{name}: original exit {orig.get('exit')} ({orig.get('status')}), {n} mutants, "
          f"{time.perf_counter() - t0:.1f} s", flush=True)


def _judge_refined(rec, seq, dist, spec, mu, dws, certs):
    """A refined mutant: its own certificates and the [expect] relations, evaluated numerically."""
    from entangle_py.oracle import interp
    for d in dws:
        env = interp.run_bundle(mu.bundle, [{k: ML._clone(v) for k, v in x.items()} for x in d.dist_inputs],
                                float_dtype=torch.float64)
        ok, why = ML.relations_hold(seq, mu.bundle, spec, d.seq_values, interp.named_values(mu.bundle, env),
                                   certs, None)
        if not ok:
            rec["own_certificate_wrong"] = why
            return
    if rec["label"] == ML.NON_EQUIVALENT:
        # the checker found another relation, and it holds numerically: the label was too strict
        rec["label_note"] = ("labelled non-equivalent (the original's relations fail) but refined with a certificate "
                             "that holds numerically: relabelled equivalent")
        rec["label"] = ML.EQUIVALENT


def _save(rec, seq, mu, spec_path, save_dir):
    d = Path(save_dir) / f"{rec['example']}_{rec['i']}_{rec['kind']}"
    d.mkdir(parents=True, exist_ok=True)
    G.save(seq, d / "seq.pt")
    G.save(mu.bundle, d / "dist.pt")
    (d / "spec.toml").write_text(Path(spec_path).read_text())
    (d / "MUTANT.txt").write_text(f"{rec['example']}: {rec['desc']}\nlabel {rec['label']} {rec.get('why', '')}\n"
                                  f"verdict {rec.get('status')} exit {rec.get('exit')} {rec.get('reason', '')}\n")
    rec["repro"] = (f"cd {ROOT} && python -m entangle_py check {d}/seq.pt {d}/dist.pt --spec {d}/spec.toml "
                    f"--max-seconds 20 --max-enodes 200000")


COLS = ["gen", "inval", "noneq", "ne:1", "ne:2", "ne:3", "ne:ref", "eq", "eq:ref", "eq:rej", "oom/crash"]


def _cells(rs):
    valid = [r for r in rs if r["label"] != ML.INVALID]
    ne = [r for r in valid if r["label"] == ML.NON_EQUIVALENT]
    eq = [r for r in valid if r["label"] == ML.EQUIVALENT]
    return [len(rs), len(rs) - len(valid), len(ne),
            sum(r.get("exit") == 1 for r in ne), sum(r.get("exit") == 2 for r in ne),
            sum(r.get("exit") == 3 for r in ne), sum(r.get("exit") == 0 for r in ne),
            len(eq), sum(r.get("exit") == 0 for r in eq), sum(r.get("exit") not in (0, None) for r in eq),
            sum(r.get("status") in ("oom", "crash", "timeout") for r in valid)]


def table(rows, key):
    groups = defaultdict(list)
    for r in rows:
        groups[r[key]].append(r)
    w = max([len(k) for k in groups] + [10])
    lines = [f"{key:<{w}} " + " ".join(f"{c:>9}" for c in COLS)]
    for k in sorted(groups):
        lines.append(f"{k:<{w}} " + " ".join(f"{c:>9}" for c in _cells(groups[k])))
    lines.append(f"{'TOTAL':<{w}} " + " ".join(f"{c:>9}" for c in _cells(rows)))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", help="example names (graphs/<name>, corpus entry[_joint])")
    ap.add_argument("--per-kind", type=int, default=2, help="sites per mutation kind (default 2)")
    ap.add_argument("--draws", type=int, default=2)
    ap.add_argument("--no-joint", action="store_true", help="corpus programs forward only")
    ap.add_argument("--seconds", type=float, default=20.0, help="checker limit per G_s operator")
    ap.add_argument("--nodes", type=int, default=200_000, help="checker e-graph size limit")
    ap.add_argument("--mem-budget", type=float, default=3.0, help="GB of address space per check over the parent's")
    ap.add_argument("--timeout", type=float, default=600.0, help="wall seconds before a check is killed")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--save-dir", default="/tmp/entangle-mutants")
    ap.add_argument("--json", help="write every mutant's record here")
    args = ap.parse_args(argv)
    args.mem_budget = int(args.mem_budget * (1 << 30))
    torch.set_num_threads(1)     # no OpenMP pool in the parent of forked checks
    t0 = time.perf_counter()
    rows, findings, skipped = [], [], []
    for name, seq, dist, spec, spec_path in examples(not args.no_joint, args.only):
        run_example(name, seq, dist, spec, spec_path, args, findings, rows, skipped)
    print()
    print("columns: gen generated; inval interpreter cannot run it (excluded); noneq non-equivalent, and of those "
          "ne:1/ne:2/ne:3 exit 1/2/3, ne:ref REFINED (must be 0); eq equivalent, eq:ref refined, eq:rej rejected "
          "(false alarms); oom/crash out of memory, crashed or overran the wall timeout")
    print()
    print(table(rows, "example"))
    print()
    print(table(rows, "kind"))
    eq_rej = [r for r in rows if r["label"] == ML.EQUIVALENT and r.get("exit") not in (0, None)]
    print(f"\nfalse alarms (equivalent mutants rejected): {len(eq_rej)} of "
          f"{sum(r['label'] == ML.EQUIVALENT for r in rows)}")
    for r in eq_rej:
        print(f"  {r['example']} #{r['i']} {r['kind']}: {r['desc']} -> exit {r['exit']} ({r.get('reason', '')[:90]})")
    notes = [r for r in rows if r.get("label_note")]
    for r in notes:
        print(f"  note {r['example']} #{r['i']} {r['kind']}: {r['desc']}: {r['label_note']}")
    ne_ref = [r for r in findings if r.get("exit") == 0]
    print(f"\nnon-equivalent mutants refined or refined with a wrong certificate: {len(ne_ref)}")
    for r in findings:
        print(f"  {r['example']} #{r['i']} {r['kind']}: {r['desc']}: {r.get('status')} exit {r.get('exit')} "
              f"{r.get('own_certificate_wrong') or r.get('reason', '')}\n    repro: {r.get('repro')}")
    for name, why in skipped:
        print(f"skipped {name}: the interpreter's run of the ORIGINAL program violates its certificate ({why})")
    secs = [r["seconds"] for r in rows if "seconds" in r]
    if secs:
        print(f"\nchecks: {len(secs)}, median {sorted(secs)[len(secs) // 2]:.2f} s, max {max(secs):.2f} s; "
              f"peak RSS max {max((r.get('maxrss_mb') or 0) for r in rows):.0f} MB; total {time.perf_counter() - t0:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
