"""Reductions over dims, softmax and layer norm: versus concat along a dim and sums over ranks.

(reduce op x dims keepdim) with op in sum / mean / amax and dims a sorted IList.  Versus a concat
along d: a reduction over dims without d acts part by part (d renumbered when keepdim = 0); a sum
(max) over dims with d is the sum (max) over ranks of the parts' sums (maxima).  A mean over d is
NOT the sum of the parts' means (different counts): no lemma for it.  (A data-parallel mean loss
over ranks of equal, static row counts meets the global one without it: the picks of row parts,
pick-concat-rows, and constant folding of the two divisions, entangle_py/lemmas/arith.py.)
"""
from entangle_py.engine.lemma import Lemma, Rule

# s is x with its dims a and a+1 merged: the other dims of x, before and after, are kept
_MERGED = ("(= n (ndim x))", "(= m (dlen s))", "(= n (+ m 1))", "(vpfx x s a)", "(vsfx x s (- m (+ a 1)))")

# the pick along the last dim k of log_softmax(x) as lowered (x - m) - log(sum(exp(x - m))), m = amax
# keepdim, once the log-sum-exp is taken out of the pick (pick-binary-bcast)
_SHIFTED = '(binary "sub" x (reduce "amax" x (ICons k (INil)) 1))'
_PICK_LOG_SOFTMAX = (f'(binary "sub" (pick {_SHIFTED} t) '
                     f'(unary "log" (reduce "sum" (unary "exp" {_SHIFTED}) (ICons k (INil)) 0)))')

# log_softmax(x) along k as lowered: x - m - log(S) with S the sum of exponentials of the shifted x
_SUMEXP = f'(reduce "sum" (unary "exp" {_SHIFTED}) (ICons k (INil)) 0)'
_LOG_SOFTMAX = f'(binary "sub" {_SHIFTED} (view (unary "log" {_SUMEXP}) s))'
# ... and of the raw (unshifted) x
_SUMEXP_RAW = '(reduce "sum" (unary "exp" x) (ICons k (INil)) 0)'

# The reduction class, by table.  How a reduction over a dim a concat splits combines the parts'
# reductions: a sum of sums, a max of maxima, a log-sum-exp of log-sum-exps (the combining op over
# parts, a term constructor).  Each row: reduction -> combining op.  A mean combines with
# the counts (lowered as a sum over its static count: the sum's row); a norm through its p-th
# power, a sum (norm-pow)
COMBINE_OVER_PARTS = {
    "sum": "rsum",
    "amax": "rmax",
    "logsumexp": "rlse",
}
# reductions that are the identity on one float element (amin is lowered -amax(-x); a norm is
# |x|, a variance 0 or nan, nansum 0 at a nan)
SINGLETON_IDENTITY = ("sum", "mean", "amax", "logsumexp")
_SINGLETON_OP = f'(= 1 (count-matches ",{",".join(SINGLETON_IDENTITY)}," (+ "," (+ op ","))))'
# op is "norm:<p>" with p the pow's order text, finite and positive
_NORM_OF_ORDER_P = ('(= 1 (count-matches op "norm:"))', '(= p (replace op "norm:" ""))', '(= 0 (count-matches p "-"))',
                    '(!= p "inf")', '(!= p "nan")', '(!= p "0.0")', '(!= p "0")', "(= t (dtype x))", "(fdtype t)")

