"""Scalar constants: x / a / b = x / (a * b) and x * a * b = x * (a * b) where a * b is a float
exactly (the engine answers (ask_cmul a b) with (cmul a b) = terms.const_product).  This is how a
mean of the ranks' means, (sum_r s_r / (n / W)) / W, meets the mean over the whole batch, s / n
(data-parallel loss averaging, DTensor's Partial("avg"))."""
from entangle_py.lemma import Lemma, Rule
from entangle_py.terms import const_product
from lemmas._instances import repeat, tensor

_CONSTS = ["2.0", "0.5", "3.0", "4.0", "0.25", "8.0", "-2.0", "1.5"]


@repeat(8)
def _two_constants(rng):
    nd = rng.randint(0, 3)
    a, b = rng.choice(_CONSTS), rng.choice(_CONSTS)
    return {"x": tensor(rng, *[rng.randint(1, 4) for _ in range(nd)]), "a": a, "b": b,
            "c": const_product(a, b)}


@repeat(4)
def _inexact(rng):
    """0.1 * 0.1 is not a float exactly: no product, so the condition cannot hold for any c."""
    return {"x": tensor(rng, 2), "a": rng.choice(["0.1", "3.0"]), "b": "0.1", "c": "0.010000000000000002"}


LEMMAS = [
    Lemma("div-div", '(scalar "div" (scalar "div" x a) b)', '(scalar "div" x c)', when=("(= c (cmul a b))",),
          instances=_two_constants, rejects=_inexact),
    Lemma("mul-mul", '(scalar "mul" (scalar "mul" x a) b)', '(scalar "mul" x c)', when=("(= c (cmul a b))",),
          instances=_two_constants, rejects=_inexact),
]

RULES = [
    Rule("ask-cmul", (
        '(rule ((= t (scalar "div" (scalar "div" x a) b))) ((ask_cmul a b)) :ruleset shapes)\n'
        '(rule ((= t (scalar "mul" (scalar "mul" x a) b))) ((ask_cmul a b)) :ruleset shapes)')),
]
