"""Random instances for lemma checks: shapes, shard counts 1-8, uneven splits."""
from __future__ import annotations

import random

import torch


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
