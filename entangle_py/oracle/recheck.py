"""A numeric second opinion on every verdict (issue 12): the interpreter runs both programs.

* **Re-check after "refines"** (``recheck``): random float64 inputs for G_s (token ids inside the
  tables they index; symbolic sizes instantiated with small values inside their ranges and
  guards), distributed to the ranks through the input relation (the spec's, plus the inferred
  one); G_s and every rank of G_d run with simulated collectives; every certificate (a clean term
  over G_d leaves) is evaluated with ``terms.evaluate`` and compared with G_s's output, every
  expectation that holds is evaluated through its relation.  A disagreement makes the result
  exit 4 ("internal soundness error") naming the first G_s operator, in topological order, whose
  own per-operator relation (``Result.op_relations``) disagrees numerically with its G_s value:
  the proof step (lemma or lowering) that went wrong is at or just before it.
* **Witness after "fails"** (``witness``): the same runs; the failing G_s tensor is compared with
  what the distributed program *holds* -- every G_d tensor of its shape on every rank, and the
  clean terms over the ranks' tensors of one name (concat along a dim, sum over ranks).  The best
  (dirty) term is evaluated too, but only reported: a dirty term such as
  ``add(sum(r0.x, r1.x), bias)`` may equal the G_s value while no rank computes it (the missing
  all-reduce).  The checked outputs are compared through their [expect] relation (or, without
  one, rank 0's output, the concat along a dim and the sum over ranks).  Verdict: *numerically
  equal* when every checked output agrees on every draw (naming a held candidate for the failing
  tensor if there is one); otherwise *confirmed*, located at the failing operator (its rank-0
  tensor of the same name) when no rank holds its value, else at the first differing output.

Random draws are sampled as oracle/draws.py says: a rank's draw from a PRNG keyed by its
position in its rank's stream (identical positions, identical samples), a sequential draw as its
coupling's term over the ranks' samples -- or, with none, from a PRNG of its own, in which case a
failure computed from it is not decided numerically (independent draws differ whether or not the
program is right).

This module: the entry points (``attach``, ``refuter``) and printing; ``numeric_runs.py`` runs
the programs and compares values, ``proof_recheck.py`` and ``witness.py`` are the two checks.
"""
from __future__ import annotations

import time

from entangle_py.lazy import torch
from entangle_py.semantics.terms import EvalError
from entangle_py.oracle.numeric_runs import (DEFAULT_BUDGET, DEFAULT_DRAWS, Draw, Skip, compare, diff_text, finite,
                                            fmt_bytes, prepare)
from entangle_py.oracle.proof_recheck import recheck
from entangle_py.oracle.witness import uncoupled_draws, witness


# ----------------------------------------------------------------------------- entry point

def attach(res, checker, draws: int = DEFAULT_DRAWS, budget_bytes: int = DEFAULT_BUDGET, seed: int = 0):
    """Run the re-check (refines) or the witness (fails) and store it in ``res.numeric``; a
    re-check disagreement turns ``res`` into an internal soundness error (exit 4)."""
    t0 = time.perf_counter()
    if res.status == "refines":
        res.numeric = recheck(checker, res, draws=draws, budget_bytes=budget_bytes, seed=seed)
    elif res.status == "fails":
        res.numeric = witness(checker, res, draws=draws, budget_bytes=budget_bytes, seed=seed)
    else:
        return None
    res.timings["numeric"] = time.perf_counter() - t0
    return res.numeric


