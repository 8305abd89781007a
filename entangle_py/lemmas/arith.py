"""Scalar constants: x / a / b = x / (a * b) and x * a * b = x * (a * b) where a * b is a float
exactly (rules ask (ask_cmul a b); the engine answers (cmul a b) = terms.const_product).  This
is how the mean of the ranks' means, (sum_r s_r / (n / W)) / W, meets the mean over the whole
batch, s / n (data-parallel loss averaging, DTensor's Partial("avg"))."""
from entangle_py.engine.lemma import Lemma, Rule

LEMMAS = [
    Lemma("div-div", '(scalar "div" (scalar "div" x a) b)', '(scalar "div" x c)', when=("(= c (cmul a b))",)),
    Lemma("mul-mul", '(scalar "mul" (scalar "mul" x a) b)', '(scalar "mul" x c)', when=("(= c (cmul a b))",)),
]

RULES = [
    Rule("ask-cmul", (
        '(rule ((= t (scalar "div" (scalar "div" x a) b))) ((ask_cmul a b)) :ruleset shapes)\n'
        '(rule ((= t (scalar "mul" (scalar "mul" x a) b))) ((ask_cmul a b)) :ruleset shapes)')),
]
