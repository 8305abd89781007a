"""Elementwise unary, scalar and binary ops versus concat and sums over ranks."""
from entangle_py.engine.lemma import Lemma, Rule
from entangle_py.semantics.terms import CASTS, FLOAT_DTYPES, WHERE_PATTERNS
from entangle_py.lemmas.conditions import is_zero_text

# (unary op (not b)) with b a bool tensor and op a cast to a float dtype
# an int64 constant that far from the dtype's bounds cannot overflow when added to zeros; a bound of
# the dtype, not a model size (test_lemma_names_no_model_constants allows it by this name)
INT64_FAR = 2 ** 62
_SMALL_K = (f"(< k {INT64_FAR})", f"(> k -{INT64_FAR})")
_CAST_NOT = '(unary op (unary "logical_not" b))'
_BOOL_TO_FLOAT = ('(= "bool" (dtype b))', "(fcast op)")

# constants are written by repr(float): inf * (a + b) is not inf * a + inf * b, nor (a + b) / 0
_FINITE = ('(!= c "inf")', '(!= c "-inf")', '(!= c "nan")')
_NONZERO = _FINITE + ('(!= c "0.0")', '(!= c "-0.0")')

# a constant of shape s (m dims) spans the axis d of an n-D concat (m <= n): its dim k there is the
# concat's size
_CST_SPANS = ("(= n (ndim (concat (Cons x r) d)))", "(= m (dlen s))", "(<= m n)", "(= k (- d (- n m)))", "(>= k 0)",
              "(= (dat s k) (dim (concat (Cons x r) d) d))")

