"""The work a check reports (``work`` in the JSON report) and the limits that bound it.

Counts are deterministic (a rerun gives the same), search times are egglog's own; limits end an
operator's attempt with a named reason, never a crash or a second pass over every fact."""
import time

import pytest

from entangle_py.config import Limits
from entangle_py.engine import egraph as E
from entangle_py.lemmas import load_library
from entangle_py.pipeline import check_files
from conftest import shipped_example

LIB = load_library()


def test_egglog_search_time_scale():
    """egglog's per-rule search time, scaled by EGGLOG_TIME_SCALE, is the time the run took (one
    slow rule: every pair of 1500 numbers)."""
    eg = E.bindings.EGraph()
    prog = "(datatype Q (N i64) (P Q Q))\n(ruleset slow)\n(rule ((= a (N i)) (= b (N j)) (< i j)) ((P a b)) :ruleset slow)\n"
    eg.run_program(*eg.parse_program(prog + "\n".join(f"(N {i})" for i in range(1500))))
    t0 = time.perf_counter()
    out = eg.run_program(*eg.parse_program("(run-schedule (run slow))"))
    wall = time.perf_counter() - t0
    reported = sum(t.total_seconds() for t in out[0].report.search_and_apply_time_per_rule.values())
    assert 0.2 * wall <= reported * E.EGGLOG_TIME_SCALE <= 1.1 * wall, (reported, wall)


def test_work_is_reported_and_deterministic():
    seq, dist, spec = shipped_example("mlp_tp4_joint")
    runs = [check_files(seq, dist, spec, numeric=False)[0] for _ in range(2)]
    a, b = (r.work for r in runs)
    assert runs[0].status == "refines"
    assert a["peak_enodes"] > 0 and a["lemma_steps"] > 0 and a["matches"] == sum(a["matches_by_family"].values())
    assert set(a["matches_by_family"]) <= {lem.family for lem in LIB.lemmas}
    assert {k: a[k] for k in ("peak_enodes", "lemma_steps", "matches", "matches_by_family")} == \
           {k: b[k] for k in ("peak_enodes", "lemma_steps", "matches", "matches_by_family")}
    assert set(a["seconds_by_family"]) <= {x.family for x in [*LIB.lemmas, *LIB.rules]} | {"engine"}


@pytest.mark.parametrize("flag, value, reason", [
    ("--max-matches", "1", "1 rule matches per operator"),
    ("--max-memory", "1M", "1 MB of memory (--max-memory)"),
    ("--max-enodes", "50", "50 e-nodes"),
])
def test_a_limit_ends_the_check_at_an_operator(entangle, flag, value, reason):
    """Limits in deterministic units, and memory: exit 3 naming the limit and the operator where it
    was hit, after that operator's one attempt (no second pass keeping every fact)."""
    seq, dist, spec = shipped_example("mlp_tp2")
    r = entangle("check", seq, dist, "--spec", spec, flag, value, "--no-numeric")
    assert r.returncode == 3, r.stdout + r.stderr
    assert f"limit: {reason}" in r.stdout and "stopped at: " in r.stdout, r.stdout
    assert "Traceback" not in r.stderr


def test_cli_refuses_a_bad_memory_limit(entangle):
    seq, dist, spec = shipped_example("mlp_tp2")
    r = entangle("check", seq, dist, "--max-memory", "lots")
    assert r.returncode == 2 and "not a byte count" in r.stderr


def test_bulk_loaded_facts_are_the_commands_facts():
    """G_d definitions and leaf facts loaded as rows (Engine._bulk_load) are the facts the
    commands state: each definition's term is in its leaf's e-class, sizes, dtypes and peers are
    set; a definition the rows cannot carry (a global, an escaped string) stays a command."""
    defs = ['(union (Gd "r0.v") (view (Gd "r0.a") (DCons (DLit 6) (DCons (DLit -1) (DNil)))))',
            '(union (Gd "r0.t") (transpose (Gd "r0.w") 0 1))',
            '(union (Gd "r0.s") (scalar "mul" (Gd "r0.t") "2.0"))',
            '(union (Gd "r0.b") (Gd "r0.s"))',
            '(union (Gd "r0.q") (cst "a\\"b" (DCons (DLit 2) (DNil)) "float32"))']
    facts = ['(set (ndim (Gd "r0.a")) 2)', '(set (dim (Gd "r0.a") 1) (DLit 3))',
             '(set (dtype (Gd "r0.a")) "float32")', '(peer (Gd "r0.a") (Gd "r1.a"))']
    eng = E.Engine(LIB)
    assert [c for c in defs + facts if E._form(c) is None and not E._LEAF_FACT.fullmatch(c)] == defs[-1:]
    eng.add(*defs, *facts)
    eng.flush()
    for c in defs:
        assert eng.holds(f"(= {c[len('(union '):c.index(') ') + 1]} {c[c.index(') ') + 2:-1]})"), c
    assert eng.holds('(= (dim (Gd "r0.a") 1) (DLit 3))') and eng.holds('(= (ndim (Gd "r0.a")) 2)')
    assert eng.holds('(= (dtype (Gd "r0.a")) "float32")') and eng.holds('(peer (Gd "r0.a") (Gd "r1.a"))')
    assert eng.size() < 60      # the rows are not e-nodes
    eng.reset()                  # a form declared after the reset's push is declared again
    eng.add(defs[1])
    eng.flush()
    assert eng.holds('(= (Gd "r0.t") (transpose (Gd "r0.w") 0 1))')


def test_default_memory_limit_respects_ulimit():
    """Under ``ulimit -v`` the default --max-memory is a fraction of what the process may map, not
    of the machine: a check hitting it ends with exit 3 instead of an allocation failure."""
    import subprocess
    import sys
    code = ("import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30));"
            "from entangle_py.config import Limits; print(Limits().memory_bytes())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert 0 < int(out.stdout) <= 3 << 29
