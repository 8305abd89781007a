"""Lemmas as data: a rewrite and its side condition.

A lemma ``lhs => rhs when conds`` is an egglog rewrite over the term language of ``terms``.  The
same text is evaluated with torch by the test-suite on concrete instances (test tooling, kept out
of the package: tests/lemma_instances/, a registry by lemma name): bindings for which the
condition must hold and both sides must agree numerically, and bindings that violate the
condition (the condition must say so).  The library is data built on these classes in
``entangle_py/lemmas/`` (a layer above the engine, which never imports it): one module per operator
family, each exporting ``LEMMAS`` (and optionally ``RULES``: plain egglog rules such as shape
propagation, with a check of their own); ``entangle_py.lemmas.load_library`` gathers them into a
:class:`Library` the caller hands the engine.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from entangle_py.semantics import terms


@dataclass(frozen=True)
class Lemma:
    name: str
    lhs: str
    rhs: str
    when: tuple = ()
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
    """A plain egglog rule (e.g. shape propagation).  Every rule has a check by its name in
    tests/lemma_instances/registry/: terms whose derived shape facts must match torch."""
    name: str
    text: str
    family: str = ""


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