LEMMAS = [
    Lemma("unary-concat", "(unary op (concat l d))", "(concat (map_unary op l) d)"),
    Lemma("map-unary-nil", "(map_unary op (Nil))", "(Nil)"),
    Lemma("map-unary-cons", "(map_unary op (Cons x r))", "(Cons (unary op x) (map_unary op r))"),
    Lemma("scalar-concat", "(scalar op (concat l d) c)", "(concat (map_scalar op l c) d)"),
    Lemma("map-scalar-nil", "(map_scalar op (Nil) c)", "(Nil)"),
    Lemma("map-scalar-cons", "(map_scalar op (Cons x r) c)", "(Cons (scalar op x c) (map_scalar op r c))"),
    # ... and an integer one (a mask of targets against an ignore index, of ids against a bound)
    # ... for a comparison (a mask of targets), where the first part's is there already (a rank's
    # own mask): a shift of positions split at every rank (add, with arange-add, arange-inside and
    # slice-tile) makes positions at ever larger offsets
    Lemma("iscalar-concat", "(iscalar op (concat (Cons x r) d) c)", "(concat (map_iscalar op (Cons x r) c) d)",
          trigger=("(iscalar op (concat (Cons x r) d) c)", "(iscalar op x c)"),
          when=tuple(f'(!= op "{op}")' for op in ("add", "sub", "mul", "pow"))),
    # an int64 constant of zeros plus or minus an integer is the constant of that integer (labels
    # padded as ids[:, :1] * 0 - 100; x * 0 lowers as the zeros).  Constants far from int64's
    # bounds only (no wrap-around)
    Lemma("iscalar-sub-zeros", '(iscalar "sub" (cst "0" s "int64") k)', '(cst (to-string (- 0 k)) s "int64")',
          when=_SMALL_K),
    Lemma("iscalar-add-zeros", '(iscalar "add" (cst "0" s "int64") k)', '(cst (to-string k) s "int64")',
          when=_SMALL_K),
    # an integer strict comparison is the non-strict one at the next integer (x > c is x >= c + 1,
    # x <= c is x < c + 1): a range mask written either way (a block's inclusive last id) meets
    # one form.  int64 only, c far from its top (c + 1 must not wrap)
    *(Lemma(f"iscalar-{a}-{b}", f'(iscalar "{a}" x c)', f'(iscalar "{b}" x (+ c 1))',
            when=('(= "int64" (dtype x))', f"(< c {INT64_FAR})", f"(> c -{INT64_FAR})"))
      for a, b in (("gt", "ge"), ("le", "lt"))),
    # the negation of an integer comparison is the complementary comparison (exact: no nan in ints)
    *(Lemma(f"not-iscalar-{a}", f'(unary "logical_not" (iscalar "{a}" x c))', f'(iscalar "{b}" x c)')
      for a, b in (("ge", "lt"), ("lt", "ge"), ("gt", "le"), ("le", "gt"), ("eq", "ne"), ("ne", "eq"))),
    # a bool mask negated twice is itself (an owner mask written ~foreign, negated again)
    Lemma("not-not-bool", '(unary "logical_not" (unary "logical_not" m))', "m", when=('(= "bool" (dtype m))',)),
    # De Morgan for bool masks (an owner's range mask negated is the foreign one)
    Lemma("not-and-or", '(unary "logical_not" (binary "bitwise_and" a b))',
          '(binary "bitwise_or" (unary "logical_not" a) (unary "logical_not" b))',
          when=('(= "bool" (dtype a))', '(= "bool" (dtype b))')),
    Lemma("map-iscalar-nil", "(map_iscalar op (Nil) c)", "(Nil)"),
    Lemma("map-iscalar-cons", "(map_iscalar op (Cons x r) c)", "(Cons (iscalar op x c) (map_iscalar op r c))"),
    # binary op of two concats along the same axis k counted from the right (as broadcasting aligns
    # operands of any ndims, either the wider): the concat of the parts' ops along the result's
    # axis k from the right.  The parts line up along it (zipok), so no part broadcasts there.
    Lemma("binary-concat-concat", "(binary op (concat l1 d1) (concat l2 d2))",
          "(concat (zip_binary op l1 l2 d1 d2) (- (max n1 n2) k))",
          when=("(= n1 (ndim (concat l1 d1)))", "(= n2 (ndim (concat l2 d2)))", "(= k (- n1 d1))", "(= k (- n2 d2))",
                "(zipok l1 l2 d1 d2)")),
    Lemma("zip-binary-nil", "(zip_binary op (Nil) (Nil) d1 d2)", "(Nil)"),
    Lemma("zip-binary-cons", "(zip_binary op (Cons a r1) (Cons b r2) d1 d2)",
          "(Cons (binary op a b) (zip_binary op r1 r2 d1 d2))",
          when=("(= (dim a d1) (dim b d2))",)),
    # binary op of a concat and a tensor that does not vary along the concat axis
    Lemma("binary-concat-bcast-absent", "(binary op (concat l d) y)", "(concat (map_binary_l op l y) d)",
          when=("(= n (ndim (concat l d)))", "(= m (ndim y))", "(< m (- n d))")),
    Lemma("binary-concat-bcast-one", "(binary op (concat l d) y)", "(concat (map_binary_l op l y) d)",
          when=("(= n (ndim (concat l d)))", "(= m (ndim y))", "(>= m (- n d))", "(<= m n)",
                "(= (dim y (- m (- n d))) (DLit 1))")),
    # ... and the same with the concat on the right (a causal mask: key positions [1, S] > the
    # ranks' query positions, a concat of [s, 1] along dim 0)
    Lemma("binary-bcast-absent-concat", "(binary op y (concat l d))", "(concat (map_binary_r op y l) d)",
          when=("(= n (ndim (concat l d)))", "(= m (ndim y))", "(< m (- n d))")),
    Lemma("binary-bcast-one-concat", "(binary op y (concat l d))", "(concat (map_binary_r op y l) d)",
          when=("(= n (ndim (concat l d)))", "(= m (ndim y))", "(>= m (- n d))", "(<= m n)",
                "(= (dim y (- m (- n d))) (DLit 1))")),
    # binary op of a concat and a constant block spanning the concat axis (aligned from the right,
    # of the concat's size there): the constant split at the parts (x + full_like(x, c) on row-sharded
    # x, each rank adding its own block of c).  In either order; the constant has no more dims than
    # the concat (the axis stays d).
    Lemma("binary-concat-cst", "(binary op (concat (Cons x r) d) (cst c s t))",
          "(concat (zip_binary op (Cons x r) (cst_parts c s t k (Cons x r) d) d k) d)",
          when=_CST_SPANS),
    Lemma("binary-cst-concat", "(binary op (cst c s t) (concat (Cons x r) d))",
          "(concat (zip_binary op (cst_parts c s t k (Cons x r) d) (Cons x r) k d) d)",
          when=_CST_SPANS),
    Lemma("cst-parts-nil", "(cst_parts c s t k (Nil) d)", "(Nil)"),
    Lemma("cst-parts-cons", "(cst_parts c s t k (Cons x r) d)",
          "(Cons (cst c (dset s k v) t) (cst_parts c s t k r d))", when=("(= v (dim x d))",)),
    Lemma("map-binary-r-nil", "(map_binary_r op y (Nil))", "(Nil)"),
    Lemma("map-binary-r-cons", "(map_binary_r op y (Cons x r))", "(Cons (binary op y x) (map_binary_r op y r))"),
    Lemma("map-binary-l-nil", "(map_binary_l op (Nil) y)", "(Nil)"),
    Lemma("map-binary-l-cons", "(map_binary_l op (Cons x r) y)", "(Cons (binary op x y) (map_binary_l op r y))"),
    # linear scalar ops commute with a sum over ranks
    Lemma("scalar-mul-rsum", "(scalar \"mul\" (rsum l) c)", "(rsum (map_scalar \"mul\" l c))",
          when=_FINITE),
    Lemma("scalar-div-rsum", "(scalar \"div\" (rsum l) c)", "(rsum (map_scalar \"div\" l c))",
          when=_NONZERO),
    # a sum divided by a constant is the sum of the quotients (real arithmetic; floats round each
    # quotient): a micro-batch accumulator (acc + loss_i / steps) divided by the data-parallel size
    # meets the global mean's terms.  One floating dtype (ints wrap before the division), finite
    # non-zero c
    Lemma("scalar-div-add", '(scalar "div" (binary "add" a b) c)', '(binary "add" (scalar "div" a c) (scalar "div" b c))',
          when=("(= t (dtype a))", "(= t (dtype b))", "(fdtype t)") + _NONZERO),
    # a scaling of an op linear in its first operand (a product, a quotient, a pointwise backward op
    # of (grad, saved tensor)) scales that operand: the 1 / n of a mean's gradient moved down the
    # backward graph.  Only where both operands have one floating dtype: with ints the product may
    # wrap before the division; a float16 a / c may overflow where (a * b) / c in float32 does not.
    Lemma("scalar-div-binary", '(scalar "div" (binary op a b) c)', '(binary op (scalar "div" a c) b)',
          when=("(glinear op)", "(= t (dtype a))", "(= t (dtype b))", "(fdtype t)") + _NONZERO),
    # gradient accumulation: micro-batch sums over a global token count.  A sum over a list of two
    # is their add, in either order (a + b = b + a exactly; parts of a sum over a list share one
    # shape and dtype), so that partial sums regroup with sums over ranks (autograd accumulates
    # micro-batch gradients in reverse order); an accumulator started at 0.0 is its first term (but
    # for the sign of a zero: -0.0 + 0.0 = +0.0); a sum divided by a tensor y is the sum of the
    # parts divided by y, where y has no zero (an assumption: (1 + 0) / 0 = inf, 1 / 0 + 0 / 0 = nan).
    Lemma("rsum-pair-add", "(rsum (Cons a (Cons b (Nil))))", '(binary "add" a b)'),
    Lemma("rsum-pair-add-swapped", "(rsum (Cons a (Cons b (Nil))))", '(binary "add" b a)'),
    # a sum over a list of three or more is the sum with its first two parts added (a left fold;
    # reals, floats up to rounding as every sum over a list): the sum over a stack of three norms
    # that one rank takes (a TP duplicate's counted by rank 0 only) against the sequential sum of
    # three, each regrouped down to pairs (rsum-pair-add) where add-rsum-part meets the ranks' sum.
    # Of 0-D parts only (stacked norms, losses): folding every all-reduce of activations over 8
    # ranks grew the TP8 layer's e-graph 2.7x (benchmarks/ci_guard.py)
    Lemma("rsum-fold-first", "(rsum (Cons a (Cons b (Cons c r))))", '(rsum (Cons (binary "add" a b) (Cons c r)))',
          when=("(= 0 (ndim a))",)),
    Lemma("add-zero", '(scalar "add" x "0.0")', "x", when=("(= t (dtype x))", "(fdtype t)")),
    # x plus a zero constant of x's shape and dtype (either side) is x (no broadcast grows it, no
    # promotion casts it; -0.0 + 0.0 = +0.0: one zero).  Where x = x + 0 is proven (a block
    # followed by zeros, concat-zpad-rsum), a rule that spreads that add over x's parts (a concat's,
    # a sum's) gives each part + a zero block: they fold back here, or nest without end
    # (of x's ndim, any dim x's or 1: zeros of any shape that broadcast into x without growing it)
    Lemma("add-zeros-right", '(binary "add" x (cst z s t))', "x",
          when=(is_zero_text("z"), "(= t (dtype x))", "(= n (ndim x))", '(= n (ndim (binary "add" x (cst z s t))))',
                '(bsame x (binary "add" x (cst z s t)) n)')),
    Lemma("add-zeros-left", '(binary "add" (cst z s t) x)', "x",
          when=(is_zero_text("z"), "(= t (dtype x))", "(= n (ndim x))", '(= n (ndim (binary "add" (cst z s t) x)))',
                '(bsame x (binary "add" (cst z s t) x) n)')),
    # ... and a zero constant of fewer dims that broadcasts into x (its shape x's last dims:
    # a bias's zeros_like added to a rank's partial sums) leaves x as it is
    Lemma("add-zeros-bcast-right", '(binary "add" x (cst z s t))', "x",
          when=(is_zero_text("z"), "(= t (dtype x))", "(= m (dlen s))", "(< m (ndim x))", "(vsfx x s m)")),
    Lemma("div-rsum-nonzero", '(binary "div" (rsum l) y)', '(rsum (map_binary_l "div" l y))',
          when=("(= t (dtype (rsum l)))", "(= t (dtype y))", "(fdtype t)"), assumes=("nonzero_divisors",)),
    # a product with a sum over ranks is the sum of the products (a backward linear in its upstream
    # gradient, layer norm's, run by each rank on its part of a gradient): exact for reals, false
    # where y is inf (inf * (1 - 0.5) = inf, inf * 1 - inf * 0.5 = nan), hence the assumption.
    Lemma("mul-rsum-finite", '(binary "mul" (rsum l) y)', '(rsum (map_binary_l "mul" l y))',
          when=("(= t (dtype (rsum l)))", "(= t (dtype y))", "(fdtype t)"), assumes=("finite_values",)),
    Lemma("mul-finite-rsum", '(binary "mul" y (rsum l))', '(rsum (map_binary_r "mul" y l))',
          when=("(= t (dtype (rsum l)))", "(= t (dtype y))", "(fdtype t)"), assumes=("finite_values",)),
    # accumulation: x + (a + b + ...) = (x + a) + (b + ...): an accumulator that adds the ranks' (or
    # micro-batches') terms one at a time (tr_loss += loss) equals adding their sum.
    # sums over ranks are linear: sum_r a_r +- sum_r b_r = sum_r (a_r +- b_r) (the gradient of an
    # input read by two column-parallel layers: two partial sums added, then one all-reduce).
    # Lists of different lengths leave the walk unfinished (never clean).
    Lemma("add-rsum-rsum", '(binary "add" (rsum l1) (rsum l2))', '(rsum (zip_ranks "add" l1 l2))'),
    Lemma("sub-rsum-rsum", '(binary "sub" (rsum l1) (rsum l2))', '(rsum (zip_ranks "sub" l1 l2))'),
    Lemma("zip-ranks-nil", "(zip_ranks op (Nil) (Nil))", "(Nil)"),
    Lemma("zip-ranks-cons", "(zip_ranks op (Cons a r1) (Cons b r2))", "(Cons (binary op a b) (zip_ranks op r1 r2))"),
    # -(a - b) = b - a, exactly (rounding is symmetric; int wrap-around too): a loss's negated
    # log-probability of the target, -(z_t - lse), is the lse - z_t that a vocab-parallel loss computes
    Lemma("neg-sub", '(unary "neg" (binary "sub" a b))', '(binary "sub" b a)'),
    # a + b * (-c) = a - b * c exactly (a product's rounding is symmetric in sign, and IEEE subtraction
    # is the addition of the negation; ints wrap alike): log_softmax's backward as lowered, g + exp(y)
    # (-sum g), against the g - exp(y) * sum(g) a program writes.  Not for a bool a (torch refuses
    # to subtract from a bool; it adds one)
    Lemma("add-mul-neg", '(binary "add" a (binary "mul" b (unary "neg" c)))', '(binary "sub" a (binary "mul" b c))',
          when=('(!= "bool" (dtype a))',)),
    # a - sum_r x_r = a + sum_r (-x_r) exactly (negation is exact, and commutes with every rounded
    # partial sum): the sequential loss row lse - (the target's logit), against a vocab-parallel
    # one's lse + the all-reduced nll_loss rows (each rank's negated target logit)
    Lemma("sub-rsum-neg", '(binary "sub" a (rsum l))', '(binary "add" a (rsum (map_unary "neg" l)))'),
    # -(sum_r x_r) = sum_r (-x_r) exactly (negation is exact and commutes with every rounded partial
    # sum; ints wrap alike): a sum over ranks the sequential program negates (a quotient's backward,
    # -g * x / y ** 2) where each rank negates its part of g
    Lemma("neg-rsum", '(unary "neg" (rsum l))', '(rsum (map_unary "neg" l))'),
    # -(-x) = x exactly (floats: negation flips the sign bit; ints: two's complement, even the least)
    Lemma("neg-neg", '(unary "neg" (unary "neg" x))', "x"),
    # a + b = b + a exactly (IEEE add, int wrap-around, bool or; promotion and broadcasting are
    # symmetric), where both orders are already in the e-graph: a gradient two consumers send back,
    # summed by the receiver in its receive order, against autograd's accumulation order
    Lemma("add-comm", '(binary "add" a b)', '(binary "add" b a)',
          trigger=('(binary "add" a b)', '(binary "add" b a)')),
    # (the last two terms added as themselves, never a sum over one rank: beside a pair's sum in
    # its own class -- x followed by zeros, concat-zpad-rsum then rsum-zero-second -- add-rsum-rsum
    # would zip that one-rank sum with the pair, and the stuck zip_ranks nest without end)
    Lemma("add-rsum-accumulate", '(binary "add" x (rsum (Cons a (Cons b (Cons c r)))))',
          '(binary "add" (binary "add" x a) (rsum (Cons b (Cons c r))))'),
    Lemma("add-rsum-accumulate-pair", '(binary "add" x (rsum (Cons a (Cons b (Nil)))))',
          '(binary "add" (binary "add" x a) b)'),
    # a bool mask cast to a float dtype is 0 or 1: 1 - float(not b) = float(b) exactly, in every float
    # dtype (torch.all combined over ranks as 1 - max(1 - float(all_r))).  Only for a bool b (1 -
    # float(not 0.5) = 1) and a cast to a float dtype (1 - exp(not b) is not exp(b)).
    # rows of x multiplied by a bool mask of its rows cast to x's dtype (mask[..., None].to(x.dtype))
    # are x with the other rows zeroed -- only for finite x (inf * 0 is nan), either operand order
    *(Lemma(f"mul-rows-mask{k}", lhs, '(binary "masked_fill:0.0" x (view (unary "logical_not" m) s))',
            when=('(= "bool" (dtype m))', "(fcast op)", "(= f (dtype x))", "(fdtype f)", "(= f (dtype (unary op (view m s))))",
                  "(= k (ndim x))",
                  "(= (dlen s) k)", "(= (dlast s) (DLit 1))", "(vpfx x s (- k 1))"),
            assumes=("finite_values",))
      for k, lhs in (("", '(binary "mul" x (unary op (view m s)))'), ("-swapped", '(binary "mul" (unary op (view m s)) x)'))),
    Lemma("rsub-one-cast-not", f'(scalar "rsub" {_CAST_NOT} "1.0")', "(unary op b)", when=_BOOL_TO_FLOAT),
    Lemma("cast-not-rsub-one", _CAST_NOT, '(scalar "rsub" (unary op b) "1.0")', when=_BOOL_TO_FLOAT),
]

