"""The instances of the arith lemmas (entangle_py/lemmas/arith.py), by lemma name; the checks of its
rules, by rule name."""
from lemma_instances.common import Instances
from lemma_instances.arith import cmul_checks, inexact, two_constants

INSTANCES = {
    "div-div": Instances(two_constants, rejects=inexact),
    "mul-mul": Instances(two_constants, rejects=inexact),
}

CHECKS = {
    "ask-cmul": cmul_checks,
}
