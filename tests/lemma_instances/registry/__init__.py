"""The registry: every lemma of the library (entangle_py/lemmas/) by name -> its ``Instances``, every
rule by name -> its check; one module per lemma family.  tests/test_lemmas.py requires an entry for
each lemma and rule and no entry naming none, and checks every lemma and rule on its entry."""
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
