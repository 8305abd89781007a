"""The spec's relation strings, read the way the README defines them, for the gloo harness.

A relation says what the sequential tensor is in terms of the ranks' tensors:
``replicate`` (every rank holds it), ``shard(d)`` (concat of the ranks' tensors along d),
``partial`` (their sum), or an explicit clean expression over rank-qualified names
(``concat(..., dim=d)``, ``sum(...)``, ``max(...)``, ``slice(t, dim=d, start=a, end=b)``, ``rK.name``).

Two directions: ``evaluate`` builds the sequential value from the ranks' values (an output's
expectation); ``distribute`` builds ranks' values a sequential value allows (an input's relation).
"""
from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

import torch

_TOKEN = re.compile(r"\s*(?:(?P<num>-?\d+)|(?P<name>[A-Za-z_][\w.:@-]*)|(?P<punct>[(),=]))")


@dataclass(frozen=True)
class Call:
    fn: str
    args: tuple
    kwargs: tuple  # ((key, int), ...)

    def kw(self, key, default=None):
        return dict(self.kwargs).get(key, default)


@dataclass(frozen=True)
class Leaf:
    rank: int
    port: str


def parse(text: str):
    """``shard(1)`` -> Call('shard', (1,), ()); ``r0.param:w`` -> Leaf(0, 'param:w')."""
    tokens, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot read relation {text!r} at {pos}")
        tokens.append((m.lastgroup, m.group(m.lastgroup)))
        pos = m.end()
    out, rest = _expr(tokens)
    if rest:
        raise ValueError(f"trailing text in relation {text!r}")
    return out


def _expr(tokens):
    kind, value = tokens[0]
    tokens = tokens[1:]
    if kind == "num":
        return int(value), tokens
    if kind != "name":
        raise ValueError(f"unexpected {value!r}")
    if tokens and tokens[0] == ("punct", "("):
        tokens = tokens[1:]
        args, kwargs = [], []
        while tokens[0] != ("punct", ")"):
            if tokens[0][0] == "name" and len(tokens) > 1 and tokens[1] == ("punct", "="):
                key = tokens[0][1]
                val, tokens = _expr(tokens[2:])
                kwargs.append((key, val))
            else:
                val, tokens = _expr(tokens)
                args.append(val)
            if tokens[0] == ("punct", ","):
                tokens = tokens[1:]
        return Call(value, tuple(args), tuple(kwargs)), tokens[1:]
    m = re.fullmatch(r"r(\d+)\.(.+)", value)
    if m:
        return Leaf(int(m.group(1)), m.group(2)), tokens
    return Call(value, (), ()), tokens  # replicate, partial


# --------------------------------------------------------------------------- ranks -> sequential

def evaluate(rel, ranks: list[torch.Tensor | None], port: str, outputs: list[dict] | None = None):
    """The sequential tensor the relation names, from the ranks' values of ``port``
    (``outputs[r]`` holds every port of rank r, for explicit expressions naming other ports)."""
    if isinstance(rel, str):
        rel = parse(rel)
    if isinstance(rel, Leaf):
        if outputs is not None:
            return outputs[rel.rank][rel.port]
        return ranks[rel.rank]
    fn = rel.fn.split("@")[0]
    if fn == "replicate":
        return ranks[0]
    if fn == "shard":
        return torch.cat(ranks, dim=rel.args[0])
    if fn == "partial":
        return torch.stack(ranks).sum(0)
    parts = [evaluate(a, ranks, port, outputs) for a in rel.args]
    if fn == "concat":
        return torch.cat(parts, dim=rel.kw("dim", 0))
    if fn == "sum":
        return torch.stack(parts).sum(0)
    if fn == "max":
        return torch.stack(parts).amax(0)
    if fn == "slice":
        t = parts[0]
        dim = rel.kw("dim", 0)
        start, end = _bounds(rel, t.shape[dim])
        return t.narrow(dim, start, end - start)
    raise ValueError(f"unknown relation {rel}")


def _bounds(rel: Call, n: int) -> tuple[int, int]:
    """A slice's [start, end) on a dim of size n (defaults and negative bounds as in Python)."""
    start, end = rel.kw("start", 0), rel.kw("end", n)
    return (start + n if start < 0 else start), (end + n if end < 0 else end)


