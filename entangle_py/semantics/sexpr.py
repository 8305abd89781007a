"""S-expressions, the text terms cross the engine boundary in: parsed to tuples headed by a
``Var`` (constructor or bare symbol), ``str`` for "strings", int/float for numbers.  No torch, so
reading a report (``entangle explain``) stays fast."""
from __future__ import annotations

import re
from dataclasses import dataclass



@dataclass(frozen=True)
class Var:
    name: str


STRING = r'"(?:[^"\\]|\\.)*"'       # a string literal, escapes included (the pattern's text)
_TOKENS = re.compile(r'\(|\)|' + STRING + r'|[^\s()"]+|\S')
_INT = re.compile(r"-?\d+")
_FLOAT = re.compile(r"-?\d+\.\d*(e-?\d+)?")
_ESCAPE = re.compile(r"\\(.)")
_STRING = re.compile(STRING)
_APPLIES = re.compile(r'\(\s*([^\s()"]+)')


def unescape(body: str) -> str:
    """A string literal's text between its quotes, its escapes resolved."""
    return _ESCAPE.sub(r"\1", body) if "\\" in body else body


def heads(text: str) -> list[str]:
    """The constructors the s-expression ``text`` applies, outermost first, without parsing it
    (string literals are skipped: a name holding ``(mm`` is no application)."""
    return _APPLIES.findall(_STRING.sub('""', text))


def head(text: str) -> str | None:
    """The constructor ``text`` applies at its top (None for an atom or a literal)."""
    m = _APPLIES.match(text)
    return m.group(1) if m else None


def parse_sexpr(text: str):
    """Parse one s-expression: lists become tuples, "strings" str, numbers int/float, else Var."""
    stack: list[list] = [[]]
    for tok in _TOKENS.findall(text):     # one pass of the tokenizer over the whole text
        c = tok[0]
        if c == "(":
            stack.append([])
        elif c == ")":
            if len(stack) < 2:
                raise ValueError(f"unbalanced s-expression {text!r}")
            done = tuple(stack.pop())
            stack[-1].append(done)
        elif c == '"':
            if len(tok) < 2 or tok[-1] != '"':
                raise ValueError(f"bad s-expression near {tok[:20]!r}")
            stack[-1].append(unescape(tok[1:-1]))
        else:
            stack[-1].append(_atom(tok))
    if len(stack) != 1 or len(stack[0]) != 1:
        raise ValueError(f"unbalanced s-expression {text!r}")
    return stack[0][0]


def _atom(tok: str):
    c = tok[0]
    if c.isdigit() or (c == "-" and len(tok) > 1):     # only these can be numbers
        if _INT.fullmatch(tok):
            return int(tok)
        if _FLOAT.fullmatch(tok):
            return float(tok)
    return Var(tok)


def to_sexpr(x) -> str:
    """The text of a parsed term (inverse of ``parse_sexpr``)."""
    if isinstance(x, tuple):
        return "(" + " ".join(to_sexpr(a) for a in x) + ")"
    if isinstance(x, str):
        return '"' + x.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(x, Var):
        return x.name
    if isinstance(x, bool):
        return "true" if x else "false"
    return str(x)
