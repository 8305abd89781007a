"""Sums and maxima over ranks (the meaning of all-reduce / reduce-scatter)."""
import re

from entangle_py.engine.lemma import Lemma, Rule
from entangle_py.semantics.terms import NTEXT_MAX
from entangle_py.lemmas.conditions import is_zero_text

LEMMAS = [
    # one rank: the sum (max) over ranks is its own value
    Lemma("rsum-single", "(rsum (Cons x (Nil)))", "x"),
    Lemma("rmax-single", "(rmax (Cons x (Nil)))", "x"),
    # a part plus a sum of writes into zeros is one sum (writes at disjoint rows, iput-rsum-disjoint,
    # nest to the right: each expert's write on one rank, 4 ranks of one expert each).  Not for any
    # inner sum: x + 0 = x puts a pair (x, zeros) in x's class, which would join every sum x ends
    # and grow it by a zero without end
    Lemma("rsum-nested-last", "(rsum (Cons a (Cons (rsum (Cons (iput z i x) r)) (Nil))))",
          "(rsum (Cons a (Cons (iput z i x) r)))"),
    # a zero part of a sum over a pair of ranks drops out (x + 0 = x; IEEE makes -0.0 + 0.0 a +0.0:
    # one zero): a rank that holds none of a gradient contributes zeros (broadcast's backward, a
    # reduce to src: zeros_like on the other rank).  A pair only, and the other part itself: the
    # sum is then in that part's class, and sums over more ranks shortened one zero at a time
    # (or a one-rank sum) beside it are lists of other lengths in one class, which add-rsum-rsum
    # zips into stuck zip_ranks that nest without end
    Lemma("rsum-zero-first", '(rsum (Cons (cst z s t) (Cons y (Nil))))', "y", when=(is_zero_text("z"),)),
    Lemma("rsum-zero-second", '(rsum (Cons x (Cons (cst z s t) (Nil))))', "x", when=(is_zero_text("z"),)),
    # a value the ranks compute apart, summed by the sequential program: (peer a b) says b is the
    # same node as a on the next rank (check/distributed.py declares it from the graphs: one shape
    # and dtype).  Their sum is the sum over those ranks in rank order (b + a = a + b exactly; not
    # bools: torch adds them as an or).  Hugging Face's MoE: autograd accumulates the experts'
    # parts of the routing weights' gradient in reverse, ((p3 + p2) + p1) + p0, each rank holds
    # the sum of its own experts' (R1 = p3 + p2, R0 = p1 + p0) and never all-reduces it
    Lemma("rsum-peer-add", '(binary "add" b a)', "(rsum (Cons a (Cons b (Nil))))",
          when=("(peer a b)", '(!= "bool" (dtype a))')),
    # ... and a sum over ranks that starts at b plus b's peer on the rank before is the longer sum
    # (reals; floats up to rounding, as every sum over ranks)
    Lemma("rsum-peer-extend", '(binary "add" (rsum (Cons b r)) a)', "(rsum (Cons a (Cons b r)))",
          when=("(peer a b)", '(!= "bool" (dtype a))')),
    # ... where the sequential program has added the parts of a rank's sum one at a time:
    # (x + a) + b = x + (a + b) where a + b is in the e-graph, a rank's own partial sum of the same
    # parts, and x is its peer on the next rank, or a sum over ranks that starts at that peer: the
    # regrouped add is then read as the sum over ranks (rsum-peer-add/extend).  Reals; floats up
    # to rounding.  One dtype (mixed, the promotion differs: True + True is True, True + (True +
    # 0.0) is 2.0).  Only there: with any peer of a + b, (r1.y + bias) on rank 0 regrouped a
    # missing all-reduce's sum + bias as r1.y + r0.out, one add cheaper than the sum over ranks
    # the failure report must name (examples/mlp.py)
    Lemma("add-assoc-peer", '(binary "add" (binary "add" x a) b)', '(binary "add" x (binary "add" a b))',
          when=("(= (dtype x) (dtype a))", "(= (dtype a) (dtype b))"),
          trigger=('(binary "add" (binary "add" x a) b)', '(peer (binary "add" a b) x)')),
    Lemma("add-assoc-peer-rsum", '(binary "add" (binary "add" (rsum (Cons w r)) a) b)',
          '(binary "add" (rsum (Cons w r)) (binary "add" a b))',
          when=("(= (dtype w) (dtype a))", "(= (dtype a) (dtype b))"),
          trigger=('(binary "add" (binary "add" (rsum (Cons w r)) a) b)', '(peer (binary "add" a b) w)')),
    # a slice of a sum over ranks is the sum of the ranks' slices (linear).  Two targeted uses:
    # a reduce-scatter (slice along d of a sum) of parts that are concats along d -- DTensor's
    # Shard(1) reduce-scatter, a cat along dim 0 of each rank's dim-1 chunks: each rank's block
    # is then the sum of one chunk ...
    Lemma("slice-rsum-concat", "(slice (rsum (Cons (concat m d) r)) d s e)",
          "(rsum (map_slice (Cons (concat m d) r) d s e))"),
    # a view of an elementwise op of a sum over ranks is the op of the sum of the ranks' views
    # (both commute with a view): the sequential log_softmax views the log of its all-reduced
    # log-sum-exp, the ranks take the log of their all-reduced views (keepdim sums)
    Lemma("view-unary-rsum", "(view (unary op (rsum l)) s)", "(unary op (rsum (map_view l s)))"),
    # ... and, where a sum over ranks of slices (x's first) is in the e-graph, the same slice of
    # the sum over ranks starting with x (with slice-tile, the chunks' sums tile that sum)
    Lemma("slice-rsum-fold", "(slice (rsum (Cons x r2)) d s e)", "(rsum (map_slice (Cons x r2) d s e))",
          trigger=("(rsum (Cons (slice x d s e) r1))", "(rsum (Cons x r2))")),
    # ... and where the same slice of the first part is in the e-graph (a rank sliced its own part:
    # the columns of a tangent every rank holds a share of, topk's backward)
    Lemma("slice-rsum-part", "(slice (rsum (Cons x r)) d s e)", "(rsum (map_slice (Cons x r) d s e))",
          trigger=("(slice (rsum (Cons x r)) d s e)", "(slice x d s e)")),
    # a tensor added to a sum over n ranks is the sum over the ranks of each one's part plus 1/n
    # of it: sum_r a_r + y = sum_r (a_r + y / n), exact for reals.  Where a program divides y by n
    # (y / n is in the e-graph, the trigger): DTensor's Partial + Replicate rule, a row-parallel
    # linear layer adding bias / W on every rank before the all-reduce.  Only for one floating
    # dtype (with an int or bool y the division promotes; y / n * n is then another dtype).
    Lemma("add-rsum-shared", '(binary "add" (rsum l) y)', '(rsum (zip_ranks "add" l (repl (scalar "div" y c) n)))',
          trigger=('(binary "add" (rsum l) y)', '(scalar "div" y c)'),
          when=("(= n (tlen l))", "(= c (ntext n))", "(= t (dtype y))", "(= t (dtype (rsum l)))", "(fdtype t)")),
]

