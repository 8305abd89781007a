"""Instances of the collective lemmas (lemmas/collective.py): sums and maxima over ranks."""
from __future__ import annotations

from lemmas._instances import repeat, tensor


@repeat(4)
def single(rng):
    return {"x": tensor(rng, rng.randint(1, 4), rng.randint(1, 4))}
