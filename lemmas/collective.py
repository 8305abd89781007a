"""Sums and maxima over ranks (the meaning of all-reduce / reduce-scatter)."""
from entangle_py.lemma import Lemma
from lemmas._instances import repeat, tensor


@repeat(4)
def _single(rng):
    return {"x": tensor(rng, rng.randint(1, 4), rng.randint(1, 4))}


LEMMAS = [
    Lemma("rsum-single", "(rsum (Cons x (Nil)))", "x", instances=_single),
    Lemma("rmax-single", "(rmax (Cons x (Nil)))", "x", instances=_single),
]
