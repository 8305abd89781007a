"""A WRONG user lemma: x * c = x for every scalar c."""
from entangle_py.engine.lemma import Lemma

LEMMAS = [Lemma("user-mul-is-identity", '(scalar "mul" x c)', "x")]
