"""S-expressions, the text terms cross the engine boundary in: parsed to tuples headed by a
``Var`` (constructor or bare symbol), ``str`` for "strings", int/float for numbers.  No torch, so
reading a report (``entangle explain``) stays fast."""
from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r'\s*(?:(\()|(\))|("(?:[^"\\]|\\.)*")|([^\s()"]+))')


@dataclass(frozen=True)
class Var:
    name: str


def parse_sexpr(text: str):
    """Parse one s-expression: lists become tuples, "strings" str, numbers int/float, else Var."""
    stack, pos, text = [[]], 0, text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"bad s-expression near {text[pos:pos + 20]!r}")
        lp, rp, string, atom = m.groups()
        pos = m.end()
        if lp:
            stack.append([])
        elif rp:
            if len(stack) < 2:
                raise ValueError(f"unbalanced s-expression {text!r}")
            done = tuple(stack.pop())
            stack[-1].append(done)
        elif string is not None:
            stack[-1].append(re.sub(r'\\(.)', r'\1', string[1:-1]))
        else:
            stack[-1].append(_atom(atom))
    if len(stack) != 1 or len(stack[0]) != 1:
        raise ValueError(f"unbalanced s-expression {text!r}")
    return stack[0][0]


def _atom(tok: str):
    if re.fullmatch(r"-?\d+", tok):
        return int(tok)
    if re.fullmatch(r"-?\d+\.\d*(e-?\d+)?", tok):
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
