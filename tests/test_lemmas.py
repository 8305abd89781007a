"""Every lemma is checked numerically: both sides evaluated with torch on random instances.

A conditioned lemma must also come with instances that violate its condition, and the condition
must reject each of them.  Shape rules are checked by deriving shapes in a real e-graph.  The
instances and checks are test tooling, by lemma (rule) name: tests/lemma_instances/registry/.
"""
import random
import re
import zlib

import pytest
import torch

from entangle_py.semantics import terms
from entangle_py.engine.egraph import Engine, EngineError
from entangle_py.lemmas import load_library
from lemma_instances.registry import CHECKS, INSTANCES

LIB = load_library()


@pytest.mark.parametrize("lemma", LIB.lemmas, ids=lambda l: l.name)
def test_lemma_sides_agree(lemma):
    assert lemma.name in INSTANCES, f"lemma {lemma.name} has no instances (tests/lemma_instances/registry/)"
    rng = random.Random(zlib.crc32(lemma.name.encode()))   # the same instances in every process
    n = 0
    for env in INSTANCES[lemma.name].instances(rng):
        assert lemma.condition_holds(env), f"{lemma.name}: generated instance violates the condition"
        lhs, rhs = lemma.sides(env)
        assert terms.allclose(lhs, rhs), f"{lemma.name}: sides differ on {env}"
        n += 1
    assert n >= 1


@pytest.mark.parametrize("lemma", [l for l in LIB.lemmas if l.when], ids=lambda l: l.name)
def test_conditioned_lemma_rejects(lemma):
    rejects = INSTANCES[lemma.name].rejects if lemma.name in INSTANCES else None
    assert rejects is not None, f"conditioned lemma {lemma.name} has no case its condition must reject"
    rng = random.Random(zlib.crc32(lemma.name.encode()))
    n = 0
    for env in rejects(rng):
        try:
            holds = lemma.condition_holds(env)
        except terms.EvalError:
            holds = False
        assert not holds, f"{lemma.name}: condition accepts a violating instance {env}"
        n += 1
    assert n >= 1


def test_lemma_names_no_model_constants():
    """Lemmas are generic: no integer literal beyond small dims/offsets (or a dtype's bound) in their text."""
    import re
    from entangle_py.lemmas.elementwise import INT64_FAR
    for lem in LIB.lemmas:
        for text in (lem.lhs, lem.rhs) + tuple(lem.when) + tuple(lem.trigger):
            for num in re.findall(r"(?<![\w.])-?\d+(?![\w.])", text):
                assert abs(int(num)) <= 2 or abs(int(num)) == INT64_FAR, f"{lem.name} mentions the constant {num}"


def _insert_value(eng, name, value):
    eng.add(f'(let ${name} (Gd "{name}"))', f"(given ${name})")      # an input's values
    eng.add(f"(set (ndim ${name}) {value.dim()})", f'(set (dtype ${name}) "{terms.dtype_name(value)}")')
    for i, s in enumerate(value.shape):
        eng.add(f"(set (dim ${name} {i}) (DLit {s}))")


def _dollar(text, names):
    """Refer to the e-graph's globals: every name in ``names`` as ``$name`` (not inside strings)."""
    for name in names:
        text = re.sub(rf'(?<=[\s(]){re.escape(name)}(?=[\s)])', f"${name}", text)
    return text


def _truth(fact, env):
    try:
        return bool(terms.evaluate(terms.parse_sexpr(fact), env))
    except terms.EvalError:
        return False     # an undefined fact (a dim past the end, d not in a permutation) is false


def _derived(eng, query):
    try:
        out = eng.run1(f"(extract {query})")[0]
    except EngineError:
        return None      # no such fact in the e-graph
    return out.termdag.to_string(out.term)


def _counted(dim, env):
    """A size counted from values, ``(DRows <term>)``, as the literal it is on env's tensors."""
    if dim is None or not dim.startswith("(DRows "):
        return dim
    for name in env:
        dim = dim.replace(f'(Gd "{name}")', name)
    return f"(DLit {terms.evaluate(terms.parse_sexpr(dim), env)})"


@pytest.mark.parametrize("rule", LIB.rules, ids=lambda r: r.name)
def test_shape_rule_matches_torch(rule):
    """Every rule ships a check.  ``(term, env)``: the term over leaves of env's tensors gets every
    shape fact, each equal to torch's.  ``(term, env, facts)``: the shape facts derived (if any) are
    torch's, and each egglog fact holds in the e-graph exactly when it is true of the torch values
    (``t`` is the term); across the checks some facts are true and some false."""
    assert rule.name in CHECKS, f"rule {rule.name} has no check (tests/lemma_instances/registry/)"
    rng = random.Random(zlib.crc32(rule.name.encode()))
    truths, has_facts = set(), False
    n = 0
    for text, env, *rest in CHECKS[rule.name](rng):
        assert "t" not in env
        eng = Engine(LIB)
        for name, value in env.items():
            _insert_value(eng, name, value)
        eng.add(f"(let $t {_dollar(text, env)})")
        eng.settle()
        expected = terms.evaluate(terms.parse_sexpr(text), env)
        if isinstance(expected, torch.Tensor):
            nd = _derived(eng, "(ndim $t)")
            if not rest or nd is not None:
                assert nd == str(expected.dim()), f"{rule.name}: ndim of {text}"
            for i in range(expected.dim() + 2):
                got = _counted(_derived(eng, f"(dim $t {i})"), env)
                if i < expected.dim() and not rest or got is not None:
                    want = f"(DLit {expected.shape[i]})" if i < expected.dim() else None
                    assert got == want, f"{rule.name}: dim {i} of {text}"
            dt = _derived(eng, "(dtype $t)")     # a dtype, where derived, is torch's
            assert dt is None or dt == f'"{terms.dtype_name(expected)}"', f"{rule.name}: dtype {dt} of {text}"
        has_facts = has_facts or bool(rest)
        for fact in (rest[0] if rest else ()):
            truth = _truth(fact, {**env, "t": expected})
            assert eng.holds(_dollar(fact, [*env, "t"])) == truth, f"{rule.name}: {fact} should be {truth} for {text}"
            truths.add(truth)
        n += 1
    assert n >= 1
    if has_facts:
        assert truths == {True, False}, f"{rule.name}: its facts should include true and false ones"


@pytest.mark.parametrize("lemma", [l for l in LIB.lemmas if l.assumes], ids=lambda l: l.name)
def test_assuming_lemma_needs_its_assumption(lemma):
    """A lemma resting on an assumption ships counterexamples: inputs violating the assumption on
    which its sides differ (or one side is undefined) -- the assumption is really needed."""
    rejects = INSTANCES[lemma.name].rejects if lemma.name in INSTANCES else None
    assert rejects is not None, f"{lemma.name} has no counterexample to its assumption"
    rng = random.Random(zlib.crc32(lemma.name.encode()))
    n = 0
    for env in rejects(rng):
        try:
            lhs, rhs = lemma.sides(env)
            differ = not terms.allclose(lhs, rhs)
        except terms.EvalError:
            differ = True
        assert differ, f"{lemma.name}: sides agree on a counterexample {env}"
        n += 1
    assert n >= 1


def test_assuming_lemmas_only_active_when_enabled():
    from entangle_py.config import ASSUMPTIONS
    assuming = [l for l in LIB.lemmas if l.assumes]
    assert assuming
    off = LIB.egglog(())
    on = LIB.egglog(tuple(ASSUMPTIONS))
    for lem in assuming:
        text = lem.egglog("lemmas")
        assert text not in off and text in on