# a cast to its operand's own dtype is the operand (x.to(x.dtype) returns x): count_nonzero of a bool
# mask, lowered as the count of to_bool(mask), is the mask's count.  One lemma per cast, asked of
# that dtype only (a cast to another dtype rounds, truncates or tests for nonzero)
LEMMAS += [Lemma(f"cast-same-{t}", f'(unary "to_{t}" x)', "x", when=(f'(= "{t}" (dtype x))',)) for t in CASTS]

# a float x divided by an int64 y divides by y cast to x's dtype: type promotion casts y so (a float
# category beats an int one whatever the dims), and the cast is the same conversion.  A mean loss
# divided by the all-reduced int64 count of its targets, against the float count (tcount-count).
# Only for x of that float dtype (an int x divides in the default float dtype; a float64 x divides
# a float32 cast of y, rounded, by y exactly) and an int64 y (a float64 y would be rounded by the cast)
LEMMAS += [Lemma(f"div-int-cast-{f}", f'(binary "div" x (unary "to_{f}" y))', '(binary "div" x y)',
                 when=(f'(= "{f}" (dtype x))', '(= "int64" (dtype y))')) for f in FLOAT_DTYPES]

# logical_not's dtype is bool whatever its operand's (torch.all lowered as not amax(not x)); so is a
# comparison's with a constant (a mask counted: (t != c).sum())
RULES = [
    # the leading dims of x and a row mask it is multiplied by, compared one by one (mul-rows-mask)
    Rule("ask-vpfx-mul-rows", (
        '(rule ((= y (binary "mul" x (unary op (view m s))))) ((vpfx x s 0)) :ruleset shapes)\n'
        '(rule ((= y (binary "mul" (unary op (view m s)) x))) ((vpfx x s 0)) :ruleset shapes)')),
    # a cast's dtype is the one it casts to (whatever its operand's)
    Rule("dtype-cast", "\n".join(f'(rule ((= y (unary "to_{t}" x))) ((set (dtype y) "{t}")) :ruleset shapes)'
                                  for t in CASTS)),
    # (zipok l1 l2 d1 d2): the parts of two concats under one binary op line up (binary-concat-concat
    # fires only then).  Asked from the binary op, walked down both lists while the heads agree,
    # answered from the ends back.  Without it every concat form of one operand was zipped with
    # every form of the other, most of them misaligned: walks that never finish, each a new concat
    # form of the result (thousands per op of an attention backward), paired again by the next op.
    Rule("zip-aligned", (
        "(rule ((= y (binary op (concat l1 d1) (concat l2 d2)))) ((ask_zip l1 l2 d1 d2)) :ruleset zips)\n"
        "(rule ((ask_zip (Cons a r1) (Cons b r2) d1 d2) (= n (dim a d1)) (= n (dim b d2))) ((ask_zip r1 r2 d1 d2)) :ruleset zips)\n"
        "(rule ((ask_zip l1 l2 d1 d2) (= l1 (Nil)) (= l2 (Nil))) ((zipok l1 l2 d1 d2)) :ruleset zips)\n"
        "(rule ((ask_zip l1 l2 d1 d2) (= l1 (Cons a r1)) (= l2 (Cons b r2)) (= n (dim a d1)) (= n (dim b d2)) "
        "(zipok r1 r2 d1 d2)) ((zipok l1 l2 d1 d2)) :ruleset zips)")),
    Rule("dtype-logical-not", '(rule ((= y (unary "logical_not" x))) ((set (dtype y) "bool")) :ruleset shapes)'),
    Rule("dtype-compare", "\n".join(
        f'(rule ((= y ({head} "{op}" x c))) ((set (dtype y) "bool")) :ruleset shapes)'
        for head in ("iscalar", "scalar") for op in ("eq", "ne", "lt", "le", "gt", "ge"))),
    Rule("ask-vsfx-add-cst", '(rule ((= y (binary "add" x (cst c s t)))) ((vsfx x s 0)) :ruleset shapes)'),
    # x's shape compared with a zero constant's it is added to (add-zeros-*)
    Rule("ask-bsame-add-cst", (
        '(rule ((= y (binary "add" x (cst c s t)))) ((bsame x y 0)) :ruleset shapes)\n'
        '(rule ((= y (binary "add" (cst c s t) x))) ((bsame x y 0)) :ruleset shapes)')),
    Rule("ask-vpfx-add-cst", (
        '(rule ((= y (binary "add" x (cst c s t)))) ((vpfx x s 0)) :ruleset shapes)\n'
        '(rule ((= y (binary "add" (cst c s t) x))) ((vpfx x s 0)) :ruleset shapes)')),
]


