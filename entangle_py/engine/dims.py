"""Symbolic sizes in side conditions: Z3 decides what egglog cannot.

Sizes in the e-graph are ``Dim`` terms: ``(DLit 4)``, ``(DSym "2*seq_s0")`` and arithmetic built by
lemmas and shape rules (``dadd``, ``dsub``).  Two things need more than syntax:

- *equality*: ``(dadd (DSym "seq_s0") (DSym "seq_s0"))`` is the size ``(DSym "2*seq_s0")``.  Every
  arithmetic Dim term is evaluated with sympy and put in the e-class of its canonical form.
- *order*: a lemma condition ``(dle a b)`` (slice bounds inside a concat part, ...) first records
  the question ``(ask_le a b)``; literals are answered by egglog rules, symbolic ones here by Z3
  under the symbols' ranges and the capture's guards.  Only a proof adds ``(dle a b)``: a question
  Z3 cannot decide (or a counterexample) leaves the lemma unfired -- it is never assumed.
"""
from __future__ import annotations

import re

from entangle_py.lazy import LazyModule, sympy
from entangle_py.semantics.terms import Var, str_lit, to_sexpr

# a program of static sizes asks only about literals: sympy and Z3 are imported for symbolic ones
symbolic = LazyModule("entangle_py.ir.symbolic")
z3 = LazyModule("z3")


class DimSolver:
    def __init__(self):
        self.symbols: dict[str, sympy.Symbol] = {}
        self.ranges: dict[str, tuple] = {}         # canonical symbol name -> (lower, upper|None)
        self.guards: list = []                      # sympy booleans over canonical symbols
        self._answered: set[str] = set()
        self._canonical: set[str] = set()
        self.proved = 0                             # counters for -v and tests
        self.undecided = 0

    def fresh(self) -> "DimSolver":
        """The same symbols and guards, for a new e-graph (nothing asked or answered yet)."""
        new = DimSolver()
        new.symbols, new.ranges, new.guards = dict(self.symbols), dict(self.ranges), list(self.guards)
        return new

    # -- facts about symbols -----------------------------------------------------------------
    def add_symbol(self, name: str, lower=None, upper=None):
        self.symbols.setdefault(name, symbolic.make_symbol(name))
        lo, hi = self.ranges.get(name, (None, None))
        if lower is not None:
            lo = lower if lo is None else max(lo, lower)
        if upper is not None:
            hi = upper if hi is None else min(hi, upper)
        self.ranges[name] = (lo, hi)

    def add_guard(self, expr):
        for s in expr.free_symbols:
            self.add_symbol(s.name)
        self.guards.append(expr)

    # -- terms <-> sympy ---------------------------------------------------------------------
    def value(self, t):
        """The sympy value of a parsed Dim term, or None when it is not a size expression."""
        if not isinstance(t, tuple):
            return None
        head = t[0].name if isinstance(t[0], Var) else t[0]
        if head == "DLit":
            return t[1]
        if head == "DSym":
            try:
                e = symbolic.parse(t[1], self._all_symbols(t[1]))
            except symbolic.SymbolicError:
                return None
            return e
        args = [self.value(a) for a in t[1:]]
        if any(a is None for a in args):
            return None
        if head == "dadd":
            return args[0] + args[1]
        if head == "dsub":
            return args[0] - args[1]
        return None

    def _all_symbols(self, text: str) -> dict:
        out = dict(self.symbols)
        for tok in _names(text):
            if tok not in symbolic.FUNCTIONS and tok not in out:
                out[tok] = symbolic.make_symbol(tok)
        return out

    @staticmethod
    def term(e) -> str:
        """The canonical Dim term of a size (an int, or a sympy expression)."""
        if isinstance(e, int):
            return f"(DLit {e})"
        e = sympy.expand(e)
        if e.is_Integer:
            return f"(DLit {int(e)})"
        return f"(DSym {str_lit(symbolic.to_text(e))})"

    # -- Z3 --------------------------------------------------------------------------------
    def proves_le(self, a, b) -> bool:
        """True only if a <= b holds for every assignment allowed by ranges and guards."""
        if a is None or b is None:
            return False
        if isinstance(a, int) and isinstance(b, int):
            return a <= b
        a, b = sympy.sympify(a), sympy.sympify(b)
        diff = sympy.expand(b - a)
        if diff.is_Integer:
            return int(diff) >= 0
        zs = {}
        try:
            za, zb = _to_z3(a, zs), _to_z3(b, zs)
            guards = [_to_z3(g, zs) for g in self.guards]
        except _Untranslatable:
            return False
        s = z3.Solver()
        s.set("timeout", 2000)
        for name, var in zs.items():
            lo, hi = self.ranges.get(name, (None, None))
            s.add(var >= (lo if lo is not None else 0))
            if hi is not None:
                s.add(var <= hi)
        s.add(*guards)
        s.add(z3.Not(za <= zb))
        return s.check() == z3.unsat

    # -- answers for the e-graph -------------------------------------------------------------
    def answer(self, dterm_rows, ask_le_rows) -> list[str]:
        """Facts for the rows of the e-graph's ``dterm`` and ``ask_le`` tables (parsed terms) not
        seen before: each symbolic arithmetic Dim unioned with its canonical form, and ``(dle a b)``
        for each question Z3 proves.  The engine reads the tables and adds the facts."""
        added = []
        for row in dterm_rows:
            key = repr(row)
            if key in self._canonical:
                continue
            self._canonical.add(key)
            if "DSym" not in key:       # literal arithmetic is folded by egglog
                continue
            v = self.value(row[1])
            if v is not None:
                added.append(f"(union {to_sexpr(row[1])} {self.term(v)})")
        for row in ask_le_rows:
            key = repr(row)
            if key in self._answered:
                continue
            self._answered.add(key)
            a, b = row[1], row[2]
            if self.proves_le(self.value(a), self.value(b)):
                self.proved += 1
                added.append(f"(dle {to_sexpr(a)} {to_sexpr(b)})")
            else:
                self.undecided += 1
        return added


