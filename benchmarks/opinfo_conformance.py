"""Conformance of the lowering with torch on torch's OpInfo database.

For every OpInfo in ``op_db`` whose traced ATen graph has a node the lowering accepts (does not
refuse), trace its samples (float64, and int64 / bool where the OpInfo supports them), lower
every node and compare the lowered term's meaning with the node's real value.  Prints a table
(op, samples, agree, refused, opaque, disagree, error) and every disagreement.  Each OpInfo with
an in-place variant (``add_``) also has a row ``<op> (in place)``: the variant traced as it is and
made functional by entangle's own pass (frontend/functionalize.py, the one imported graphs go
through), its writes compared with the eager call's (``--no-inplace``: without these rows).

    python benchmarks/opinfo_conformance.py [--ops div,sub] [--max-samples 20] [--inplace-only]

Exit status 1 when any sample disagrees.  See ``tests/tooling/conformance.py`` for the verdicts.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))  # tooling

import torch  # noqa: E402

from tooling import conformance as C  # noqa: E402

PROBE = 3          # samples traced to decide whether the lowering accepts anything of an op


def select(op_db, names):
    if not names:
        return list(op_db)
    want = {n.strip() for n in names.split(",") if n.strip()}
    return [o for o in op_db if o.name in want or C.opinfo_name(o) in want]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", default="", help="comma-separated OpInfo names (name or name.variant)")
    ap.add_argument("--max-samples", type=int, default=12, help="samples per op and dtype, most novel first (0: all)")
    ap.add_argument("--float-only", action="store_true", help="float64 samples only")
    ap.add_argument("--show-errors", action="store_true", help="also print samples that failed to trace/run")
    ap.add_argument("--by-target", action="store_true", help="also print node verdicts per ATen target")
    ap.add_argument("--all", action="store_true", help="table rows also for ops the lowering refuses entirely")
    ap.add_argument("--no-inplace", action="store_true", help="no rows for the in-place variants")
    ap.add_argument("--inplace-only", action="store_true", help="only the rows of the in-place variants")
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    t0 = time.time()
    from torch.testing._internal.common_methods_invocations import op_db
    ops = select(op_db, a.ops)
    dtypes = (torch.float64,) if a.float_only else (torch.float64,) + C.EXTRA_DTYPES
    cap = a.max_samples or None
    results, skipped = [], 0
    variants = [(op, inplace) for op in ops for inplace in (False, True)
                if (not inplace or (op.inplace_variant is not None and not a.no_inplace))
                and (inplace or not a.inplace_only)]
    for op, inplace in variants:
        if not a.ops and not a.all and not C.accepts_any(op, PROBE, inplace=inplace):
            skipped += 1
            continue
        r = C.run_opinfo(op, cap, dtypes, inplace=inplace)
        if r.accepts or a.all or a.ops:
            results.append(r)
        else:
            skipped += 1

    cols = ("samples", "agree", "refused", "opaque", "disagree", "error")
    w = max([len(r.name) for r in results] + [10])
    print(f"{'op':<{w}} " + " ".join(f"{c:>8}" for c in cols))
    tot = defaultdict(int)
    for r in results:
        row = {"samples": len(r.samples), **{k: r.count(k) for k in cols[1:]}}
        for k, v in row.items():
            tot[k] += v
        flag = "  <-- DISAGREE" if row["disagree"] else ""
        print(f"{r.name:<{w}} " + " ".join(f"{row[c]:>8}" for c in cols) + flag)
    print(f"{'TOTAL':<{w}} " + " ".join(f"{tot[c]:>8}" for c in cols))
    print(f"\n{len(results)} OpInfos (or in-place variants) with a node the lowering accepts; {skipped} refused "
          f"entirely (not shown); "
          f"{time.time() - t0:.0f} s")

    print("\nDisagreements (op | sample | node: what differed | lowered term):")
    n = 0
    for r in results:
        for desc, v in r.samples:
            for nv in v.disagreements:
                n += 1
                print(f"  {r.name} | {desc} | {nv.node} ({nv.target}): {nv.why} | {nv.term[:160]}")
    if not n:
        print("  none")
    if a.show_errors:
        print("\nErrors (op | sample | why):")
        for r in results:
            for desc, v in r.samples:
                if v.kind == "error":
                    print(f"  {r.name} | {desc} | {v.why}")
    if a.by_target:
        per = defaultdict(lambda: defaultdict(int))
        for r in results:
            for _, v in r.samples:
                for nv in v.nodes:
                    per[nv.target][nv.kind] += 1
        kinds = C.NODE_KINDS
        tw = max([len(t) for t in per] + [10])
        print(f"\n{'ATen target':<{tw}} " + " ".join(f"{k:>8}" for k in kinds))
        for t in sorted(per):
            print(f"{t:<{tw}} " + " ".join(f"{per[t][k]:>8}" for k in kinds))
    return 1 if tot["disagree"] else 0


if __name__ == "__main__":
    sys.exit(main())
