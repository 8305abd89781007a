"""Instances for entangle_py/lemmas/arith.py."""
from entangle_py.semantics.terms import const_product
from lemma_instances.common import repeat, tensor

CONSTS = ["2.0", "0.5", "3.0", "4.0", "0.25", "8.0", "-2.0", "1.5"]


@repeat(8)
def two_constants(rng):
    nd = rng.randint(0, 3)
    a, b = rng.choice(CONSTS), rng.choice(CONSTS)
    return {"x": tensor(rng, *[rng.randint(1, 4) for _ in range(nd)]), "a": a, "b": b, "c": const_product(a, b)}


@repeat(4)
def inexact(rng):
    """0.1 * 0.1 is not a float exactly: no product, so the condition cannot hold for any c."""
    return {"x": tensor(rng, 2), "a": rng.choice(["0.1", "3.0"]), "b": "0.1", "c": "0.010000000000000002"}


def cmul_checks(rng):
    """(term, env, facts): the engine answers every product a term asks for, exact ones only."""
    for op in ("div", "mul"):
        a, b = rng.choice(CONSTS), rng.choice(CONSTS)
        yield (f'(scalar "{op}" (scalar "{op}" x "{a}") "{b}")', {"x": tensor(rng, 2, 3)},
               [f'(= (cmul "{a}" "{b}") "{const_product(a, b)}")', f'(= (cmul "{a}" "{b}") "7.0")'])
        yield (f'(scalar "{op}" (scalar "{op}" x "0.1") "0.1")', {"x": tensor(rng, 2)},
               ['(= (cmul "0.1" "0.1") "0.010000000000000002")'])
