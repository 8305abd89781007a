"""Shape propagation: ``ndim`` and ``dim`` facts for terms that lemmas create.

Leaves and lowered graph nodes get their shapes from the graphs; these rules give shapes to new
terms (concat of parts, slices, elementwise results, products).  A shape fact gates lemmas, so the
tests insert random terms, run these rules and compare every derived fact with torch.
"""
from entangle_py.engine.lemma import Rule
from entangle_py.semantics.terms import UNARY_NAMES


def _same_shape(pattern: str, src: str, name: str) -> Rule:
    return Rule(name, (
        f"(rule ((= y {pattern}) (= n (ndim {src}))) ((set (ndim y) n)) :ruleset shapes)\n"
        f"(rule ((= y {pattern}) (= v (dim {src} i))) ((set (dim y i) v)) :ruleset shapes)"))


# the unary ops whose result has a float operand's dtype (the casts and logical_not do not)
FLOAT_UNARY = tuple(op for op in UNARY_NAMES if not op.startswith("to_") and op != "logical_not")

# the reductions over a list of ranks' parts of one shape and dtype (semantics/terms.py)
RANK_REDUCTIONS = ("rsum", "rmax", "rmean", "rlse")

RULES = [
    _same_shape("(unary op x)", "x", "shape-unary"),
    _same_shape("(scalar op x c)", "x", "shape-scalar"),
    _same_shape("(softmax x s)", "x", "shape-softmax"),
    # a sum (max, mean, log-sum-exp) over ranks has the shape of every rank's value, so of the first
    *(_same_shape(f"({r} (Cons x r))", "x", f"shape-{r}") for r in RANK_REDUCTIONS),
    # broadcasting operands: only facts both operands agree on (equal ndim, equal dims)
    Rule("shape-binary-same", (
        "(rule ((= y (binary op a b)) (= n (ndim a)) (= n (ndim b))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= y (binary op a b)) (= v (dim a i)) (= v (dim b i)) (= n (ndim a)) (= n (ndim b))) ((set (dim y i) v)) :ruleset shapes)")),
    # broadcasting operands of one ndim: a dim where the other operand's is 1
    Rule("shape-binary-bcast", (
        "(rule ((= y (binary op a b)) (= n (ndim a)) (= n (ndim b)) (= v (dim a i)) (= (DLit 1) (dim b i))) "
        "((set (dim y i) v)) :ruleset shapes)\n"
        "(rule ((= y (binary op a b)) (= n (ndim a)) (= n (ndim b)) (= v (dim b i)) (= (DLit 1) (dim a i))) "
        "((set (dim y i) v)) :ruleset shapes)")),
    # ... and a 0-D operand (a scalar tensor: the gradient of a mean, g / n) takes the other's shape
    Rule("shape-binary-0d", (
        "(rule ((= y (binary op a b)) (= 0 (ndim a)) (= n (ndim b))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= y (binary op a b)) (= 0 (ndim a)) (= v (dim b i))) ((set (dim y i) v)) :ruleset shapes)\n"
        "(rule ((= y (binary op a b)) (= 0 (ndim b)) (= n (ndim a))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= y (binary op a b)) (= 0 (ndim b)) (= v (dim a i))) ((set (dim y i) v)) :ruleset shapes)")),
    # where: the ndim of the widest operand (broadcasting); dims all three operands agree on
    Rule("shape-where-same", (
        "(rule ((= y (where c a b)) (= x (ndim c)) (= u (ndim a)) (= v (ndim b))) ((set (ndim y) (max x (max u v)))) :ruleset shapes)\n"
        "(rule ((= y (where c a b)) (= v (dim c i)) (= v (dim a i)) (= v (dim b i)) (= n (ndim c)) (= n (ndim a)) "
        "(= n (ndim b))) ((set (dim y i) v)) :ruleset shapes)")),
    # ... and, for operands of other ndims (a causal mask [s, s] selecting among scores [b, h, s, s]
    # and a 0-D fill), every dim an operand has that is not 1: broadcasting (right-aligned) makes
    # it the result's, the program being valid
    Rule("shape-where-bcast", "\n".join(
        f"(rule ((= y (where c a b)) (= n (ndim y)) (= m (ndim {z})) (= (DLit k) (dim {z} i)) (!= k 1)) "
        f"((set (dim y (+ i (- n m))) (DLit k))) :ruleset shapes)" for z in "cab")),
    Rule("shape-concat", (
        "(rule ((= y (concat (Cons x r) d)) (= n (ndim x))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= y (concat (Cons x r) d)) (= v (dim x i)) (!= i d)) ((set (dim y i) v)) :ruleset shapes)\n"
        "(rule ((= y (concat l d)) (= v (lsum l d))) ((set (dim y d) v)) :ruleset shapes)\n"
        "(rule ((= l (Nil)) (concat l2 d)) ((union (lsum l d) (DLit 0))) :ruleset shapes)\n"
        "(rule ((= l (Cons x r)) (= a (dim x d)) (= b (lsum r d))) ((union (lsum l d) (dadd a b))) :ruleset shapes)")),
    Rule("shape-slice", (
        "(rule ((= y (slice x d s e)) (= n (ndim x))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= y (slice x d s e)) (= v (dim x i)) (!= i d)) ((set (dim y i) v)) :ruleset shapes)\n"
        "(rule ((= y (slice x d s e))) ((set (dim y d) (dsub e s))) :ruleset shapes)")),
    Rule("shape-mm", (
        "(rule ((= y (mm a b))) ((set (ndim y) 2)) :ruleset shapes)\n"
        "(rule ((= y (mm a b)) (= v (dim a 0))) ((set (dim y 0) v)) :ruleset shapes)\n"
        "(rule ((= y (mm a b)) (= v (dim b 1))) ((set (dim y 1) v)) :ruleset shapes)")),
    Rule("shape-transpose", (
        "(rule ((= y (transpose x a b)) (= n (ndim x))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= y (transpose x a b)) (= v (dim x a))) ((set (dim y b) v)) :ruleset shapes)\n"
        "(rule ((= y (transpose x a b)) (= v (dim x b))) ((set (dim y a) v)) :ruleset shapes)\n"
        "(rule ((= y (transpose x a b)) (= v (dim x i)) (!= i a) (!= i b)) ((set (dim y i) v)) :ruleset shapes)")),
    # shape-list queries: length and last entry
    Rule("dlen", (
        "(rule ((= l (DCons a (DNil)))) ((set (dlast l) a)) :ruleset shapes)\n"
        "(rule ((= l (DCons a r)) (= v (dlast r))) ((set (dlast l) v)) :ruleset shapes)\n"
        "(rule ((= l (DNil))) ((set (dlen l) 0)) :ruleset shapes)\n"
        "(rule ((= l (DCons x r)) (= n (dlen r))) ((set (dlen l) (+ n 1))) :ruleset shapes)")),
    Rule("shape-view", (
        "(rule ((= y (view x s)) (= n (dlen s))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= l (DCons a r))) ((set (dat l 0) a)) :ruleset shapes)\n"
        "(rule ((= l (DCons a r)) (= v (dat r i))) ((set (dat l (+ i 1)) v)) :ruleset shapes)\n"
        "(rule ((= y (view x s)) (= v (dat s i))) ((set (dim y i) v)) :ruleset shapes)")),
    # (reduce op x dims keepdim): dims is a sorted IList.  (iask dims i) asks for (ihas dims i) (1 if
    # i is reduced) and (ibelow dims i) (reduced dims before i), which renumber dims when keepdim = 0.
    Rule("ilist-queries", (
        "(rule ((= y (reduce op x dims k)) (= v (dim x i))) ((iask dims i)) :ruleset shapes)\n"
        "(rule ((iask (ICons a r) i)) ((iask r i)) :ruleset shapes)\n"
        "(rule ((iask l i) (= l (INil))) ((set (ihas l i) 0) (set (ibelow l i) 0)) :ruleset shapes)\n"
        "(rule ((iask l i) (= l (ICons a r)) (= b (ibelow r i)) (= a i)) "
        "((set (ihas l i) 1) (set (ibelow l i) b)) :ruleset shapes)\n"
        "(rule ((iask l i) (= l (ICons a r)) (= h (ihas r i)) (= b (ibelow r i)) (< a i)) "
        "((set (ihas l i) h) (set (ibelow l i) (+ b 1))) :ruleset shapes)\n"
        "(rule ((iask l i) (= l (ICons a r)) (= h (ihas r i)) (= b (ibelow r i)) (> a i)) "
        "((set (ihas l i) h) (set (ibelow l i) b)) :ruleset shapes)\n"
        "(rule ((= l (INil))) ((set (ilen l) 0)) :ruleset shapes)\n"
        "(rule ((= l (ICons a r)) (= n (ilen r))) ((set (ilen l) (+ n 1))) :ruleset shapes)")),
    Rule("shape-reduce", (
        "(rule ((= y (reduce op x dims 1)) (= n (ndim x))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= y (reduce op x dims 0)) (= n (ndim x)) (= m (ilen dims))) ((set (ndim y) (- n m))) :ruleset shapes)\n"
        "(rule ((= y (reduce op x dims 1)) (= v (dim x i)) (= 0 (ihas dims i))) ((set (dim y i) v)) :ruleset shapes)\n"
        "(rule ((= y (reduce op x dims 1)) (= v (dim x i)) (= 1 (ihas dims i))) ((set (dim y i) (DLit 1))) :ruleset shapes)\n"
        "(rule ((= y (reduce op x dims 0)) (= v (dim x i)) (= 0 (ihas dims i)) (= b (ibelow dims i))) "
        "((set (dim y (- i b)) v)) :ruleset shapes)")),
    _same_shape("(layernorm x w b k e)", "x", "shape-layernorm"),
    # dtypes: data movement (and a concat or a sum over ranks, whose parts share one dtype) keeps
    # its input's.  Compute ops get none: a lemma whose condition reads a dtype reads it on tensors
    # of the programs (check/sizes.py) or on terms built from them by data movement.
    Rule("dtype-movement", "\n".join(
        f"(rule ((= y {pattern}) (= t (dtype x))) ((set (dtype y) t)) :ruleset shapes)" for pattern in (
            "(view x s)", "(expand x s)", "(slice x d a b)", "(transpose x a b)", "(permute x p)",
            "(concat (Cons x r) d)", *(f"({r} (Cons x r))" for r in RANK_REDUCTIONS), "(zpad x d lo hi)",
            "(pick x i)", "(take x i)"))),
    # ... and float arithmetic (and matrix products) of one dtype keeps it (torch's promotion is the identity there; a
    # Python scalar never promotes a float tensor): so a condition can read the dtype of a sum, a
    # product or a reduction computed inside a lowered op (layer norm's backward), not only of the
    # programs' tensors.  Int and bool operands get none (a sum of bools is int64).
    Rule("dtype-float-arith", "\n".join(
        [f'(rule ((= y (reduce "{op}" x dims k)) (= t (dtype x)) (fdtype t)) ((set (dtype y) t)) :ruleset shapes)'
         for op in ("sum", "mean", "amax")]
        + [f'(rule ((= y (binary "{op}" a b)) (= t (dtype a)) (= t (dtype b)) (fdtype t)) ((set (dtype y) t)) '
           ":ruleset shapes)" for op in ("add", "sub", "mul", "div")]
        + [f'(rule ((= y (scalar "{op}" x c)) (= t (dtype x)) (fdtype t)) ((set (dtype y) t)) :ruleset shapes)'
           for op in ("add", "sub", "rsub", "mul", "div")]
        # the unary math ops (not the casts, not logical_not: a bool) of a float keep its dtype
        + [f'(rule ((= y (unary "{op}" x)) (= t (dtype x)) (fdtype t)) ((set (dtype y) t)) :ruleset shapes)'
           for op in FLOAT_UNARY]
        # matrix products of one floating dtype (the parts of a row-parallel layer's partial sums)
        + [f"(rule ((= y ({op} a b)) (= t (dtype a)) (= t (dtype b)) (fdtype t)) ((set (dtype y) t)) :ruleset shapes)"
           for op in ("mm", "bmm", "matmul")])),
]
