"""Do the two public entry points agree on every program corpus entry?  ``entangle_py.testing.
assert_refines`` (capture both programs, check) against ``entangle check``'s exit code, which the
corpus tier saved per entry (tests/test_program_corpus.py: ``<pytest basetemp>/program_checks/``;
an entry no DIR has is checked through the CLI here).  Prints the entries where the exit codes
differ and a summary; exit 1 if any does.

    python benchmarks/agree_table.py --from-checks DIR [--workers 2] [ID...]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "corpus" / "programs"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from corpus import BY_ID, CORPUS  # noqa: E402
from program_table import check_entry, saved_check  # noqa: E402


def _assert_refines_exit(entry_id: str) -> tuple[str, int, float]:
    """assert_refines's verdict on one entry: its exit code (0 when it returns)."""
    from entangle_py.testing import assert_refines
    e = BY_ID[entry_id]
    t0 = time.perf_counter()
    try:
        res = assert_refines(e.script, world_size=e.world_size, spec=e.spec, joint=e.mode == "joint")
        code = res.exit_code
    except AssertionError as err:
        text = str(err)
        code = int(text.split("(exit ", 1)[1].split(")", 1)[0]) if "(exit " in text else -1
    except Exception:  # noqa: BLE001 - a crash is a disagreement, shown as -1
        code = -1
    return entry_id, code, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ids", nargs="*")
    ap.add_argument("--from-checks", nargs="+", default=[], metavar="DIR")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    entries = [BY_ID[i] for i in args.ids] if args.ids else CORPUS
    cli = {}
    with tempfile.TemporaryDirectory() as tmp:
        for e in entries:
            r = saved_check(e, args.from_checks) if args.from_checks else None
            cli[e.id] = (r if r is not None else check_entry(e, tmp))["exit"]
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(args.workers) as pool:
        got = {i: (c, s) for i, c, s in pool.imap_unordered(_assert_refines_exit, [e.id for e in entries])}
    differ = [(i, cli[i], got[i][0]) for i in cli if cli[i] != got[i][0]]
    print("| entry | entangle check | assert_refines |\n|---|---|---|")
    for i, a, b in differ:
        print(f"| {i} | {a} | {b} |")
    print(f"\n{len(entries) - len(differ)}/{len(entries)} entries agree; assert_refines took "
          f"{time.perf_counter() - t0:.0f} s wall on {args.workers} workers")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