def refuter(draws: int = DEFAULT_DRAWS, budget_bytes: int = DEFAULT_BUDGET, seed: int = 0):
    """The checker's numeric refuter (``Checker(refute=...)``): ``refute(checker, node, text)`` is a
    concrete difference between the G_s tensor ``node`` and the clean term ``text`` over the ranks'
    tensors, on the witness's own draws, or None.  Refuted only on a real difference: on every draw
    the values differ as :func:`compare` decides (the witness's tolerance), with every value finite
    (where inf or nan arises, IEEE and exact arithmetic part: x + 0.0 = x); None whenever the
    values cannot be computed.  The programs run once per check, when first asked."""
    runs = None

    def refute(checker, node: str, text: str) -> str | None:
        nonlocal runs
        if uncoupled_draws(checker, [node]):     # its values differ from any rank's by chance
            return None
        if runs is None:
            try:
                sizes, _ = prepare(checker, budget_bytes)
                runs = [Draw(checker, seed + d, sizes) for d in range(draws)]
            except Skip:
                runs = []
        diffs = []
        for run in runs:
            expected = run.seq_env.get(node)
            try:
                got = run.eval(text)
            except EvalError:
                return None
            if not (isinstance(expected, torch.Tensor) and isinstance(got, torch.Tensor)
                    and finite(expected) and finite(got)):
                return None
            c = compare(expected, got)
            if c["equal"]:
                return None
            diffs.append(c)
        if not diffs:
            return None
        e = diffs[0]["examples"][:1]
        at = f" (at {e[0]['index']}: expected {e[0]['expected']}, got {e[0]['got']})" if e else ""
        return f"differs on {len(diffs)} random draws: {diff_text(diffs[0])}{at}"
    return refute


# ----------------------------------------------------------------------------- printing

def plain(console, text, **kw):
    """Print text as it is: a program's code (``g = grad[a:b]``) is not rich markup."""
    kw.setdefault("highlight", False)
    console.print(text, markup=False, **kw)


def print_numeric(num: dict, console, verbose: bool = False):
    if not num:
        return
    if num["kind"] == "recheck":
        if num["status"] == "agrees":
            plain(console, f"  re-check: the interpreter agrees on {num['draws']} draws "
                           f"({', '.join(num['checked']) or 'no certificate'})", soft_wrap=True)
        elif num["status"] == "disagrees":
            op = num.get("operator")
            if num.get("output"):
                plain(console, f"  re-check: the interpreter DISAGREES at output {num['output']} = {num['relation']} "
                               f"({diff_text(num['diff'])})", soft_wrap=True)
            else:
                plain(console, "  re-check: the interpreter DISAGREES with a per-operator relation (the outputs' "
                               "certificates agree)", soft_wrap=True)
            if op:
                plain(console, f"  first operator whose relation fails numerically: {op['node']} = {op['target']}"
                               f"  [{op['relation']}]", soft_wrap=True)
            _examples(console, (op or num)["diff"])
        else:
            plain(console, f"  re-check skipped: {num.get('reason')}", soft_wrap=True)
    else:
        if num["status"] == "skipped":
            plain(console, f"  numeric witness skipped: {num.get('reason')}", soft_wrap=True)
        else:
            plain(console, f"  numeric witness: {num['verdict']}", soft_wrap=True)
            if num["status"] == "confirmed":
                _examples(console, num["diff"])
            for loc in num.get("output_sources", ()):
                plain(console, f"    the distributed program computes it at {loc['file']}:{loc['line']} "
                               f"(rank {loc['rank']} {loc['node']}): {loc.get('code') or ''}",
                               soft_wrap=True)
            if num.get("unsound"):
                op = num["unsound"].get("operator")
                plain(console, "  and a relation the proof found is numerically false: "
                               + (f"{op['node']} = {op['relation']}" if op else
                                  f"output {num['unsound'].get('output')} = {num['unsound'].get('relation')}"),
                               soft_wrap=True)
    if verbose:
        plain(console, f"  numeric check: {num.get('seconds', 0):.3f} s, {num.get('draws', 0)} draws"
                       + (f", estimated {fmt_bytes(num['estimated_bytes'])}" if "estimated_bytes" in num else ""),
                       soft_wrap=True)


def _examples(console, diff: dict):
    for e in diff.get("examples", [])[:3]:
        plain(console, f"    at {e['index']}: expected {e['expected']}, got {e['got']}", soft_wrap=True)