def replicated_ranks(rel) -> bool:
    return isinstance(rel, Call) and rel.fn.split("@")[0] == "replicate"


# --------------------------------------------------------------------------- sequential -> ranks

def _seed(port: str, salt: int) -> torch.Generator:
    return torch.Generator().manual_seed(zlib.crc32(port.encode()) * 7 + salt)


def distribute(rel, value: torch.Tensor, shapes: list[tuple | None], port: str) -> list[torch.Tensor | None]:
    """Ranks' tensors for ``port`` whose relation gives ``value``.  ``shapes[r]`` is rank r's
    shape of the port (None: the rank does not hold it).  Rows no part of the relation names are
    random; the same call gives the same tensors in every process."""
    if isinstance(rel, str):
        rel = parse(rel)
    gen = _seed(port, 1)
    ranks = [None if s is None else _fill(torch.empty(s, dtype=value.dtype), gen) for s in shapes]
    _assign(rel, value, ranks, shapes, gen)
    return ranks


def _fill(t, gen):
    if t.dtype.is_floating_point:
        return t.copy_(torch.randn(t.shape, generator=gen, dtype=t.dtype))
    return t.zero_()


def _assign(rel, value, ranks, shapes, gen):
    if isinstance(rel, Leaf):
        ranks[rel.rank].copy_(value)
        return
    fn = rel.fn.split("@")[0]
    held = [r for r, s in enumerate(shapes) if s is not None]
    if fn == "replicate":
        for r in held:
            ranks[r].copy_(value)
    elif fn == "shard":
        dim = rel.args[0]
        sizes = [shapes[r][dim] for r in held]
        for r, part in zip(held, value.split(sizes, dim=dim)):
            ranks[r].copy_(part)
    elif fn in ("partial", "sum"):
        targets = held if fn == "partial" else rel.args
        rest = value.clone()
        parts = []
        for _ in targets[:-1]:
            p = torch.randn(value.shape, generator=gen, dtype=value.dtype)
            parts.append(p)
            rest = rest - p
        parts.append(rest)
        for t, p in zip(targets, parts):
            if fn == "partial":
                ranks[t].copy_(p)
            else:
                _assign(t, p, ranks, shapes, gen)
    elif fn == "concat":
        dim = rel.kw("dim", 0)
        sizes = [_size(a, dim, shapes) for a in rel.args]
        for a, part in zip(rel.args, value.split(sizes, dim=dim)):
            _assign(a, part, ranks, shapes, gen)
    elif fn == "slice":
        (leaf,) = rel.args
        dim = rel.kw("dim", 0)
        start, end = _bounds(rel, shapes[leaf.rank][dim])
        ranks[leaf.rank].narrow(dim, start, end - start).copy_(value)
    else:
        raise ValueError(f"cannot distribute through {rel}")


def _size(rel, dim, shapes) -> int:
    if isinstance(rel, Leaf):
        return shapes[rel.rank][dim]
    fn = rel.fn
    if fn == "slice":
        leaf = rel.args[0]
        if rel.kw("dim", 0) != dim:
            return shapes[leaf.rank][dim]
        start, end = _bounds(rel, shapes[leaf.rank][dim])
        return end - start
    if fn == "concat" and rel.kw("dim", 0) == dim:
        return sum(_size(a, dim, shapes) for a in rel.args)
    return _size(rel.args[0], dim, shapes)


def infer(seq_shape: tuple, shapes: list[tuple | None]) -> str:
    """The README's inference for an input the spec leaves out: same shape -> replicate; one dim
    split across ranks -> shard."""
    held = [s for s in shapes if s is not None]
    if all(tuple(s) == tuple(seq_shape) for s in held):
        return "replicate"
    diff = [d for d in range(len(seq_shape)) if any(s[d] != seq_shape[d] for s in held)]
    if len(diff) == 1 and sum(s[diff[0]] for s in held) == seq_shape[diff[0]]:
        return f"shard({diff[0]})"
    raise ValueError(f"ambiguous relation for shapes {seq_shape} vs {shapes}")
