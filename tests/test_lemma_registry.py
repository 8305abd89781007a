"""The lemma library and its instances (test tooling, tests/lemma_instances/registry/) name the same
lemmas and rules: nothing in the library goes untested, no entry is left behind by a renamed lemma.
(Not a sampled file: these run in every tier; tests/test_lemmas.py checks each lemma on its entry.)"""
from entangle_py.engine.lemma import Lemma, Library, Rule
from entangle_py.lemmas import load_library
from lemma_instances.registry import CHECKS, INSTANCES


def _gaps(lib: Library, instances: dict, checks: dict) -> list[str]:
    lemmas, rules = {l.name for l in lib.lemmas}, {r.name for r in lib.rules}
    return ([f"lemma without instances: {n}" for n in sorted(lemmas - set(instances))]
            + [f"instances naming no lemma: {n}" for n in sorted(set(instances) - lemmas)]
            + [f"rule without a check: {n}" for n in sorted(rules - set(checks))]
            + [f"check naming no rule: {n}" for n in sorted(set(checks) - rules)])


def test_registry_names_every_lemma_and_rule():
    gaps = _gaps(load_library(), INSTANCES, CHECKS)
    assert not gaps, "\n".join(gaps)


def test_a_gap_is_found():
    """The check can fail: an unregistered lemma or rule, and an entry naming none, are reported."""
    lib = load_library()
    lib.lemmas.append(Lemma("no-instances", "(unary op x)", "x"))
    lib.rules.append(Rule("no-check", ""))
    stale = {**INSTANCES, "no-such-lemma": INSTANCES[lib.lemmas[0].name]}
    assert _gaps(lib, stale, {**CHECKS, "no-such-rule": CHECKS[lib.rules[0].name]}) == [
        "lemma without instances: no-instances", "instances naming no lemma: no-such-lemma",
        "rule without a check: no-check", "check naming no rule: no-such-rule"]


def test_mean_twins_only_for_sum_lemmas_whose_conditions_survive_dividing_the_parts():
    """f(rsum l) = rsum(map_f l) brings f(rmean l) = rmean(map_f l) (collective.mean_twins) where
    its conditions speak only of dtypes and the constant's text; a condition on the parts' values
    may not hold for the parts divided by n, so such a lemma gets no twin."""
    from entangle_py.engine.lemma import Lemma
    from entangle_py.lemmas.collective import mean_twins
    linear = Lemma("scale-rsum", '(scalar "mul" (rsum l) c)', '(rsum (map_scalar "mul" l c))',
                   when=('(!= c "inf")', "(= t (dtype (rsum l)))", "(fdtype t)"))
    valued = Lemma("floor-rsum", '(unary "floor" (rsum l))', '(rsum (map_unary "floor" l))',
                   when=('(= 1 (intvalued l))',))
    not_a_map = Lemma("rsum-pair", "(rsum (Cons a (Cons b (Nil))))", '(binary "add" a b)')
    twins = mean_twins([linear, valued, not_a_map])
    assert [(t.name, t.lhs, t.rhs) for t in twins] == [
        ("scale-rmean", '(scalar "mul" (rmean l) c)', '(rmean (map_scalar "mul" l c))')]
    assert twins[0].when == ('(!= c "inf")', "(= t (dtype (rmean l)))", "(fdtype t)")
