"""The registry: every lemma of the library (entangle_py/lemmas/) by name -> its ``Instances``, every
rule by name -> its check; one module per lemma family.  tests/test_lemmas.py requires an entry for
each lemma and rule and no entry naming none, and checks every lemma and rule on its entry."""
from lemma_instances.common import Instances
from lemma_instances.registry import (arith, collective, elementwise, indexing, linalg, movement, positions,
                                      reduction, shapes)

FAMILIES = {"arith": arith, "collective": collective, "elementwise": elementwise, "indexing": indexing,
            "linalg": linalg, "movement": movement, "positions": positions, "reduction": reduction, "shapes": shapes}


def _merged(table: str) -> dict:
    out = {}
    for family, mod in FAMILIES.items():
        entries = getattr(mod, table)
        twice = set(out) & set(entries)
        assert not twice, f"{family}: {sorted(twice)} registered by another family too"
        out.update(entries)
    return out


INSTANCES = _merged("INSTANCES")
CHECKS = _merged("CHECKS")


def _means_defined(lem, gen):
    """The bindings of ``gen`` on which the twin ``lem``'s sides are defined: a mean over ranks is
    of floating parts (a sum lemma's int instances have none)."""
    from entangle_py.semantics import terms

    def only(rng):
        for env in gen(rng):
            try:
                terms.evaluate(terms.parse_sexpr(lem.lhs), env)
            except (ValueError, terms.EvalError):
                continue
            yield env
    return only


def _mean_twin_instances() -> dict:
    """A derived mean-over-ranks twin (entangle_py/lemmas/collective.py: mean_twins) is checked on
    its sum lemma's instances and rejects where a mean is defined (floating parts)."""
    from entangle_py.lemmas import load_library
    out = {}
    for lem in load_library().lemmas:
        base = lem.name.replace("rmean", "rsum")
        if lem.family == "collective" and base != lem.name and base in INSTANCES and lem.name not in INSTANCES:
            src = INSTANCES[base]
            out[lem.name] = Instances(_means_defined(lem, src.instances),
                                      _means_defined(lem, src.rejects) if src.rejects else None)
    return out


INSTANCES.update(_mean_twin_instances())