# torch.where(c, a, b) of operands that are concats along one axis (counted from the right, as
# broadcasting aligns them) or broadcast along it (absent there, or of size 1): the concat of the
# parts' wheres.  One lemma per choice of the concat operands (L) and broadcast ones (T): the
# concats' axes line up (the condition); their parts line up (zip_where's walk) and the broadcast
# operands do not vary along the axis (bc_like's walk) -- else the walk is left unfinished, never
# clean.  A where of sums over ranks is not distributed: where(c, a0 + a1, 0) is not
# where(c, a0, 0) + where(c, a1, 0) when the fill is not 0, nor in general.
def _where_lemma(p: str) -> Lemma:
    ops = [f"(concat l{o} d{o})" if kind == "L" else o for o, kind in zip("cab", p)]
    cats = [o for o, kind in zip("cab", p) if kind == "L"]
    r = cats[0]
    lhs = f"(where {' '.join(ops)})"
    k = f"(- m d{r})"                  # the concat axis counted from the right
    when = (f"(= n (ndim {lhs}))", f"(= m (ndim (concat l{r} d{r})))") + tuple(
        f"(= (- (ndim (concat l{o} d{o})) d{o}) {k})" for o in cats[1:])
    lists = [f"l{o}" if kind == "L" else f"(bc_like {o} l{r} {k})" for o, kind in zip("cab", p)]
    rhs = f'(concat (zip_where "{p}" {" ".join(lists)} {k}) (- n {k}))'
    return Lemma("where-concat-" + "".join(cats), lhs, rhs, when=when)


