"""Positions: ``(arange a k n)`` = [a, a + k, ..., a + (n - 1) k] (int64; terms.py).

Position ids a rank builds for its own rows (context parallelism: ``arange(s) + rank * s``) meet the
sequential program's ``arange(S)``: an integer offset moves an arange, a slice of one is one, and
one inside another (same step, on its grid) is the slice of it there -- with ``slice-tile`` and
``slice-full`` (movement), the ranks' adjacent aranges tile the whole one; an integer op of positions
(a mask) follows the slice.
"""
from entangle_py.engine.lemma import Lemma, Rule

LEMMAS = [
    # an integer offset moves the positions (the rank's global offset added to local positions)
    Lemma("arange-add", '(iscalar "add" (arange a k n) c)', "(arange (+ a c) k n)"),
    Lemma("arange-sub", '(iscalar "sub" (arange a k n) c)', "(arange (- a c) k n)"),
    # a slice of positions is positions
    Lemma("arange-slice", "(slice (arange a k (DLit m)) 0 (DLit s) (DLit e))", "(arange (+ a (* k s)) k (DLit (- e s)))",
          when=("(<= 0 s)", "(<= s e)", "(<= e m)")),
    # an integer op of a slice is the slice of the op (elementwise, any op): a rank's mask of its
    # positions (gt(positions, c)), its positions being a slice of the whole (arange-inside), is the
    # slice of the whole mask; slice-tile then tiles the ranks' masks into it
    Lemma("iscalar-slice", "(iscalar op (slice x d a b) c)", "(slice (iscalar op x c) d a b)"),
    # adjacent positions (same step, the second starting where the first ends) are one run
    Lemma("arange-concat", "(concat (Cons (arange a k (DLit m)) (Cons (arange b k (DLit p)) r)) 0)",
          "(concat (Cons (arange a k (DLit (+ m p))) r) 0)", when=("(= b (+ a (* k m)))",)),
    # positions inside longer positions with the same step (on their grid) are a slice of them;
    # only between aranges already in the e-graph
    Lemma("arange-inside", "(arange a k (DLit m))", "(slice (arange b k (DLit n)) 0 (DLit i) (DLit (+ i m)))",
          trigger=("(arange a k (DLit m))", "(arange b k (DLit n))"),
          when=("(!= k 0)", "(< 0 m)", "(< m n)", "(= (% (- a b) k) 0)", "(= i (/ (- a b) k))", "(<= 0 i)",
                "(<= (+ i m) n)")),
]

RULES = [
    Rule("shape-arange", "(rule ((= y (arange a k n))) ((set (ndim y) 1) (set (dim y 0) n)) :ruleset shapes)"),
]