# (binary "add" a y) of a's shape and one dtype, not bool (added as an or): where a rank adds y to
# its own part of a sum over ranks, a + y is the sum's part, and y broadcasts into a
_ADDS_INTO = ('(= t (dtype {a}))', "(= t (dtype y))", '(!= "bool" t)', "(= n (ndim {a}))",
              '(= n (ndim (binary "add" {a} y)))', '(bsame {a} (binary "add" {a} y) n)')

# a sum over ranks plus y is the sum with y added to one rank's part, where the ranks sum exactly
# that (the sum is in the e-graph: the trigger): a replicated term (a duplicate parameter's squared
# norm, a bias) counted by one rank before an all-reduce.  Only where that sum exists: where every
# rank adds y and nothing sums them (a missing all-reduce), the add stays the failing operator
# instead of relating to rank 0's output plus the other ranks' unreduced parts.  Reals
# (reassociation), as every sum over ranks
LEMMAS += [
    Lemma("add-rsum-part", '(binary "add" (rsum (Cons a r)) y)', '(rsum (Cons (binary "add" a y) r))',
          trigger=('(binary "add" (rsum (Cons a r)) y)', '(rsum (Cons (binary "add" a y) r))'), when=tuple(c.format(a="a") for c in _ADDS_INTO)),
    Lemma("add-rsum-part-second", '(binary "add" (rsum (Cons a (Cons b r))) y)', '(rsum (Cons a (Cons (binary "add" b y) r)))',
          trigger=('(binary "add" (rsum (Cons a (Cons b r))) y)', '(rsum (Cons a (Cons (binary "add" b y) r)))'),
          when=tuple(c.format(a="b") for c in _ADDS_INTO)),
]

