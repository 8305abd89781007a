"""Symbolic sizes: a small, safe text form for sympy size expressions and guards.

Graphs captured with dynamic shapes carry sizes such as ``s0`` or ``2*s0``.  A graph file from a
stranger is untrusted, so sizes are stored as text in a tiny grammar and rebuilt by a
recursive-descent parser through a whitelist of sympy constructors -- never ``eval`` or
``sympify`` (which evaluates Python).

Grammar (whitespace ignored)::

    expr   := term (('+' | '-') term)*
    term   := unary (('*') unary)*
    unary  := '-' unary | power
    power  := atom ('**' INT)?
    atom   := INT | SYMBOL | FUNC '(' expr (',' expr)* ')' | '(' expr ')'

FUNC is one of the names in ``FUNCTIONS``; a SYMBOL must be declared by the graph that uses it.
"""
from __future__ import annotations

import re

import sympy

from entangle_py.errors import InputError


class SymbolicError(InputError):
    """A size expression that is not in the whitelisted grammar."""


class FloorDiv(sympy.Function):
    """Integer floor division of sizes (what torch's ShapeEnv writes as ``FloorDiv``)."""

    is_integer = True

    @classmethod
    def eval(cls, a, b):
        if b == 1:
            return a
        if a.is_Integer and b.is_Integer and b != 0:
            return sympy.Integer(int(a) // int(b))
        return None


# Constructors a stored expression may use.  Relations and connectives are for guards.
FUNCTIONS = {
    "FloorDiv": FloorDiv,
    "Mod": sympy.Mod,
    "Max": sympy.Max,
    "Min": sympy.Min,
    "Eq": sympy.Eq,
    "Ne": sympy.Ne,
    "Lt": sympy.Lt,
    "Le": sympy.Le,
    "Gt": sympy.Gt,
    "Ge": sympy.Ge,
    "And": sympy.And,
    "Or": sympy.Or,
    "Not": sympy.Not,
}

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(\*\*|[-+*(),]))")
_SYMBOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_TEXT = 4096  # sizes are short; a huge string is a hostile file, not a size


def make_symbol(name: str) -> sympy.Symbol:
    """Sizes are positive integers; declaring that lets sympy simplify ``Max(s0, 1)`` etc."""
    if not _SYMBOL_NAME.match(name) or name in FUNCTIONS:
        raise SymbolicError(f"invalid symbol name {name!r}")
    return sympy.Symbol(name, integer=True, positive=True)


def _tokenize(text: str) -> list[tuple[str, str]]:
    if len(text) > MAX_TEXT:
        raise SymbolicError(f"size expression too long ({len(text)} characters)")
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise SymbolicError(f"unexpected character {text[pos:pos+1]!r} in size expression {text!r}")
        num, ident, punct = m.groups()
        tokens.append(("int", num) if num else ("id", ident) if ident else ("p", punct))
        pos = m.end()
    return tokens


class _Parser:
    def __init__(self, text: str, symbols: dict[str, sympy.Symbol]):
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.symbols = symbols

    def fail(self, why: str):
        raise SymbolicError(f"{why} in size expression {self.text!r}")

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else (None, None)

    def take(self, kind=None, value=None):
        tok = self.peek()
        if tok[0] is None or (kind and tok[0] != kind) or (value and tok[1] != value):
            self.fail(f"expected {value or kind}, found {tok[1]!r}")
        self.i += 1
        return tok

    def parse(self):
        e = self.expr()
        if self.i != len(self.tokens):
            self.fail(f"trailing {self.peek()[1]!r}")
        return e

    def expr(self):
        e = self.term()
        while self.peek() in (("p", "+"), ("p", "-")):
            op = self.take()[1]
            rhs = self.term()
            e = e + rhs if op == "+" else e - rhs
        return e

    def term(self):
        e = self.unary()
        while self.peek() == ("p", "*"):
            self.take()
            e = e * self.unary()
        return e

    def unary(self):
        if self.peek() == ("p", "-"):
            self.take()
            return -self.unary()
        return self.power()

    def power(self):
        base = self.atom()
        if self.peek() == ("p", "**"):
            self.take()
            exp = int(self.take("int")[1])
            if exp > 64:
                self.fail("exponent too large")
            return base**exp
        return base

    def atom(self):
        kind, value = self.peek()
        if kind == "int":
            self.take()
            return sympy.Integer(int(value))
        if kind == "p" and value == "(":
            self.take()
            e = self.expr()
            self.take("p", ")")
            return e
        if kind == "id":
            self.take()
            if self.peek() == ("p", "("):
                if value not in FUNCTIONS:
                    self.fail(f"unknown function {value!r}")
                self.take()
                args = [self.expr()]
                while self.peek() == ("p", ","):
                    self.take()
                    args.append(self.expr())
                self.take("p", ")")
                return FUNCTIONS[value](*args)
            if value in ("True", "False"):
                return sympy.true if value == "True" else sympy.false
            if value not in self.symbols:
                self.fail(f"undeclared symbol {value!r}")
            return self.symbols[value]
        self.fail(f"unexpected {value!r}")


