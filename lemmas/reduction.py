"""Reductions over dims, softmax: versus concat along a dim they do not reduce."""
from entangle_py.lemma import Lemma
from lemmas._instances import concat_parts, repeat


@repeat(6)
def _softmax_other(rng):
    nd = rng.randint(2, 3)
    d, s = rng.sample(range(nd), 2)
    return {"l": concat_parts(rng, nd, d), "d": d, "s": s}


@repeat(3)
def _softmax_same(rng):
    nd = rng.randint(1, 3)
    d = rng.randrange(nd)
    return {"l": concat_parts(rng, nd, d, parts=2), "d": d, "s": d}


@repeat(4)
def _map_softmax(rng):
    l = concat_parts(rng, 2, 0)
    return {"x": l[0], "r": l[1:], "s": 1}


LEMMAS = [
    Lemma("softmax-concat", "(softmax (concat l d) s)", "(concat (map_softmax l s) d)",
          when=("(!= d s)",), instances=_softmax_other, rejects=_softmax_same),
    Lemma("map-softmax-nil", "(map_softmax (Nil) s)", "(Nil)", instances=lambda rng: [{"s": 0}]),
    Lemma("map-softmax-cons", "(map_softmax (Cons x r) s)", "(Cons (softmax x s) (map_softmax r s))",
          instances=_map_softmax),
]
