"""Which assumptions a check rested on, and where (printed with the verdict).

No assumption is on unless the user wrote it (``[assume] name = true`` or ``--assume name``).  A
written assumption is used where a step of the check could rest on it: a lemma that needs it
(``Lemma.assumes``) matched while an operator was related, or while the outputs' certificates
were sought; ``same_rng`` coupled a random draw the bundle has no evidence for.  A lemma that
matched may not be in the proof that was extracted: the list is where the check *may* have
relied on the assumption, never less.
"""
from __future__ import annotations

from collections import Counter

from entangle_py.check.random import ASSUMPTION


def assumption_uses(checker, res) -> dict[str, list[str]]:
    """{written assumption: where it may have been used} (an empty list: nowhere)."""
    needs = {lem.name: lem.assumes for lem in checker.lib.lemmas if lem.assumes}
    uses: dict[str, list[str]] = {a: [] for a in checker.spec.assume}
    by_op = Counter()
    for node, stats in res.operators.items():
        lemmas = sorted(lem for lem, n in stats.get("lemmas", {}).items() if n and lem in needs)
        for lem, n in stats.get("lemmas", {}).items():
            by_op[lem] += n
        for a in uses:
            used = [lem for lem in lemmas if a in needs[lem]]
            if used:
                uses[a].append(f"relating {_where(checker, node)} (lemma {', '.join(used)})")
    late = sorted(lem for lem, n in checker.engine.matches.items() if lem in needs and n > by_op[lem])
    for a in uses:
        used = [lem for lem in late if a in needs[lem]]
        if used:
            uses[a].append(f"the outputs' certificates (lemma {', '.join(used)})")
    if ASSUMPTION in uses:
        uses[ASSUMPTION] += [f"coupling the random draw {d['draw']}" + (f" at {_at(d['source'])}" if d["source"] else "")
                             for d in res.random_draws if d["basis"] == ASSUMPTION]
    return uses


def _where(checker, node: str) -> str:
    n = checker.seq.node(node) if checker.seq.has(node) else None
    return node + (f" at {n.source.file}:{n.source.line}" if n is not None and n.source else "")


def _at(source: str) -> str:
    return source.split(" in ", 1)[0]