def _zip_where_cons(p: str) -> Lemma:
    heads = [f"h{o}" for o in "cab"]
    cats = [h for h, kind in zip(heads, p) if kind == "L"]
    when = ()
    if len(cats) > 1:       # the concat parts line up on the axis
        x = cats[0]
        when = (f"(= n{x} (ndim {x}))", f"(>= n{x} k)")
        for z in cats[1:]:
            when += (f"(= n{z} (ndim {z}))", f"(>= n{z} k)", f"(= (dim {z} (- n{z} k)) (dim {x} (- n{x} k)))")
    return Lemma(f"zip-where-cons-{p}", f'(zip_where "{p}" (Cons hc rc) (Cons ha ra) (Cons hb rb) k)',
                 f'(Cons (where hc ha hb) (zip_where "{p}" rc ra rb k))', when=when)


LEMMAS += [_where_lemma(p) for p in WHERE_PATTERNS] + [
    Lemma("zip-where-nil", "(zip_where p (Nil) (Nil) (Nil) k)", "(Nil)"),
] + [_zip_where_cons(p) for p in WHERE_PATTERNS] + [
    Lemma("bc-like-nil", "(bc_like y (Nil) k)", "(Nil)"),
    # a copy per part of a tensor absent along the axis, or of size 1 there
    Lemma("bc-like-absent", "(bc_like y (Cons x r) k)", "(Cons y (bc_like y r k))",
          when=("(= m (ndim y))", "(< m k)")),
    Lemma("bc-like-one", "(bc_like y (Cons x r) k)", "(Cons y (bc_like y r k))",
          when=("(= m (ndim y))", "(>= m k)", "(= (dim y (- m k)) (DLit 1))")),
]
