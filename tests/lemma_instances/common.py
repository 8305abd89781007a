"""Instances for lemma and rule checks: shared helpers (random tensors, shard counts 1-8, uneven
splits), and ``Instances``, a lemma's entry in the registry (tests/lemma_instances/registry/).

A lemma's ``instances(rng)`` / ``rejects(rng)`` yield variable bindings: for the first the lemma's
condition must hold and its two sides agree; the second violate the condition (the condition must
say so), or, for a lemma resting on an assumption, violate the assumption and make the sides differ.
A rule's check ``(rng)`` yields ``(term, env)``: the term is inserted over leaves of env's tensors
and every shape fact derived for it must be there and match torch; or ``(term, env, facts)``: every
derived shape fact must match torch, and each egglog fact in ``facts`` (over env's names and ``t``,
the term) must hold in the e-graph exactly when it is true of the torch values (``terms.evaluate``:
VIEW_RELATIONS / PRIMITIVES; an undefined fact is false).  tests/test_lemmas.py runs them.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Iterable

from entangle_py.lazy import torch


@dataclass(frozen=True)
class Instances:
    """A lemma's bindings: ``instances`` it must hold on, ``rejects`` its condition (or assumption) refuses."""
    instances: Callable[[random.Random], Iterable[dict]]
    rejects: Callable[[random.Random], Iterable[dict]] | None = None


def tensor(rng: random.Random, *shape, positive: bool = False) -> torch.Tensor:
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    t = torch.randn(tuple(shape), generator=g, dtype=torch.float64)
    return t.abs() + 0.1 if positive else t


def sizes(rng: random.Random, parts: int, lo: int = 1, hi: int = 5) -> list[int]:
    """Uneven part sizes."""
    return [rng.randint(lo, hi) for _ in range(parts)]


def shard_count(rng: random.Random) -> int:
    return rng.randint(1, 8)


def shape(rng: random.Random, ndim: int, lo: int = 1, hi: int = 5) -> list[int]:
    return [rng.randint(lo, hi) for _ in range(ndim)]


def split(x: torch.Tensor, part_sizes: list[int], dim: int) -> list[torch.Tensor]:
    return list(torch.split(x, part_sizes, dim))


def concat_parts(rng: random.Random, ndim: int, d: int, parts: int | None = None, positive=False):
    """Parts of a concat along ``d``: same shape except on ``d`` (uneven sizes)."""
    parts = parts or shard_count(rng)
    base = shape(rng, ndim)
    out = []
    for n in sizes(rng, parts):
        s = list(base)
        s[d] = n
        out.append(tensor(rng, *s, positive=positive))
    return out


def repeat(n: int):
    """Decorator: an instance generator yielding ``n`` instances from a one-instance function."""
    def wrap(fn):
        def gen(rng):
            for _ in range(n):
                inst = fn(rng)
                if inst is not None:
                    yield inst
        gen.__name__ = fn.__name__
        return gen
    return wrap


def fixed(*envs: dict):
    """An instance generator yielding the given bindings (no randomness)."""
    def gen(rng):
        return [dict(e) for e in envs]
    return gen


def dlist(s) -> str:
    """A shape list as a DList term."""
    out = "(DNil)"
    for v in reversed(s):
        out = f"(DCons (DLit {v}) {out})"
    return out


def ilist(s) -> str:
    """An int list as an IList term."""
    out = "(INil)"
    for v in reversed(s):
        out = f"(ICons {v} {out})"
    return out


def cons(gen):
    """Instances of a lemma over a list ``l``, for its form over a concrete list (Cons x r)."""
    def out(rng):
        for env in gen(rng):
            env = dict(env)
            l = env.pop("l")
            if l:
                yield {**env, "x": l[0], "r": l[1:]}
    out.__name__ = getattr(gen, "__name__", "cons")
    return out
