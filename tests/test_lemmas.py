"""Every lemma is checked numerically: both sides evaluated with torch on random instances.

A conditioned lemma must also come with instances that violate its condition, and the condition
must reject each of them.  Shape rules are checked by deriving shapes in a real e-graph.
"""
import random
import zlib

import pytest
import torch

from entangle_py import terms
from entangle_py.engine import Engine
from entangle_py.lemma import load_library

LIB = load_library()


@pytest.mark.parametrize("lemma", LIB.lemmas, ids=lambda l: l.name)
def test_lemma_sides_agree(lemma):
    assert lemma.instances is not None, f"lemma {lemma.name} ships without instances"
    rng = random.Random(zlib.crc32(lemma.name.encode()))   # the same instances in every process
    n = 0
    for env in lemma.instances(rng):
        assert lemma.condition_holds(env), f"{lemma.name}: generated instance violates the condition"
        lhs, rhs = lemma.sides(env)
        assert terms.allclose(lhs, rhs), f"{lemma.name}: sides differ on {env}"
        n += 1
    assert n >= 1


@pytest.mark.parametrize("lemma", [l for l in LIB.lemmas if l.when], ids=lambda l: l.name)
def test_conditioned_lemma_rejects(lemma):
    assert lemma.rejects is not None, f"conditioned lemma {lemma.name} has no case its condition must reject"
    rng = random.Random(7)
    n = 0
    for env in lemma.rejects(rng):
        try:
            holds = lemma.condition_holds(env)
        except terms.EvalError:
            holds = False
        assert not holds, f"{lemma.name}: condition accepts a violating instance {env}"
        n += 1
    assert n >= 1


def test_lemma_names_no_model_constants():
    """Lemmas are generic: no integer literal beyond small dims/offsets in their text."""
    import re
    for lem in LIB.lemmas:
        for text in (lem.lhs, lem.rhs) + tuple(lem.when) + tuple(lem.trigger):
            for num in re.findall(r"(?<![\w.])-?\d+(?![\w.])", text):
                assert abs(int(num)) <= 2, f"{lem.name} mentions the constant {num}"


def _insert_value(eng, name, value):
    eng.add(f'(let ${name} (Gd "{name}"))')
    eng.add(f"(set (ndim ${name}) {value.dim()})")
    for i, s in enumerate(value.shape):
        eng.add(f"(set (dim ${name} {i}) (DLit {s}))")


@pytest.mark.parametrize("rule", [r for r in LIB.rules if r.check_terms], ids=lambda r: r.name)
def test_shape_rule_matches_torch(rule):
    rng = random.Random(3)
    for text, env in rule.check_terms(rng):
        eng = Engine(LIB)
        for name, value in env.items():
            _insert_value(eng, name, value)
        expr = text
        for name in env:
            expr = expr.replace(f" {name})", f" ${name})").replace(f" {name} ", f" ${name} ").replace(f"({name} ", f"(${name} ")
        eng.add(f"(let $t {expr})")
        eng.settle()
        expected = terms.evaluate(terms.parse_sexpr(text), env)
        nd = eng.run1("(extract (ndim $t))")[0]
        assert nd.termdag.to_string(nd.term) == str(expected.dim())
        for i, s in enumerate(expected.shape):
            out = eng.run1(f"(extract (dim $t {i}))")[0]
            assert out.termdag.to_string(out.term) == f"(DLit {s})", f"{rule.name}: dim {i} of {text}"


@pytest.mark.parametrize("lemma", [l for l in LIB.lemmas if l.assumes], ids=lambda l: l.name)
def test_assuming_lemma_needs_its_assumption(lemma):
    """A lemma resting on an assumption ships counterexamples: inputs violating the assumption on
    which its sides differ (or one side is undefined) -- the assumption is really needed."""
    assert lemma.rejects is not None, f"{lemma.name} has no counterexample to its assumption"
    rng = random.Random(11)
    n = 0
    for env in lemma.rejects(rng):
        try:
            lhs, rhs = lemma.sides(env)
            differ = not terms.allclose(lhs, rhs)
        except terms.EvalError:
            differ = True
        assert differ, f"{lemma.name}: sides agree on a counterexample {env}"
        n += 1
    assert n >= 1


def test_assuming_lemmas_only_active_when_enabled():
    from entangle_py.lemma import ASSUMPTIONS
    assuming = [l for l in LIB.lemmas if l.assumes]
    assert assuming
    off = LIB.egglog(())
    on = LIB.egglog(tuple(ASSUMPTIONS))
    for lem in assuming:
        text = lem.egglog("lemmas")
        assert text not in off and text in on
