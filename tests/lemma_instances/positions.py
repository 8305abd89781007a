"""Instances of the position lemmas (entangle_py/lemmas/positions.py)."""
from __future__ import annotations

from entangle_py.lazy import torch

from lemma_instances.common import repeat


def _arange(rng):
    return {"a": rng.randint(-9, 9), "k": rng.choice([-3, -2, -1, 1, 2, 3]), "n": rng.randint(0, 8)}


@repeat(8)
def offset(rng):
    return {**_arange(rng), "c": rng.randint(-20, 20)}


@repeat(8)
def slice_inside(rng):
    env = _arange(rng)
    m = env.pop("n")
    s = rng.randint(0, m)
    return {**env, "m": m, "s": s, "e": rng.randint(s, m)}


def slice_outside(rng):
    for j in range(6):
        env = _arange(rng)
        m = env.pop("n")
        if j % 3 == 0:
            yield {**env, "m": m, "s": 0, "e": m + rng.randint(1, 3)}         # past the end
        elif j % 3 == 1:
            yield {**env, "m": m, "s": -rng.randint(1, 3), "e": m}            # before the start
        else:
            s = rng.randint(1, m + 1)
            yield {**env, "m": m, "s": s, "e": s - 1}                         # reversed


def _adjacent(rng):
    a, k, m, p = rng.randint(-9, 9), rng.choice([-3, -2, -1, 1, 2, 3]), rng.randint(0, 5), rng.randint(0, 5)
    rest = [torch.arange(rng.randint(0, 3), dtype=torch.int64) for _ in range(rng.randint(0, 2))]
    return {"a": a, "k": k, "m": m, "b": a + k * m, "p": p, "r": rest}


@repeat(8)
def adjacent(rng):
    return _adjacent(rng)


@repeat(6)
def apart(rng):
    env = _adjacent(rng)
    env["b"] += rng.choice([-2, -1, 1, 2])          # a gap or an overlap
    return env


def _inside(rng):
    k = rng.choice([-3, -2, -1, 1, 2, 3])
    n = rng.randint(2, 9)
    m = rng.randint(1, n - 1)
    i = rng.randint(0, n - m)
    b = rng.randint(-9, 9)
    return {"a": b + k * i, "b": b, "k": k, "m": m, "n": n, "i": i}


@repeat(10)
def inside(rng):
    return _inside(rng)


def inside_bad(rng):
    for j in range(8):
        env = _inside(rng)
        if j % 4 == 0:
            env["a"] += 1 if abs(env["k"]) > 1 else 0     # off the grid (step > 1) ...
            if abs(env["k"]) == 1:
                env["a"] = env["b"] + env["k"] * (env["n"] - env["m"] + 1)   # ... or past the end
        elif j % 4 == 1:
            env["a"] = env["b"] - env["k"]                # starts before
        elif j % 4 == 2:
            env["m"] = env["n"]                           # not shorter (it would be the same or not inside)
            env["a"] = env["b"] + env["k"]
        else:
            env["k"] = 0                                  # no step
        yield env


def arange_terms(rng):
    for _ in range(4):
        env = _arange(rng)
        yield f"(arange {env['a']} {env['k']} (DLit {env['n']}))", {}


@repeat(8)
def iscalar_slice(rng):
    """An integer op of a slice along any dim (empty slices too) of an int tensor."""
    shape = [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]
    x = torch.randint(-6, 7, shape, generator=torch.Generator().manual_seed(rng.randrange(2**31)))
    d = rng.randrange(len(shape))
    a = rng.randint(0, shape[d])
    return {"op": rng.choice(["add", "sub", "mul", "eq", "ne", "lt", "le", "gt", "ge"]), "x": x, "d": d, "a": a,
            "b": rng.randint(a, shape[d]), "c": rng.randint(-4, 4)}
