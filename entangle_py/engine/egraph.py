"""The e-graph engine: one egglog e-graph, reused across the operator-by-operator loop.

Facts are egglog commands in text (parsed in small chunks: parsing one huge program is slow).
A G_d tensor is the leaf ``(Gd "r<rank>.<node>")``; every tensor the checker inserts is an e-class
bound to a global ``$v<k>``.  ``prove_clean`` runs the lemmas step by step until the target's e-class holds a clean
term (early stop) or a limit is hit; ``extract`` returns the best term, clean or not.
"""
from __future__ import annotations

import os
import re
import time
from collections import Counter
from dataclasses import dataclass

from entangle_py.semantics import terms
from entangle_py.engine.dims import DimSolver
from entangle_py.config import Limits
from entangle_py.engine.lemma import Library


def _egglog_bindings():
    """egglog's compiled core (``egglog.bindings``), loaded without the egglog package's Python
    front end, which the engine does not use and which costs most of a check's start-up (it
    imports a code formatter, among others).  Once loaded it is the package's own submodule."""
    import importlib.machinery
    import importlib.util
    import sys
    if "egglog.bindings" in sys.modules:
        return sys.modules["egglog.bindings"]
    package = importlib.util.find_spec("egglog")     # locates the package without running it
    for where in package.submodule_search_locations or ():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(where, "bindings" + suffix)
            if os.path.exists(path):
                spec = importlib.util.spec_from_file_location("egglog.bindings", path)
                module = importlib.util.module_from_spec(spec)
                sys.modules["egglog.bindings"] = module
                spec.loader.exec_module(module)
                return module
    from egglog import bindings       # another layout: the ordinary import
    return bindings


bindings = _egglog_bindings()

# One lemma step: every lemma once, then list walks and shape facts to a fixpoint, then which
# concat parts line up (ruleset zips: read by lemmas only, so once per step, not inside the
# shapes loop, where its rules were a few percent of a check's time), then cleanliness.
STEP = ("(run-schedule (run lemmas) (saturate (seq (run walks) (saturate (run shapes))))"
        " (saturate (run zips)) (saturate (run cleanliness)))")

CERTIFY = "(run-schedule (saturate (run shapes)) (saturate (run certify)))"
_UNREACHABLE = 10 ** 15   # extraction cost of a term a certificate may not contain

CHUNK = 24   # commands per parse: parsing cost grows faster than linearly with program size


@dataclass
class Outcome:
    status: str                 # 'clean' / 'reached' | 'saturated' | 'limit'
    iterations: int
    seconds: float
    limit: str | None = None    # which limit was hit


class EngineError(RuntimeError):
    """egglog refused a command: a bug in lowering or a lemma (e.g. mismatched sizes)."""


