"""Sums and maxima over ranks (the meaning of all-reduce / reduce-scatter)."""
from entangle_py.engine.lemma import Lemma
from lemmas._instances.collective import single

LEMMAS = [
    # one rank: the sum (max) over ranks is its own value
    Lemma("rsum-single", "(rsum (Cons x (Nil)))", "x", instances=single),
    Lemma("rmax-single", "(rmax (Cons x (Nil)))", "x", instances=single),
]