# an accumulation (x + a) + b (acc = 0; acc = acc + loss_i over micro-batches, in rank order) is
# the sum over a pair of ranks of x and a + b where a + b is x's peer (the next rank accumulated
# its own micro-batches: add-assoc-peer is the reverse order).  Reals (regrouping), one dtype, not
# bool (a sum over ranks of bools is undefined)
LEMMAS += [
    Lemma("add-assoc-rsum", '(binary "add" (binary "add" x a) b)', '(rsum (Cons x (Cons (binary "add" a b) (Nil))))',
          trigger=('(binary "add" (binary "add" x a) b)', '(peer x (binary "add" a b))'),
          when=("(= t (dtype x))", "(= t (dtype a))", "(= t (dtype b))", '(!= "bool" t)')),
]

# the mean over ranks (clean: division by the world size).  A sum over n ranks divided by n -- the
# text a program's `/ world_size` lowers to (ntext) -- is their mean: Megatron's
# average_losses_across_data_parallel_group, DDP's gradient average.  So is a sum over n ranks of
# each part divided by n: the sequential mean's 1 / N carried into the ranks' sums (scalar-div-rsum,
# div-div) meets the ranks' own means that way.  Floating parts only (an int sum divides into
# another dtype); a divisor other than the list's length is no mean (a rank count is no batch size)
_MEAN_OF = ("(= n (tlen (Cons x r)))", "(= c (ntext n))", "(= t (dtype x))", "(fdtype t)")
LEMMAS += [
    Lemma("rmean-div-rsum", '(scalar "div" (rsum (Cons x r)) c)', "(rmean (Cons x r))", when=_MEAN_OF),
    Lemma("rmean-rsum-div", '(rsum (map_scalar "div" (Cons x r) c))', "(rmean (Cons x r))", when=_MEAN_OF),
    # ... and a sum over n ranks of parts divided by c is the mean of the parts divided by c / n,
    # where that quotient is a float exactly: the sequential mean over N rows, sum_r s_r / N, is
    # the mean of the ranks' means s_r / (N / n) over shards of N / n rows (equal shards only:
    # with uneven ones no single divisor makes each rank's mean)
    Lemma("rmean-rsum-div-scaled", '(rsum (map_scalar "div" (Cons x r) c))',
          '(rmean (map_scalar "div" (Cons x r) a))',
          when=("(= n (tlen (Cons x r)))", "(= w (ntext n))", "(= a (cdiv c w))", '(!= a "1.0")',
                "(= t (dtype x))", "(fdtype t)")),
    # a list of parts each divided by c is the list divided by c, folded from its end, so that
    # rmean-rsum-div sees a sum over ranks of quotients however it was written
    Lemma("map-scalar-div-fold-one", '(Cons (scalar "div" x c) (Nil))', '(map_scalar "div" (Cons x (Nil)) c)'),
    Lemma("map-scalar-div-fold", '(Cons (scalar "div" x c) (map_scalar "div" m c))',
          '(map_scalar "div" (Cons x m) c)'),
]

