"""Lemmas as data: a rewrite, its side condition, and generators of concrete instances.

A lemma ``lhs => rhs when conds`` is an egglog rewrite over the term language of ``terms``.  The
same text is evaluated with torch by the test-suite: ``instances(rng)`` yields variable bindings
for which the condition must hold and both sides must agree numerically; ``rejects(rng)`` yields
bindings that violate the condition (the condition must say so).  Lemmas live in ``lemmas/``,
one module per operator family, each exporting ``LEMMAS`` (and optionally ``RULES``: plain egglog
rules such as shape propagation, with a ``check`` of their own).
"""
from __future__ import annotations

import importlib
import importlib.util
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from entangle_py.semantics import terms
from entangle_py.config import ASSUMPTIONS
from entangle_py.errors import InputError

LEMMA_FAMILIES = ("movement", "elementwise", "linalg", "reduction", "collective", "shapes", "indexing", "arith",
                  "positions")



@dataclass(frozen=True)
class Lemma:
    name: str
    lhs: str
    rhs: str
    when: tuple = ()
    instances: Callable[[random.Random], Iterable[dict]] | None = None
    rejects: Callable[[random.Random], Iterable[dict]] | None = None
    family: str = ""
    assumes: tuple = ()      # names in ASSUMPTIONS: active only when the spec enables them all
    # Extra egglog facts that must all match for the lemma to fire (a multi-pattern trigger).
    # With a trigger the lemma is the rule ``trigger + when => (union lhs rhs)``: lhs need not be
    # in the e-graph (it is created), and the numeric check is the same (lhs vs rhs on instances).
    trigger: tuple = ()

    @property
    def ruleset(self) -> str:
        """``walks`` for a lemma that walks a helper list (map_*, zip_*, ...: its left side builds a
        list, not a tensor): walks run to a fixpoint inside each lemma step, so a list of P parts
        costs one step, not P.  Every walk shortens its list, so the fixpoint is reached."""
        head = self.lhs.lstrip("(").split()[0].rstrip(")")
        c = terms.BY_NAME.get(head)
        return "walks" if c is not None and c.sort != "T" else "lemmas"

    def egglog(self, ruleset: str) -> str:
        if self.trigger:
            if any(c.startswith("(dle ") for c in self.when):
                raise ValueError(f"lemma {self.name}: size comparisons (dle) are not supported with a trigger")
            facts = " ".join(tuple(self.trigger) + tuple(self.when))
            return f"(rule ({facts}) ((union {self.lhs} {self.rhs})) :ruleset {ruleset})"
        when = f" :when ({' '.join(self.when)})" if self.when else ""
        out = f"(rewrite {self.lhs} {self.rhs}{when} :ruleset {ruleset})"
        # a size comparison (dle a b) is first asked; egglog or Z3 (dims.py) answers provable ones
        asks = [c for c in self.when if c.startswith("(dle ")]
        if asks:
            rest = " ".join(c for c in self.when if not c.startswith("(dle "))
            acts = " ".join("(ask_le " + c[len("(dle "):] for c in asks)
            out += f"\n(rule ((= __lhs {self.lhs}) {rest}) ({acts}) :ruleset {ruleset})"
        return out

    def condition_holds(self, env: dict) -> bool:
        return all(bool(terms.evaluate(terms.parse_sexpr(c), env)) for c in self.when)

    def sides(self, env: dict):
        return (terms.evaluate(terms.parse_sexpr(self.lhs), env),
                terms.evaluate(terms.parse_sexpr(self.rhs), env))


@dataclass(frozen=True)
class Rule:
    """A plain egglog rule (e.g. shape propagation).  ``check_terms(rng)`` yields (term, env): the
    test inserts the term, runs the rules, and compares every derived ``dim`` with torch; or
    (term, env, facts): each egglog fact must hold exactly when torch says it is true (see
    lemmas/_instances/__init__.py).  Every rule has a check (tests/test_lemmas.py)."""
    name: str
    text: str
    family: str = ""
    check_terms: Callable[[random.Random], Iterable[tuple[str, dict]]] | None = None


@dataclass
class Library:
    lemmas: list[Lemma] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)

    def egglog(self, assume=()) -> str:
        """Rules (ruleset ``shapes``) and lemmas (ruleset ``lemmas``), declared by terms.

        A lemma resting on assumptions is included only when every one of them is in ``assume``."""
        out = [r.text for r in self.rules]
        out += [lem.egglog(lem.ruleset) for lem in self.lemmas if set(lem.assumes) <= set(assume)]
        return "\n".join(out)


def _from_module(mod, family: str, lib: Library):
    for lem in getattr(mod, "LEMMAS", []):
        lib.lemmas.append(Lemma(**{**lem.__dict__, "family": family}))
    for rule in getattr(mod, "RULES", []):
        lib.rules.append(Rule(**{**rule.__dict__, "family": family}))


def load_library(extra_files: Iterable[str] = ()) -> Library:
    """The built-in lemma families, plus lemma files given by the user (``--lemmas F.py``)."""
    lib = Library()
    for family in LEMMA_FAMILIES:
        _from_module(importlib.import_module(f"lemmas.{family}"), family, lib)
    for path in extra_files:
        p = Path(path)
        if not p.is_file():
            raise InputError(f"lemma file {path} does not exist")
        spec = importlib.util.spec_from_file_location(f"entangle_user_lemmas_{p.stem}", p)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)   # the user's own code, given on the command line
        _from_module(mod, p.stem, lib)
    for lem in lib.lemmas:
        unknown = set(lem.assumes) - set(ASSUMPTIONS)
        if unknown:
            raise InputError(f"lemma {lem.name} assumes {sorted(unknown)}, which are not known assumptions "
                             f"({', '.join(sorted(ASSUMPTIONS))})")
    names = [lem.name for lem in lib.lemmas]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise InputError(f"duplicate lemma names: {sorted(dup)}")
    return lib