LEMMAS = [
    # softmax normalises along s: parts along another dim are independent
    Lemma("softmax-concat", "(softmax (concat l d) s)", "(concat (map_softmax l s) d)",
          when=("(!= d s)",)),
    Lemma("map-softmax-nil", "(map_softmax (Nil) s)", "(Nil)"),
    Lemma("map-softmax-cons", "(map_softmax (Cons x r) s)", "(Cons (softmax x s) (map_softmax r s))"),
    # reductions over dims versus a concat along d
    Lemma("reduce-concat-other-keep", "(reduce op (concat l d) dims 1)", "(concat (map_reduce op l dims 1) d)",
          when=("(= (ihas dims d) 0)",)),
    Lemma("reduce-concat-other-drop", "(reduce op (concat l d) dims 0)", "(concat (map_reduce op l dims 0) (- d b))",
          when=("(= (ihas dims d) 0)", "(= b (ibelow dims d))")),
    # the reduction class: a reduction over dims that hold d, of a concat along d, is the combining
    # op over the parts of the parts' reductions (COMBINE_OVER_PARTS; one lemma per row)
    *(Lemma(f"reduce-{op}-concat", f'(reduce "{op}" (concat l d) dims k)', f'({combine} (map_reduce "{op}" l dims k))',
            when=("(= (ihas dims d) 1)",))
      for op, combine in COMBINE_OVER_PARTS.items()),
    # a norm of a finite positive order p ("norm:<p>") raised to p is the sum of |x| ** p over its
    # dims: a norm over a split dim (a gradient norm of shards) meets the sum over ranks of the
    # parts' powers through reduce-sum-concat.  Real arithmetic (the norm's root and power round);
    # float x (torch's norms take no ints).  Not for p = 0 (a count), inf or a negative p
    Lemma("norm-pow", '(scalar "pow" (reduce op x dims k) p)', '(reduce "sum" (scalar "pow" (unary "abs" x) p) dims k)',
          when=_NORM_OF_ORDER_P),
    # ... and the 2-norm, the root a program writes for it (sqrt), of that sum: a global 2-norm
    # meets the root of the all-reduced squares of the ranks' norms.  Real arithmetic, float x
    Lemma("norm2-sqrt", '(reduce "norm:2.0" x dims k)', '(unary "sqrt" (reduce "sum" (scalar "pow" (unary "abs" x) "2.0") dims k))',
          when=("(= t (dtype x))", "(fdtype t)")),
    # the inf-norm is the max of |x| (exact; torch has no inf-norm of nothing): over a split dim it
    # combines by max (reduce-amax-concat)
    Lemma("norm-inf-amax", '(reduce "norm:inf" x dims k)', '(reduce "amax" (unary "abs" x) dims k)',
          when=("(= t (dtype x))", "(fdtype t)")),
    # a norm of any order is >= 0 (or nan): its abs is itself, exactly
    Lemma("abs-norm", '(unary "abs" (reduce op x dims k))', "(reduce op x dims k)",
          when=('(= 1 (count-matches op "norm:"))',)),
    # a reduction that is the identity on one element (SINGLETON_IDENTITY, float x), over a dim of
    # size 1 that a view put in (unsqueeze: the ranks' values stacked for a gather), is x
    Lemma("reduce-unsqueezed", "(reduce op (view x s) (ICons d (INil)) 0)", "x",
          when=(_SINGLETON_OP, "(= t (dtype x))", "(fdtype t)", "(= m (ndim x))", "(= (dlen s) (+ m 1))",
                "(= (dat s d) (DLit 1))", "(vpfx x s d)", "(vsfx x s (- m d))")),
    # a float reduction kept over one size-1 dim is its operand (a rank's one KV head, whose expand's
    # backward sums over one copy), for the ops of SINGLETON_IDENTITY only: a reduction added
    # later (var: 0 or nan over one element) is not one of them
    Lemma("reduce-size1", '(reduce op x (ICons d (INil)) 1)', "x",
          when=(_SINGLETON_OP, "(= (dim x d) (DLit 1))", "(= t (dtype x))", "(fdtype t)")),
    # sums (and means) over dims are linear: they commute with a sum over ranks; max with max
    Lemma("reduce-sum-rsum", "(reduce \"sum\" (rsum l) dims k)", "(rsum (map_reduce \"sum\" l dims k))"),
    # a scaled sum is the sum of the scaled operand (the 1 / n of a data-parallel gradient average
    # moved into a bias gradient), for a floating operand and a finite nonzero constant (x / 0 of
    # mixed signs sums to nan, the sum / 0 to +-inf; an int sum is int, the scaled operand float)
    Lemma("scalar-div-sum", '(scalar "div" (reduce "sum" a dims k) c)', '(reduce "sum" (scalar "div" a c) dims k)',
          when=("(= t (dtype a))", "(fdtype t)", '(!= c "inf")', '(!= c "-inf")', '(!= c "nan")',
                '(!= c "0.0")', '(!= c "-0.0")')),
    Lemma("reduce-mean-rsum", "(reduce \"mean\" (rsum l) dims k)", "(rsum (map_reduce \"mean\" l dims k))"),
    Lemma("reduce-amax-rmax", "(reduce \"amax\" (rmax l) dims k)", "(rmax (map_reduce \"amax\" l dims k))"),
    # a cast of a bool to a float is monotone (False -> 0 < 1 <- True): it commutes with a max over
    # ranks (torch.all of a sharded dim, an all-reduce max of the ranks' verdicts).  Asked only of
    # bool parts and float casts, which is what that needs; not of other ops (neg reverses the order)
    Lemma("cast-rmax-bool", "(unary op (rmax l))", "(rmax (map_unary op l))",
          when=('(= "bool" (dtype (rmax l)))', "(fcast op)")),
    # ... and so does a min, written -max(-x): the cast of not(max over ranks of bools) (torch.all of a
    # sharded dim, cast) is the min over ranks of the casts of their nots, -max(-float(not a_r)) (the
    # ranks' float verdicts combined as -max(-ok)).  Exact: the values are 0 and 1 (-(-0.0) is +0.0).
    # Bool parts and float casts only, as above
    Lemma("cast-not-rmax-min", '(unary op (unary "logical_not" (rmax l)))',
          '(unary "neg" (rmax (map_unary "neg" (map_unary op (map_unary "logical_not" l)))))',
          when=('(= "bool" (dtype (rmax l)))', "(fcast op)")),
    # a min of a bool mask cast to a float dtype (amin lowered -max(-x)) is the cast of all() of it
    # (lowered not max(not b)): 1 where the mask holds along d, else 0 (-(-0.0) is +0.0).  Only over
    # a non-empty d: the term language's max of nothing is -inf (a min of nothing +inf), all of
    # nothing is true (1).  Bool masks and float casts only (the min of 0.5 is not all's 1)
    Lemma("amin-cast-bool", '(unary "neg" (reduce "amax" (unary "neg" (unary op b)) (ICons d (INil)) k))',
          '(unary op (unary "logical_not" (reduce "amax" (unary "logical_not" b) (ICons d (INil)) k)))',
          when=('(= "bool" (dtype b))', "(fcast op)", "(= s (dim b d))", "(dle (DLit 1) s)")),
    # a mask's count (a sum of bools: the int64 sum of the int64 cast) cast to a float dtype is the
    # float sum of the mask cast to it, when the dim holds at most (fexact op) elements: every
    # partial sum is then an integer the dtype holds exactly, in any order (bfloat16: 256)
    Lemma("cast-count", '(unary op (reduce "sum" (unary "to_int64" b) (ICons d (INil)) k))',
          '(reduce "sum" (unary op b) (ICons d (INil)) k)',
          when=('(= "bool" (dtype b))', "(= m (fexact op))", "(= s (dim b d))", "(dle s (DLit m))")),
    Lemma("map-reduce-nil", "(map_reduce op (Nil) dims k)", "(Nil)"),
    Lemma("map-reduce-cons", "(map_reduce op (Cons x r) dims k)", "(Cons (reduce op x dims k) (map_reduce op r dims k))"),
    # a reduction over one dim of a view that merged two adjacent dims of x (keeping the dims
    # before and after them) is the reduction over both (nn.Linear's bias gradient on a 3-D input:
    # the sum over rows of the flattened [b*s, h] gradient is the sum over b and s)
    Lemma("reduce-view-merged-keep", "(reduce op (view x s) (ICons a (INil)) 1)",
          "(view (reduce op x (ICons a (ICons (+ a 1) (INil))) 1) (dset s a (DLit 1)))",
          when=_MERGED),
    Lemma("reduce-view-merged-drop", "(reduce op (view x s) (ICons a (INil)) 0)",
          "(reduce op x (ICons a (ICons (+ a 1) (INil))) 0)",
          when=_MERGED),
    # a reduction over one dim d without keepdim, viewed with a 1 put back at d (and its other dims
    # kept), is the reduction with keepdim (the sequential log_softmax's view of its log-sum-exp
    # against the ranks' keepdim sums).  Not of a 0-D x: its keepdim reduction over dim 0 stays 0-D
    Lemma("reduce-drop-view-keep", "(view (reduce op x (ICons d (INil)) 0) s)", "(reduce op x (ICons d (INil)) 1)",
          when=("(= m (ndim (reduce op x (ICons d (INil)) 0)))", "(= (ndim x) (+ m 1))", "(= (dlen s) (+ m 1))", "(= (dat s d) (DLit 1))",
                "(vpfx (reduce op x (ICons d (INil)) 0) s d)", "(vsfx (reduce op x (ICons d (INil)) 0) s (- m d))")),
    # (layernorm x w b k eps) normalises over the last k dims: rows are independent, so a concat along
    # a dim before them is kept
    Lemma("layernorm-concat", "(layernorm (concat l d) w b k e)", "(concat (map_layernorm l w b k e) d)",
          when=("(= n (ndim (concat l d)))", "(< d (- n k))")),
    # (rowwise op x) computes each last-dim row alone (terms.py): rows of a concat along an earlier
    # dim are the parts' rows, whatever op picks among equal values (top-k routing of row shards)
    Lemma("rowwise-concat", "(rowwise op (concat l d))", "(concat (map_rowwise op l) d)",
          when=("(< d (- (ndim (concat l d)) 1))",)),
    Lemma("map-rowwise-nil", "(map_rowwise op (Nil))", "(Nil)"),
    Lemma("map-rowwise-cons", "(map_rowwise op (Cons x r))", "(Cons (rowwise op x) (map_rowwise op r))"),
    # a pick along the last dim reads each row alone: the picks of row parts (a loss's log-probabilities
    # and targets sharded along a leading dim d) are the parts of the pick, if the parts pair up along d
    # (a pick's targets have the picked tensor's leading shape, so d is never the picked dim)
    Lemma("pick-concat-rows", "(pick (concat l d) (concat m d))", "(concat (zip_pick l m d) d)"),
    Lemma("zip-pick-nil", "(zip_pick (Nil) (Nil) d)", "(Nil)"),
    Lemma("zip-pick-cons", "(zip_pick (Cons a r1) (Cons b r2) d)", "(Cons (pick a b) (zip_pick r1 r2 d))",
          when=("(= (dim a d) (dim b d))",)),
    # ... and so does a loss's target pick (the ignore index is per element)
    Lemma("tpick-concat-rows", "(tpick (concat l d) (concat m d) c)", "(concat (zip_tpick l m c d) d)"),
    Lemma("zip-tpick-nil", "(zip_tpick (Nil) (Nil) c d)", "(Nil)"),
    Lemma("zip-tpick-cons", "(zip_tpick (Cons a r1) (Cons b r2) c d)", "(Cons (tpick a b c) (zip_tpick r1 r2 c d))",
          when=("(= (dim a d) (dim b d))",)),
    # a placement (the gradient of a pick, of topk's values) writes each element's row alone: the
    # placements of value parts at their index parts along a dim d of the values (never the new last
    # dim) are the parts of the placement, if the parts pair up along d
    Lemma("place-concat-rows", "(place (concat l d) (concat m d) n)", "(concat (zip_place l m n d) d)"),
    Lemma("zip-place-nil", "(zip_place (Nil) (Nil) n d)", "(Nil)"),
    Lemma("zip-place-cons", "(zip_place (Cons a r1) (Cons b r2) n d)", "(Cons (place a b n) (zip_place r1 r2 n d))",
          when=("(= (dim a d) (dim b d))",)),
    # ... and so does a loss's target gradient (nll_loss_backward of row-sharded targets; the ignore
    # index is per element)
    Lemma("tplace-concat-rows", "(tplace (concat l d) (concat m d) c n)", "(concat (zip_tplace l m c n d) d)"),
    Lemma("zip-tplace-nil", "(zip_tplace (Nil) (Nil) c n d)", "(Nil)"),
    Lemma("zip-tplace-cons", "(zip_tplace (Cons a r1) (Cons b r2) c n d)",
          "(Cons (tplace a b c n) (zip_tplace r1 r2 c n d))",
          when=("(= (dim a d) (dim b d))",)),
    # log-sum-exp is shift invariant in real arithmetic: the target's log-probability (x_t - m) -
    # log(sum(exp(x - m))), m the row max (torch's log_softmax, picked), is x_t - log(sum(exp(x))) (a
    # vocab-parallel loss's, whose ranks all-reduce their sums of exponentials of the raw logits).
    # In floats they differ where exp(x) overflows or x holds inf: an assumption.  Float logits only
    # (log_softmax's; an int x would compute exp in float32 after an exact integer shift)
    Lemma("pick-log-softmax-unshifted", _PICK_LOG_SOFTMAX,
          '(binary "sub" (pick x t) (unary "log" (reduce "sum" (unary "exp" x) (ICons k (INil)) 0)))',
          when=("(= k (- (ndim x) 1))", "(= f (dtype x))", "(fdtype f)"), assumes=("no_exp_overflow",)),
    # exp of a log-softmax is the softmax: exp(a - log S) = exp(a) / S.  a = x - max(x) <= 0 (or nan)
    # and S >= 1 (the max's term; or nan), so neither side overflows.  Float logits only (int8 x - max
    # wraps to a positive a whose exp overflows: 0 against inf / inf)
    Lemma("exp-log-softmax", f'(unary "exp" {_LOG_SOFTMAX})', f'(binary "div" (unary "exp" {_SHIFTED}) (view {_SUMEXP} s))',
          when=("(= f (dtype x))", "(fdtype f)")),
    # ... times a factor c per row (log_softmax's backward: exp(y) sum(g)) is c / S times exp(a): a
    # vocab-parallel backward scales its shard's exponentials by the all-reduced g / S.  Equal up to
    # rounding with no overflow: exp(a) / S and 1 / S lie in [0, 1].  c has S's shape (viewed alike)
    Lemma("softmax-mul", f'(binary "mul" (binary "div" (unary "exp" {_SHIFTED}) (view {_SUMEXP} s)) (view c s))',
          f'(binary "mul" (view (binary "div" c {_SUMEXP}) s) (unary "exp" {_SHIFTED}))',
          when=("(= f (dtype x))", "(fdtype f)", "(= m (ndim c))", f"(= m (ndim {_SUMEXP}))", "(vpfx c s m)",
                f"(vpfx {_SUMEXP} s m)")),
    # ... and that scaled softmax is shift invariant in real arithmetic: c / sum(exp(x - m)) times
    # exp(x - m), m the row max, is c / sum(exp(x)) times exp(x) (a vocab-parallel loss whose ranks
    # all-reduce their sums of exponentials of the raw logits, and scale their own).  In floats they
    # differ where exp(x) overflows: an assumption.  Along the last dim k only, the sums viewed with
    # one trailing 1 (so they broadcast against x's rows: else a row's m would meet another's)
    Lemma("softmax-mul-unshifted", f'(binary "mul" (view (binary "div" c {_SUMEXP}) s) (unary "exp" {_SHIFTED}))',
          f'(binary "mul" (view (binary "div" c {_SUMEXP_RAW}) s) (unary "exp" x))',
          when=("(= f (dtype x))", "(fdtype f)", "(= m (ndim c))", "(= k m)", "(= (dlen s) (+ m 1))",
                f"(= m (ndim {_SUMEXP}))", f'(vpfx (binary "div" c {_SUMEXP}) s m)'),
          assumes=("no_exp_overflow",)),
    Lemma("map-layernorm-nil", "(map_layernorm (Nil) w b k e)", "(Nil)"),
    Lemma("map-layernorm-cons", "(map_layernorm (Cons x r) w b k e)",
          "(Cons (layernorm x w b k e) (map_layernorm r w b k e))"),
]

# a loss's count of targets other than the ignore index c (tcount, of the log-probabilities' dtype f)
# is what a program counts: (t != c).sum() (lowered as the int64 sum of the int64 cast) cast to f.
# Exact (tcount's meaning); 1-D targets (a 0-D one has no dim to sum over)
LEMMAS += [
    Lemma("tcount-count", "(tcount L t c n)",
          '(unary (+ "to_" f) (reduce "sum" (unary "to_int64" (iscalar "ne" t c)) (ICons 0 (INil)) 0))',
          when=("(= f (dtype L))", "(fdtype f)", "(= 1 (ndim t))"))]

# a max keeps its operand's dtype (bool: torch.all lowered as not amax(not x)); a sum of bools or
# ints is int64 (a mask's count)
RULES = [
    Rule("dtype-int-sum", "\n".join(
        f'(rule ((= y (reduce "sum" x dims k)) (= "{t}" (dtype x))) ((set (dtype y) "int64")) :ruleset shapes)'
        for t in ("bool", "int32", "int64"))),
    Rule("dtype-amax", "(rule ((= y (reduce \"amax\" x dims k)) (= t (dtype x))) ((set (dtype y) t)) :ruleset shapes)"),
]
