"""The instances of the positions lemmas (entangle_py/lemmas/positions.py), by lemma name; the checks of its
rules, by rule name."""
from lemma_instances.common import Instances
from lemma_instances.positions import (
    adjacent, apart, arange_terms, inside, inside_bad, iscalar_slice, offset, slice_inside, slice_outside)

INSTANCES = {
    "arange-add": Instances(offset),
    "arange-sub": Instances(offset),
    "arange-slice": Instances(slice_inside, rejects=slice_outside),
    "iscalar-slice": Instances(iscalar_slice),
    "arange-concat": Instances(adjacent, rejects=apart),
    "arange-inside": Instances(inside, rejects=inside_bad),
}

CHECKS = {
    "shape-arange": arange_terms,
}