class Engine:
    def __init__(self, library: Library, assume=(), dims: DimSolver | None = None):
        self.eg = bindings.EGraph()
        self.pending: list[str] = []
        self.library = library
        # Z3 over the programs' symbolic sizes (their ranges and guards, given by the caller)
        self.dims = dims if dims is not None else DimSolver()
        self._dim_sizes = None
        self.assume = tuple(sorted(assume))     # assumptions whose lemmas are active
        self._run_commands(list(_split_commands(terms.declarations())))
        self._run_commands(list(_split_commands(library.egglog(self.assume))))
        self._asked_cmul, self._folded = None, set()
        self.run1("(push)")      # the empty e-graph with its rules compiled: reset() comes back here
        # lemma name -> egglog matches of its rule, summed over every lemma step (explain / reports)
        self.matches: Counter = Counter()
        self._rule_name = {_rule_key(part): lem.name for lem in library.lemmas
                           for part in lem.egglog(lem.ruleset).split("\n")}
        self._seen_rules: dict[str, str | None] = {}

    def reset(self):
        """Empty the e-graph, keeping declarations and rules (cheaper than a new one)."""
        self.pending = []
        self.run1("(pop)")
        self.run1("(push)")
        self.dims = self.dims.fresh()
        self._dim_sizes = None
        self._asked_cmul, self._folded = None, set()

    # -- commands ------------------------------------------------------------------------
    def _run_commands(self, commands: list[str]):
        for i in range(0, len(commands), CHUNK):
            chunk = "\n".join(commands[i:i + CHUNK])
            try:
                self.eg.run_program(*self.eg.parse_program(chunk))
            except bindings.EggSmolError as e:
                raise EngineError(f"egglog: {e.context if hasattr(e, 'context') else e}\nin:\n{chunk[:2000]}") from None

    def add(self, *commands: str):
        self.pending.extend(commands)

    def flush(self):
        if self.pending:
            cmds, self.pending = self.pending, []
            self._run_commands(cmds)

    def run1(self, command: str):
        self.flush()
        try:
            return self.eg.run_program(*self.eg.parse_program(command))
        except bindings.EggSmolError as e:
            raise EngineError(f"egglog: {e}\nin: {command[:500]}") from None

    # -- queries -------------------------------------------------------------------------
    def is_clean(self, var: str) -> bool:
        return self.holds(f"(clean {var})")

    def holds(self, fact: str) -> bool:
        """Whether the e-graph proves an egglog fact, e.g. ``(cert $v3)``."""
        self.flush()
        try:
            self.eg.run_program(*self.eg.parse_program(f"(check {fact})"))
            return True
        except bindings.EggSmolError:
            return False

    def equal(self, a: str, b: str) -> bool:
        self.flush()
        try:
            self.eg.run_program(*self.eg.parse_program(f"(check (= {a} {b}))"))
            return True
        except bindings.EggSmolError:
            return False

    def extract(self, var: str):
        """(cost, term) with term a parsed s-expression."""
        out = self.run1(f"(extract {var})")[0]
        return out.cost, _term_from_dag(out.termdag, out.term)

    def variants(self, var: str, n: int) -> list:
        """Up to ``n`` terms of ``var``'s e-class (parsed), as egglog's extraction lists them."""
        out = self.run1(f"(extract {var} {n})")[0]
        return [_term_from_dag(out.termdag, tid) for tid in out.terms]

    def certificate(self, var: str, leaves: set[str]):
        """(term, cost) of the cheapest *clean* term of ``var`` whose G_d leaves are all in
        ``leaves`` (keys like ``r0.out``), or None when the e-graph holds none.  egglog's own
        extraction cannot restrict leaves, so this one runs a cost model that prices every other
        leaf, every compute op and every G_s tensor out of reach."""
        self.flush()
        eg = self.eg
        clean_cost = {c.name: c.cost for c in terms.CONSTRUCTORS if c.clean}

        def enode_cost(name, args):
            if name == "Gd":
                return 1 if eg.value_to_string(args[0]) in leaves else _UNREACHABLE
            return clean_cost.get(name, _UNREACHABLE)

        def fold(_name, head, kids):
            return min(_UNREACHABLE, head + sum(kids))

        model = bindings.CostModel(fold, enode_cost, lambda _tp, _v, kids: sum(kids), lambda _tp, _v: 0)
        _, value = eg.eval_expr(bindings.Var(bindings.PanicSpan(), var))
        dag = bindings.TermDag()
        cost, tid = bindings.Extractor(["T"], eg, model).extract_best(eg, dag, value, "T")
        if cost >= _UNREACHABLE:
            return None
        return _term_from_dag(dag, tid), cost

    def table(self, name: str, limit: int = 1_000_000) -> list:
        """Rows of a relation or function as parsed terms ``(name, args...)``."""
        out = self.run1(f"(print-function {name} {limit})")[0]
        return [_term_from_dag(out.termdag, row[0]) for row in out.terms]

    def size(self) -> int:
        out = self.run1("(print-size)")[0]
        return sum(n for _, n in out.sizes)

    def sizes(self, names) -> tuple:
        out = dict(self.run1("(print-size)")[0].sizes)
        return tuple(out.get(n, 0) for n in names)

    # -- saturation ----------------------------------------------------------------------
    def settle(self):
        """Shape facts and the clean relation to a fixpoint (no lemma)."""
        for _ in range(8):   # symbolic sizes: Z3's answers can enable more shape facts
            self.run1("(run-schedule (saturate (run shapes)) (saturate (run zips)) (saturate (run cleanliness)))")
            if not self.side_step():
                break

    def side_step(self) -> bool:
        """Facts computed outside egglog for the questions rules asked: size comparisons and
        arithmetic (Z3, dims.py) and products of constants.  True if any was added."""
        return self._answer_dims() | self._fold_constants()

    def _answer_dims(self) -> bool:
        sizes = self.sizes(("dterm", "ask_le"))
        if sizes == self._dim_sizes:        # nothing new asked or built: skip the table reads
            return False
        self._dim_sizes = sizes
        added = self.dims.answer(self.table("dterm"), self.table("ask_le"))
        self.add(*added)
        return bool(added)

    def _fold_constants(self) -> bool:
        """Answer (ask_cmul a b) with (cmul a b) where the product is exact (terms.const_product)."""
        asked = self.sizes(("ask_cmul",))
        if asked == self._asked_cmul:       # nothing new asked: skip the table read
            return False
        self._asked_cmul = asked
        added = []
        for row in self.table("ask_cmul"):
            a, b = row[1], row[2]
            if (a, b) in self._folded:
                continue
            self._folded.add((a, b))
            try:
                added.append(f"(set (cmul {terms.str_lit(a)} {terms.str_lit(b)}) "
                             f"{terms.str_lit(terms.const_product(a, b))})")
            except ValueError:
                pass
        self.add(*added)
        return bool(added)

    def prove_clean(self, var: str, limits: Limits) -> Outcome:
        out = self.saturate(lambda: self.is_clean(var), limits)
        return Outcome("clean", out.iterations, out.seconds) if out.status == "reached" else out

    def _count_matches(self, per_rule: dict):
        """Add one step's matches per lemma (egglog reports them per rule text)."""
        for text, n in per_rule.items():
            if not n:
                continue
            name = self._seen_rules.get(text, "")
            if name == "":
                name = self._seen_rules[text] = self._rule_name.get(_rule_key(text))
            if name is not None:
                self.matches[name] += n

    def saturate(self, goal, limits: Limits) -> Outcome:
        """Lemma steps until ``goal()`` holds ('reached'), nothing changes ('saturated') or a limit
        is hit ('limit', naming it).  The e-graph's size is checked after every step: one step
        can grow it a lot, and a check must end at its limit, not by running out of memory."""
        start = time.perf_counter()
        self.settle()
        if goal():
            return Outcome("reached", 0, time.perf_counter() - start)
        for it in range(1, limits.iterations + 1):
            out = self.run1(STEP)
            updated = out[0].report.updated if out else True
            if out:
                self._count_matches(out[0].report.num_matches_per_rule)
            if self.side_step():
                self.settle()
                updated = True
            if goal():
                return Outcome("reached", it, time.perf_counter() - start)
            if not updated:
                return Outcome("saturated", it, time.perf_counter() - start)
            elapsed = time.perf_counter() - start
            if elapsed > limits.seconds:
                return Outcome("limit", it, elapsed, f"{limits.seconds:g} s per operator")
            if self.size() > limits.nodes:
                return Outcome("limit", it, elapsed, f"{limits.nodes} e-nodes")
        return Outcome("limit", limits.iterations, time.perf_counter() - start,
                       f"{limits.iterations} iterations per operator")


def _rule_key(text: str) -> str:
    """A rule's text as egglog prints it back and as a lemma writes it, made one: whitespace
    collapsed, strings in one quote style, no space inside parentheses."""
    text = re.sub(r"\s+", " ", text.replace('"', "'")).strip()
    return text.replace("( ", "(").replace(" )", ")")


def _split_commands(text: str):
    """Split egglog text into top-level commands (balanced parentheses, strings respected)."""
    depth, start, in_str, esc = 0, None, False, False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch == ";" and depth == 0:
            continue
        elif ch == "(":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                yield text[start:i + 1]


def _term_from_dag(dag, tid):
    node = dag.get(tid)
    if isinstance(node, bindings.TermLit):
        v = node.value
        return _lit_value(v)
    if isinstance(node, bindings.TermVar):
        return terms.Var(node.name)
    return (terms.Var(node.name),) + tuple(_term_from_dag(dag, a) for a in node.args)


def _lit_value(lit):
    for attr in ("value",):
        v = getattr(lit, attr, lit)
        if isinstance(v, (int, float, str, bool)):
            return v
        lit = v
    return lit