# conditions a sum lemma may have and still be twinned: its dtype, a floating one, the constant's text
_TWIN_CONDITIONS = re.compile(r'^\((= t \(dtype .*\)|fdtype t|!= c "[^"]*")\)$')


def mean_twins(lemmas) -> list:
    """The mean over ranks' twin of every lemma that moves an op into a sum over ranks part by part,
    f(rsum l) = rsum(map_f l): f(rmean l) = rmean(map_f l).  Sound for each: f additive over the
    parts (what the sum's lemma states) is homogeneous for the rational 1 / n, f(y / n) = f(y) / n,
    so f(sum_i x_i / n) = sum_i f(x_i / n) = sum_i f(x_i) / n.  That needs the sum's lemma to hold
    for the parts x_i / n too: only lemmas whose conditions speak of dtypes and of the constant's
    text (_TWIN_CONDITIONS) are twinned -- a condition on the parts' values (integer-valued parts,
    say) may fail for x_i / n.  Derived, not written twice: a new linear op's sum lemma brings its
    mean lemma (load_library), and the property tests draw bindings for the twin as for any lemma."""
    def twin(text):
        return text.replace("(rsum ", "(rmean ")
    out = []
    for lem in lemmas:
        if lem.lhs.count("(rsum ") == 1 and lem.rhs.startswith("(rsum (map_") and lem.rhs.count("(rsum ") == 1 \
                and all(_TWIN_CONDITIONS.match(c) for c in lem.when):
            out.append(Lemma(lem.name.replace("rsum", "rmean"), twin(lem.lhs), twin(lem.rhs),
                             when=tuple(map(twin, lem.when)), family="collective",
                             assumes=lem.assumes, trigger=tuple(map(twin, lem.trigger))))
    return out


RULES = [
    Rule("ask-bsame-add-rsum-part", (
        '(rule ((= z (binary "add" (rsum (Cons a r)) y)) (= w (binary "add" a y))) ((bsame a w 0)) :ruleset shapes)\n'
        '(rule ((= z (binary "add" (rsum (Cons a (Cons b r))) y)) (= w (binary "add" b y))) ((bsame b w 0)) :ruleset shapes)')),
    # (tlen l): the length of a list of ranks, asked where add-rsum-shared or a mean over ranks
    # (ask-rmean) may fire; (ntext n) the text of the divisor by that count ("2.0", as lowering
    # writes a float constant)
    Rule("tlen", (
        '(rule ((= t (binary "add" (rsum l) y)) (= q (scalar "div" y c))) ((ask_tlen l)) :ruleset shapes)\n'
        "(rule ((ask_tlen (Cons a r))) ((ask_tlen r)) :ruleset shapes)\n"
        "(rule ((ask_tlen l) (= l (Nil))) ((set (tlen l) 0)) :ruleset shapes)\n"
        "(rule ((ask_tlen l) (= l (Cons a r)) (= n (tlen r))) ((set (tlen l) (+ n 1))) :ruleset shapes)\n"
        f"(rule ((ask_tlen l) (= n (tlen l)) (> n 0) (< n {NTEXT_MAX})) "
        '((set (ntext n) (+ (to-string n) ".0"))) :ruleset shapes)')),
    # a mean over ranks may be read where a sum over n ranks is divided (rmean-div-rsum), or is a sum
    # of parts divided (rmean-rsum-div and -scaled: c / n asked, the engine folds it where exact)
    Rule("ask-rmean", (
        '(rule ((= t (scalar "div" (rsum l) c))) ((ask_tlen l)) :ruleset shapes)\n'
        '(rule ((= t (rsum (map_scalar "div" l c)))) ((ask_tlen l)) :ruleset shapes)\n'
        '(rule ((= t (rsum (map_scalar "div" l c))) (= n (tlen l)) (= w (ntext n))) ((ask_cdiv c w)) :ruleset shapes)')),
]
