"""Shape propagation: ``ndim`` and ``dim`` facts for terms that lemmas create.

Leaves and lowered graph nodes get their shapes from the graphs; these rules give shapes to new
terms (concat of parts, slices, elementwise results, products).  A shape fact gates lemmas, so the
tests insert random terms, run these rules and compare every derived fact with torch.
"""
from entangle_py.lemma import Rule
from lemmas._instances import concat_parts, repeat, tensor


def _same_shape(pattern: str, src: str, name: str) -> Rule:
    return Rule(name, (
        f"(rule ((= y {pattern}) (= n (ndim {src}))) ((set (ndim y) n)) :ruleset shapes)\n"
        f"(rule ((= y {pattern}) (= v (dim {src} i))) ((set (dim y i) v)) :ruleset shapes)"))


@repeat(3)
def _elementwise_terms(rng):
    x = tensor(rng, rng.randint(1, 4), rng.randint(1, 4))
    return ('(unary "exp" x)', {"x": x})


@repeat(3)
def _concat_terms(rng):
    d = rng.randrange(3)
    l = concat_parts(rng, 3, d, parts=rng.randint(1, 4))
    names = [f"p{i}" for i in range(len(l))]
    lst = "(Nil)"
    for n in reversed(names):
        lst = f"(Cons {n} {lst})"
    return (f"(concat {lst} {d})", dict(zip(names, l)))


@repeat(3)
def _slice_terms(rng):
    x = tensor(rng, 6, rng.randint(1, 4))
    s = rng.randint(0, 5)
    e = rng.randint(s, 6)
    return (f"(slice x 0 (DLit {s}) (DLit {e}))", {"x": x})


@repeat(3)
def _mm_terms(rng):
    return ("(mm a b)", {"a": tensor(rng, 2, 3), "b": tensor(rng, 3, 5)})


@repeat(3)
def _transpose_terms(rng):
    return ("(transpose x 0 2)", {"x": tensor(rng, 2, 3, 4)})


RULES = [
    _same_shape("(unary op x)", "x", "shape-unary"),
    _same_shape("(scalar op x c)", "x", "shape-scalar"),
    _same_shape("(softmax x s)", "x", "shape-softmax"),
    _same_shape("(rsum (Cons x r))", "x", "shape-rsum"),
    _same_shape("(rmax (Cons x r))", "x", "shape-rmax"),
    Rule("shape-binary-same", (
        "(rule ((= y (binary op a b)) (= n (ndim a)) (= n (ndim b))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= y (binary op a b)) (= v (dim a i)) (= v (dim b i)) (= n (ndim a)) (= n (ndim b))) ((set (dim y i) v)) :ruleset shapes)")),
    Rule("shape-concat", (
        "(rule ((= y (concat (Cons x r) d)) (= n (ndim x))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= y (concat (Cons x r) d)) (= v (dim x i)) (!= i d)) ((set (dim y i) v)) :ruleset shapes)\n"
        "(rule ((= y (concat l d)) (= v (lsum l d))) ((set (dim y d) v)) :ruleset shapes)\n"
        "(rule ((= l (Nil)) (concat l2 d)) ((union (lsum l d) (DLit 0))) :ruleset shapes)\n"
        "(rule ((= l (Cons x r)) (= a (dim x d)) (= b (lsum r d))) ((union (lsum l d) (dadd a b))) :ruleset shapes)"),
        check_terms=_concat_terms),
    Rule("shape-slice", (
        "(rule ((= y (slice x d s e)) (= n (ndim x))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= y (slice x d s e)) (= v (dim x i)) (!= i d)) ((set (dim y i) v)) :ruleset shapes)\n"
        "(rule ((= y (slice x d s e))) ((set (dim y d) (dsub e s))) :ruleset shapes)"),
        check_terms=_slice_terms),
    Rule("shape-mm", (
        "(rule ((= y (mm a b))) ((set (ndim y) 2)) :ruleset shapes)\n"
        "(rule ((= y (mm a b)) (= v (dim a 0))) ((set (dim y 0) v)) :ruleset shapes)\n"
        "(rule ((= y (mm a b)) (= v (dim b 1))) ((set (dim y 1) v)) :ruleset shapes)"),
        check_terms=_mm_terms),
    Rule("shape-transpose", (
        "(rule ((= y (transpose x a b)) (= n (ndim x))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= y (transpose x a b)) (= v (dim x a))) ((set (dim y b) v)) :ruleset shapes)\n"
        "(rule ((= y (transpose x a b)) (= v (dim x b))) ((set (dim y a) v)) :ruleset shapes)\n"
        "(rule ((= y (transpose x a b)) (= v (dim x i)) (!= i a) (!= i b)) ((set (dim y i) v)) :ruleset shapes)"),
        check_terms=_transpose_terms),
]
RULES[0] = Rule(RULES[0].name, RULES[0].text, check_terms=_elementwise_terms)


@repeat(2)
def _view_terms(rng):
    return ("(view x (DCons (DLit 6) (DCons (DLit 4) (DNil))))", {"x": tensor(rng, 2, 3, 4)})


RULES += [
    Rule("dlen", (
        "(rule ((= l (DCons a (DNil)))) ((set (dlast l) a)) :ruleset shapes)\n"
        "(rule ((= l (DCons a r)) (= v (dlast r))) ((set (dlast l) v)) :ruleset shapes)\n"
        "(rule ((= l (DNil))) ((set (dlen l) 0)) :ruleset shapes)\n"
        "(rule ((= l (DCons x r)) (= n (dlen r))) ((set (dlen l) (+ n 1))) :ruleset shapes)")),
    Rule("shape-view", (
        "(rule ((= y (view x s)) (= n (dlen s))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= l (DCons a r))) ((set (dat l 0) a)) :ruleset shapes)\n"
        "(rule ((= l (DCons a r)) (= v (dat r i))) ((set (dat l (+ i 1)) v)) :ruleset shapes)\n"
        "(rule ((= y (view x s)) (= v (dat s i))) ((set (dim y i) v)) :ruleset shapes)"),
        check_terms=_view_terms),
]


# ============================================================================ reductions, layer norm
# (reduce op x dims keepdim): dims is a sorted IList.  (iask dims i) asks for (ihas dims i) (1 if
# i is reduced) and (ibelow dims i) (reduced dims before i), which renumber dims when keepdim = 0.

@repeat(6)
def _reduce_terms(rng):
    nd = rng.randint(1, 4)
    x = tensor(rng, *[rng.randint(1, 5) for _ in range(nd)])
    dims = sorted(rng.sample(range(nd), rng.randint(1, nd)))
    lst = "(INil)"
    for d in reversed(dims):
        lst = f"(ICons {d} {lst})"
    op = rng.choice(["sum", "mean", "amax"])
    return (f'(reduce "{op}" x {lst} {rng.randint(0, 1)})', {"x": x})


@repeat(3)
def _layernorm_terms(rng):
    x = tensor(rng, rng.randint(1, 4), rng.randint(1, 4), 3)
    return ('(layernorm x w b 1 "1e-05")', {"x": x, "w": tensor(rng, 3), "b": tensor(rng, 3)})


RULES += [
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
        "((set (dim y (- i b)) v)) :ruleset shapes)"),
        check_terms=_reduce_terms),
    Rule("shape-layernorm", _same_shape("(layernorm x w b k e)", "x", "shape-layernorm").text,
         check_terms=_layernorm_terms),
]