class _Untranslatable(Exception):
    pass


def _to_z3(e, zs: dict):
    if e is sympy.true:
        return z3.BoolVal(True)
    if e is sympy.false:
        return z3.BoolVal(False)
    if e.is_Integer:
        return z3.IntVal(int(e))
    if e.is_Symbol:
        return zs.setdefault(e.name, z3.Int(e.name))
    args = [_to_z3(a, zs) for a in e.args]
    if e.is_Add:
        return z3.Sum(*args)
    if e.is_Mul:
        out = args[0]
        for a in args[1:]:
            out = out * a
        return out
    if e.is_Pow and e.exp.is_Integer and int(e.exp) > 0:
        out = args[0]
        for _ in range(int(e.exp) - 1):
            out = out * args[0]
        return out
    if isinstance(e, symbolic.FloorDiv):
        return args[0] / args[1]              # z3 integer division floors for positive divisors
    if isinstance(e, sympy.Mod):
        return args[0] % args[1]
    if isinstance(e, sympy.Max):
        return _fold(args, lambda a, b: z3.If(a >= b, a, b))
    if isinstance(e, sympy.Min):
        return _fold(args, lambda a, b: z3.If(a <= b, a, b))
    rel = {sympy.Eq: lambda a, b: a == b, sympy.Ne: lambda a, b: a != b, sympy.Lt: lambda a, b: a < b,
           sympy.Le: lambda a, b: a <= b, sympy.Gt: lambda a, b: a > b, sympy.Ge: lambda a, b: a >= b}
    for cls, f in rel.items():
        if isinstance(e, cls):
            return f(*args)
    if isinstance(e, sympy.And):
        return z3.And(*args)
    if isinstance(e, sympy.Or):
        return z3.Or(*args)
    if isinstance(e, sympy.Not):
        return z3.Not(*args)
    raise _Untranslatable(type(e).__name__)


def _fold(args, f):
    out = args[0]
    for a in args[1:]:
        out = f(out, a)
    return out


def _names(text: str):
    return re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)