def parse(text: str, symbols: dict[str, sympy.Symbol]):
    """Rebuild a size expression or guard from its stored text (whitelisted grammar only)."""
    if not isinstance(text, str):
        raise SymbolicError(f"size expression must be a string, got {type(text).__name__}")
    return _Parser(text, symbols).parse()


def to_text(e) -> str:
    """Print an expression in the grammar that ``parse`` reads back."""
    if isinstance(e, bool):
        return "True" if e else "False"
    if isinstance(e, int):
        return str(e)
    e = sympy.sympify(e) if not isinstance(e, sympy.Basic) else e
    if e is sympy.true:
        return "True"
    if e is sympy.false:
        return "False"
    if e.is_Integer:
        return str(int(e))
    if e.is_Symbol:
        return e.name
    if e.is_Add:
        parts = [to_text(a) for a in sympy.Add.make_args(e)]
        return "(" + " + ".join(parts) + ")"
    if e.is_Mul:
        parts = [to_text(a) for a in sympy.Mul.make_args(e)]
        return "(" + "*".join(parts) + ")"
    if e.is_Pow and e.exp.is_Integer and int(e.exp) > 0:
        return f"({to_text(e.base)}**{int(e.exp)})"
    name = type(e).__name__
    if isinstance(e, sympy.Rel):
        name = {"Equality": "Eq", "Unequality": "Ne", "StrictLessThan": "Lt", "LessThan": "Le",
                "StrictGreaterThan": "Gt", "GreaterThan": "Ge"}[name]
    if name in FUNCTIONS:
        return f"{name}(" + ", ".join(to_text(a) for a in e.args) + ")"
    raise SymbolicError(f"cannot store size expression {e} (constructor {name} is not whitelisted)")


def from_torch(e, symbols: dict[str, sympy.Symbol]):
    """Convert an expression from torch's ShapeEnv (its own sympy classes) into ours.

    Goes through the text form so that the same whitelist governs captured and loaded sizes.
    """
    return parse(_torch_text(e), symbols)


_TORCH_NAMES = {
    "FloorDiv": "FloorDiv", "PythonMod": "Mod", "Mod": "Mod", "Max": "Max", "Min": "Min",
    "Equality": "Eq", "Unequality": "Ne", "StrictLessThan": "Lt", "LessThan": "Le",
    "StrictGreaterThan": "Gt", "GreaterThan": "Ge", "And": "And", "Or": "Or", "Not": "Not",
}


def _torch_text(e) -> str:
    if isinstance(e, (bool, int)) or e is sympy.true or e is sympy.false:
        return to_text(e)
    if e.is_Integer or e.is_Symbol:
        return to_text(e)
    if e.is_Add:
        return "(" + " + ".join(_torch_text(a) for a in e.args) + ")"
    if e.is_Mul:
        return "(" + "*".join(_torch_text(a) for a in e.args) + ")"
    if e.is_Pow and e.exp.is_Integer and int(e.exp) > 0:
        return f"({_torch_text(e.base)}**{int(e.exp)})"
    name = _TORCH_NAMES.get(type(e).__name__)
    if name is None:
        raise SymbolicError(f"unsupported symbolic size construct {type(e).__name__} in {e}")
    return f"{name}(" + ", ".join(_torch_text(a) for a in e.args) + ")"
