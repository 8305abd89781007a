"""Condition texts several lemma families share."""

ZERO_TEXTS = ("0.0", "0")       # the texts of a zero constant (cst z s t), float and integer


def is_zero_text(v: str) -> str:
    """The condition that the constant text ``v`` is one of ZERO_TEXTS (egglog's string primitives)."""
    return f'(= 1 (count-matches ",{",".join(ZERO_TEXTS)}," (+ "," (+ {v} ","))))'
