"""Table lookups and their vocab-parallel (masked) forms.

Terms (entangle_py/semantics/terms.py, INDEXING):

- ``(take W ids)``   = ``W[ids]`` (embedding, ``index.Tensor(W, [ids])``);
- ``(mtake W ids lo)`` = rows ``W[ids - lo]`` where ``lo <= ids < lo + rows(W)``, zero rows elsewhere;
- ``(pick L t)``     = ``L[..., t]`` along the last dim (``index.Tensor(L2, [arange, t])``);
- ``(mpick L t lo)`` = ``L[..., t - lo]`` where ``lo <= t < lo + L.shape[-1]``, zero elsewhere;
- ``(tpick L t c)`` = a loss's target logit ``L[..., t]``, zero where t is the ignore index c;
  ``(tcount L t c n)`` the number of targets that are not c (n: the number of targets).

The masked forms are total (defined for every id): a vocab-parallel rank computes one for its
slice, and a masked lookup over a concat along the looked-up dim is the sum of the parts' masked
lookups at accumulated offsets — exact for all ids, no assumption.  Only turning a plain lookup
into the masked form needs ids in range: that lemma rests on the ``valid_indices`` assumption and is
active only when the spec enables it.  So does dropping a loss's ignore index: a loss's targets are
class ids in [0, C), so a negative ignore index ignores none of them (nll_loss's default -100).
"""
from entangle_py.engine.lemma import Lemma, Rule
from entangle_py.lemmas.conditions import ZERO_TEXTS


def _iput(base, c, vals):
    """``base`` with ``vals`` written at the rows where the ids ``v`` equal ``c``."""
    return f'(iput {base} (nonzero (iscalar "eq" v {c})) {vals})'


_NOT_BOOL = '(!= t "bool")'          # bools add as a logical or; a sum over ranks of them is undefined
_ZERO_CSTS = [(k, f'(cst "{z}" s t)') for z, k in zip(ZERO_TEXTS, ("", "-int"))]


def _mask_text(x, lo, hi):
    return f'(binary "bitwise_or" (iscalar "lt" {x} {lo}) (iscalar "ge" {x} {hi}))'


_MTAKE_LHS = (f'(binary "masked_fill:0.0" (take W (binary "masked_fill:0" (iscalar "sub" ids lo) {_mask_text("ids", "lo", "hi")})) '
              f'(view {_mask_text("ids", "lo", "hi")} s))')
# the vocab-parallel lookup's backward: the gradient rows of foreign ids zeroed, their ids set to 0
_MSCATTER_LHS = (f'(scatter (binary "masked_fill:0.0" g (view {_mask_text("ids", "lo", "hi")} s)) '
                 f'(binary "masked_fill:0" (iscalar "sub" ids lo) {_mask_text("ids", "lo", "hi")}) n)')
_MPICK_LHS = (f'(binary "masked_fill:0.0" (pick L (binary "masked_fill:0" (iscalar "sub" t lo) {_mask_text("t", "lo", "hi")})) '
              f'{_mask_text("t", "lo", "hi")})')

# the vocab-parallel loss's backward: the gradient of foreign targets zeroed, their columns set to 0
_MPLACE_LHS = (f'(place (binary "masked_fill:0.0" v {_mask_text("t", "lo", "hi")}) '
               f'(binary "masked_fill:0" (iscalar "sub" t lo) {_mask_text("t", "lo", "hi")}) w)')

# a vocab-parallel loss's local targets for nll_loss: a rank's own targets t - lo (lo <= t < hi),
# the others set to the loss's ignore index c -- by masked_fill with the foreign mask (written ~own,
# or Megatron's t < lo | t >= hi) or by where(own, t - lo, full(c))
_OWN = '(binary "bitwise_and" (iscalar "ge" t lo) (iscalar "lt" t hi))'
_FOREIGN = {"not-own": f'(unary "logical_not" {_OWN})', "or": _mask_text("t", "lo", "hi")}
_LOCAL_TARGET = ("(< c 0)", "(= k (ndim L))", "(= (dim L (- k 1)) (DLit w))", "(= hi (+ lo w))")

_LOSS_SUM = '(reduce "sum" (unary "neg" (tpick L t c)) dims 0)'

LEMMAS = [
    # a plain lookup is the masked lookup at offset 0 when every id is a row of the table
    Lemma("take-valid-masked", "(take W ids)", "(mtake W ids 0)", assumes=("valid_indices",)),
    Lemma("pick-valid-masked", "(pick L t)", "(mpick L t 0)", assumes=("valid_indices",)),
    # a loss (nll_loss) whose ignore index is negative ignores no target: the targets are classes.
    # valid ids alone do not say so (labels padded with -100 are the ignore index, not classes): the
    # user states it apart (no_ignored_targets), or "loss sum / batch size" would pass for the mean
    # The assumption is the user's about the programs' inputs: it covers targets that are an input's
    # values (given), never targets a program computes -- labels it pads with -100 itself.
    Lemma("tpick-valid", "(tpick L t c)", "(pick L t)", when=("(< c 0)",),
          trigger=("(tpick L t c)", "(given t)"), assumes=("valid_indices", "no_ignored_targets")),
    # the mean: the sum of the targets' terms over their count (both of L's dtype; float32 / float64
    # only: in float16 2049 targets count 2048, while the scalar n divides exactly).  The count is
    # of the targets other than c, whatever their values: no_ignored_targets alone makes it n
    # (valid ids are for the picks, tpick-valid)
    Lemma("tcount-div-valid", f'(binary "div" {_LOSS_SUM} (tcount L t c n))', f'(scalar "div" {_LOSS_SUM} n)',
          when=("(< c 0)", '(!= n "")', "(= f (dtype L))", "(fdtype f)", '(!= f "float16")', '(!= f "bfloat16")'),
          trigger=(f'(binary "div" {_LOSS_SUM} (tcount L t c n))', "(given t)"), assumes=("no_ignored_targets",)),
    # the pick of an elementwise op with a term constant along the picked dim (log_softmax's
    # log-sum-exp, viewed with a trailing 1) is the op of the pick and that term
    Lemma("pick-binary-bcast", "(pick (binary op a (view y s)) t)", "(binary op (pick a t) y)",
          when=("(= k (ndim a))", "(= (ndim y) (- k 1))", "(= (dlen s) k)", "(= (dlast s) (DLit 1))",
                "(vpfx y s (- k 1))", "(bsame a y (- k 1))")),
    # Megatron's vocab-parallel lookup: ids outside [lo, hi) read row 0, then their rows are zeroed.
    # Exact for every id.  The zeroing mask is the range mask viewed with a trailing 1 and its own
    # leading dims (mask[..., None]; ids [1, 4] viewed to [4, 1, 1] would broadcast to [4, 4, h]).
    Lemma("mtake-intro", _MTAKE_LHS, "(mtake W ids lo)",
          when=("(= (ndim W) 2)", "(= (dim W 0) (DLit n))", "(= hi (+ lo n))",
                "(= (dlen s) (+ (ndim ids) 1))", "(= (dlast s) (DLit 1))",
                f"(vpfx {_mask_text('ids', 'lo', 'hi')} s (ndim ids))")),
    # ... and torchtitan's: the ids clamped into the table's rows [0, n) instead of set to 0 (own
    # ids are unchanged by the clamp; the rows of the others are zeroed whatever they read)
    Lemma("mtake-intro-clamp",
          f'(binary "masked_fill:0.0" (take W (unary op (iscalar "sub" ids lo))) (view {_mask_text("ids", "lo", "hi")} s))',
          "(mtake W ids lo)",
          when=("(= (ndim W) 2)", "(= (dim W 0) (DLit n))", "(> n 0)", "(= op (clampop n))", "(= hi (+ lo n))",
                "(= (dlen s) (+ (ndim ids) 1))", "(= (dlast s) (DLit 1))",
                f"(vpfx {_mask_text('ids', 'lo', 'hi')} s (ndim ids))")),
    # a lookup of rows of a table split along another dim (its columns: x column-sharded) looks up
    # every part at the same ids; the parts' axis d moves to where take puts it (after ids' dims).
    # Exact for any ids (a negative one wraps alike in every part: they have the table's rows)
    Lemma("take-concat-other", "(take (concat (Cons x r) d) ids)", "(concat (map_take (Cons x r) ids) e)",
          when=("(> d 0)", "(= e (+ d (- (ndim ids) 1)))")),
    # rows of a gradient split along its last dim (its columns), added into a zero table, are the
    # tables of the parts side by side (index_select's backward of a column-sharded table)
    Lemma("scatter-concat-last", "(scatter (concat (Cons x r) d) ids n)", "(concat (map_scatter (Cons x r) ids n) 1)",
          when=("(= d (ndim ids))",)),
    Lemma("map-scatter-nil", "(map_scatter (Nil) ids n)", "(Nil)"),
    Lemma("map-scatter-cons", "(map_scatter (Cons x r) ids n)", "(Cons (scatter x ids n) (map_scatter r ids n))"),
    # a lookup at ids split along any of their dims (token ids sharded over data-parallel ranks)
    # is the lookups at the parts, side by side along that dim (the output has ids' dims first).
    # Exact for any ids (a negative one wraps alike: every part looks up the same table)
    Lemma("take-concat-ids", "(take W (concat l d))", "(concat (map_take_ids W l) d)"),
    Lemma("map-take-ids-nil", "(map_take_ids W (Nil))", "(Nil)"),
    Lemma("map-take-ids-cons", "(map_take_ids W (Cons x r))", "(Cons (take W x) (map_take_ids W r))"),
    Lemma("map-take-nil", "(map_take (Nil) ids)", "(Nil)"),
    Lemma("map-take-cons", "(map_take (Cons x r) ids)", "(Cons (take x ids) (map_take r ids))"),
    Lemma("mtake-concat", "(mtake (concat l d) ids lo)", "(rsum (map_mtake l ids lo))",
          when=("(= d 0)", '(!= (dtype (concat l d)) "bool")')),
    Lemma("map-mtake-nil", "(map_mtake (Nil) ids lo)", "(Nil)"),
    Lemma("map-mtake-cons", "(map_mtake (Cons x r) ids lo)", "(Cons (mtake x ids lo) (map_mtake r ids (+ lo n)))",
          when=("(= (dim x 0) (DLit n))",)),
    # the cross-entropy target logit: the same masking, picking along the last dim
    Lemma("mpick-intro", _MPICK_LHS, "(mpick L t lo)",
          when=("(= k (ndim L))", "(= (dim L (- k 1)) (DLit w))", "(= hi (+ lo w))")),
    Lemma("mpick-concat", "(mpick (concat l d) t lo)", "(rsum (map_mpick l t lo))",
          when=("(= d (- (ndim (concat l d)) 1))", '(!= (dtype (concat l d)) "bool")')),
    Lemma("map-mpick-nil", "(map_mpick (Nil) t lo)", "(Nil)"),
    Lemma("map-mpick-cons", "(map_mpick (Cons x r) t lo)", "(Cons (mpick x t lo) (map_mpick r t (+ lo w)))",
          when=("(= k (ndim x))", "(= (dim x (- k 1)) (DLit w))")),
    # a loss's target pick of a rank's local targets, the foreign ones set to its (negative) ignore
    # index c: the rank's own targets' logits, zero for the others -- the masked pick of its block of
    # classes [lo, lo + w).  Exact for every target: a local target t - lo lies in [0, w), never c.
    # The fill must be the ignore index itself (0 would pick class 0 of every rank)
    *(Lemma(f"tpick-local-{form}", f'(tpick L (binary op (iscalar "sub" t lo) {mask}) c)', "(mpick L t lo)",
            when=("(= op (fillop c))",) + _LOCAL_TARGET)
      for form, mask in _FOREIGN.items()),
    # ... the same by where(own, t - lo, full(c)), the constant of t's shape (not broadcasting it)
    Lemma("tpick-local-where", f'(tpick L (where {_OWN} (iscalar "sub" t lo) (cst v s f)) c)', "(mpick L t lo)",
          when=("(= v (itext c))", "(= n (ndim t))", "(= n (dlen s))", "(vpfx t s n)") + _LOCAL_TARGET),
    # ... and its gradient (nll_loss_backward): the rank's own targets' rows placed in its block of
    # w columns, zero rows for the others -- the masked placement of columns [lo, lo + w)
    *(Lemma(f"tplace-local-{form}", f'(tplace v (binary op (iscalar "sub" t lo) {mask}) c w)', "(mplace v t lo w)",
            when=("(= op (fillop c))", "(< c 0)", "(= hi (+ lo w))"))
      for form, mask in _FOREIGN.items()),
    Lemma("tplace-local-where", f'(tplace v (where {_OWN} (iscalar "sub" t lo) (cst u s f)) c w)', "(mplace v t lo w)",
          when=("(= u (itext c))", "(< c 0)", "(= hi (+ lo w))", "(= n (ndim t))", "(= n (dlen s))", "(vpfx t s n)")),
    # the gradient of a lookup (embedding_dense_backward): with valid ids the scatter into n rows
    # is the masked scatter of rows [0, n)
    Lemma("scatter-valid-masked", "(scatter g ids n)", "(mscatter g ids 0 n)", assumes=("valid_indices",)),
    # Megatron's vocab-parallel lookup, backward: foreign ids scatter a zeroed gradient row into row
    # 0, so the rank's table gradient is rows [lo, lo + n) of the full one.  Exact for every id.
    Lemma("mscatter-intro", _MSCATTER_LHS, "(mscatter g ids lo n)",
          when=("(= hi (+ lo n))", "(= (dlen s) (+ (ndim ids) 1))", "(= (dlast s) (DLit 1))",
                f"(vpfx {_mask_text('ids', 'lo', 'hi')} s (ndim ids))")),
    # rows [lo, lo + n) are rows [lo, lo2) then [lo2, lo + n): split where a block that ends there
    # (a rank's) is in the e-graph; repeated, the head splits further (a concat in the head flattens)
    Lemma("mscatter-split", "(mscatter g ids lo n)",
          "(concat (Cons (mscatter g ids lo (- lo2 lo)) (Cons (mscatter g ids lo2 m) (Nil))) 0)",
          trigger=("(mscatter g ids lo n)", "(mscatter g ids lo2 m)"),
          when=("(= (+ lo2 m) (+ lo n))", "(< lo lo2)", "(> m 0)")),
    # the gradient of a loss's target pick (nll_loss_backward) whose ignore index is negative
    # ignores no target: the targets are classes
    Lemma("tplace-valid", "(tplace v t c n)", "(place v t n)", when=("(< c 0)",),
          trigger=("(tplace v t c n)", "(given t)"), assumes=("valid_indices", "no_ignored_targets")),
    # a division by the count of such a loss's targets is one by their number: the count is exact in
    # float32 / float64 (in float16 2049 targets count 2048) and both divide in that dtype
    Lemma("tcount-div-valid-any", '(binary "div" x (tcount L t c n))', '(scalar "div" x n)',
          when=("(< c 0)", '(!= n "")', "(= f (dtype x))", "(= f (dtype L))", "(fdtype f)", '(!= f "float16")',
                '(!= f "bfloat16")'), trigger=('(binary "div" x (tcount L t c n))', "(given t)"), assumes=("no_ignored_targets",)),
    # a placement (torch raises on an index outside [0, n)) is the masked placement of columns [0, n)
    Lemma("place-mplace", "(place v t n)", "(mplace v t 0 n)"),
    # the sum of a placement along its new dim is the values (zeros added; float: a sum of int32 is int64)
    Lemma("place-sum", "(reduce \"sum\" (place v t n) (ICons k (INil)) 0)", "v",
          when=("(= k (ndim v))", "(= f (dtype (place v t n)))", "(fdtype f)")),
    # Megatron's vocab-parallel loss, backward: foreign targets place a zeroed gradient at column 0,
    # so the rank's gradient is columns [lo, lo + w) of the full one.  Exact for every target.
    Lemma("mplace-intro", _MPLACE_LHS, "(mplace v t lo w)", when=("(= hi (+ lo w))",)),
    # columns [lo, lo + n) are columns [lo, lo2) then [lo2, lo + n): split where a block that ends
    # there (a rank's) is in the e-graph; repeated, the head splits further (a concat in the head flattens)
    Lemma("mplace-split", "(mplace v t lo n)",
          "(concat (Cons (mplace v t lo (- lo2 lo)) (Cons (mplace v t lo2 m) (Nil))) k)",
          trigger=("(mplace v t lo n)", "(mplace v t lo2 m)"),
          when=("(= (+ lo2 m) (+ lo n))", "(< lo lo2)", "(> m 0)", "(= k (ndim t))")),
    # rows [a, b) of the table's rows [lo, lo + n) are its rows [lo + a, lo + b) (a padding_idx
    # gradient keeps the table around its zero row)
    Lemma("slice-mscatter", "(slice (mscatter g ids lo n) 0 (DLit a) (DLit b))", "(mscatter g ids (+ lo a) (- b a))",
          when=("(>= a 0)", "(<= a b)", "(<= b n)")),
    # a placement is linear in its values: placed at the same indices, a sum over ranks is the sum of
    # the ranks' placements (topk's backward of a tangent every rank holds a share of, whose indices
    # all ranks computed alike from the gathered logits).  Exact: each element is 0 + v.  Only where
    # the first part's placement is in the e-graph (a rank computed it), like zpad-rsum
    Lemma("place-rsum", "(place (rsum (Cons x r)) i n)", "(rsum (map_place_each (Cons x r) i n))",
          trigger=("(place (rsum (Cons x r)) i n)", "(place x i n)")),
    Lemma("map-place-each-nil", "(map_place_each (Nil) i n)", "(Nil)"),
    Lemma("map-place-each-cons", "(map_place_each (Cons x r) i n)",
          "(Cons (place x i n) (map_place_each r i n))"),
    # Megatron's MoE dispatch: each expert's rows written into a zero buffer at (ids == e).nonzero().
    # Writes at the rows of two different ids never meet (1-D ids: one id per row; a 2-D tensor's
    # nonzero indexes rows by both coordinates), so the buffer is the sum of the writes each into
    # zeros -- what a rank's experts' buffers summed over ranks (all-reduce, reduce-scatter) are.
    *(lem for k, zeros in _ZERO_CSTS for lem in (
        Lemma(f"iput-disjoint-sum{k}", _iput(_iput(zeros, "a", "x"), "b", "y"),
              f"(rsum (Cons {_iput(zeros, 'a', 'x')} (Cons {_iput(zeros, 'b', 'y')} (Nil))))",
              when=("(!= a b)", "(= (ndim v) 1)", _NOT_BOOL)),
        # the same, the buffer already a sum whose first part is a write into zeros at another id
        Lemma(f"iput-rsum-disjoint{k}", _iput(f"(rsum (Cons {_iput(zeros, 'a', 'x')} (Cons w (Nil))))", "b", "y"),
              f"(rsum (Cons {_iput(zeros, 'a', 'x')} (Cons {_iput('w', 'b', 'y')} (Nil))))",
              when=("(!= a b)", "(= (ndim v) 1)", _NOT_BOOL)),
        # two writes into one zero buffer added (the gradient of the tokens gathered for two
        # experts: index's backward) are a sum of the pair, which sums over ranks regroup
        Lemma(f"add-iput-rsum{k}", f"(binary \"add\" (iput {zeros} i x) (iput {zeros} j y))",
              f"(rsum (Cons (iput {zeros} i x) (Cons (iput {zeros} j y) (Nil))))",
              when=(_NOT_BOOL,)))),
    # two tables of rows added into zeros, added (Hugging Face's MoE: each expert's rows
    # index_add-ed into one buffer, which lowers as buffer + scatter) are a sum of the pair, which
    # sums over ranks regroup; of one width and dtype (else the add broadcasts or promotes)
    Lemma("add-scatter-rsum", '(binary "add" (scatter a i n) (scatter b j n))',
          "(rsum (Cons (scatter a i n) (Cons (scatter b j n) (Nil))))",
          when=("(= w (dim (scatter a i n) 1))", "(= w (dim (scatter b j n) 1))", "(= t (dtype a))", "(= t (dtype b))",
                _NOT_BOOL)),
    # ... and a further table added to such a sum joins it, last (the sequential program adds its
    # experts' tables one by one, in the order of the ranks that hold them)
    Lemma("add-rsum-scatter", '(binary "add" (rsum l) (scatter b j n))',
          "(rsum (lappend l (Cons (scatter b j n) (Nil))))",
          when=("(= 2 (ndim (rsum l)))", "(= (DLit n) (dim (rsum l) 0))", "(= w (dim (rsum l) 1))",
                "(= w (dim (scatter b j n) 1))", "(= t (dtype (rsum l)))", "(= t (dtype b))", _NOT_BOOL)),
    # the rows where the ids are b are not those a write at the rows where they are a changed
    # (index_put's backward: the gradient at the rows written, zeroed, read again at other rows)
    Lemma("take-iput-disjoint", f"(take {_iput('x', 'a', 'y')} (nonzero (iscalar \"eq\" v b)))",
          '(take x (nonzero (iscalar "eq" v b)))', when=("(!= a b)", "(= (ndim v) 1)")),
]


def _lookup_shape(name):
    return Rule(f"shape-{name}", (
        f"(rule ((= y ({name} w i{' o' if name == 'mtake' else ''})) (= a (ndim w)) (= b (ndim i))) "
        f"((set (ndim y) (+ b (- a 1)))) :ruleset shapes)\n"
        f"(rule ((= y ({name} w i{' o' if name == 'mtake' else ''})) (= v (dim i k))) ((set (dim y k) v)) :ruleset shapes)\n"
        f"(rule ((= y ({name} w i{' o' if name == 'mtake' else ''})) (= v (dim w k)) (> k 0) (= b (ndim i))) "
        f"((set (dim y (+ b (- k 1))) v)) :ruleset shapes)"))


def _index_shape(pattern, name):
    return Rule(name, (
        f"(rule ((= y {pattern}) (= n (ndim i))) ((set (ndim y) n)) :ruleset shapes)\n"
        f"(rule ((= y {pattern}) (= v (dim i k))) ((set (dim y k) v)) :ruleset shapes)"))


RULES = [
    _lookup_shape("take"),
    _lookup_shape("mtake"),
    _index_shape("(pick x i)", "shape-pick"),
    _index_shape("(mpick x i o)", "shape-mpick"),
    _index_shape("(iscalar op i c)", "shape-iscalar"),
    Rule("shape-scatter", "\n".join(
        f"(rule ((= y {pat})) ((set (ndim y) 2) (set (dim y 0) (DLit n))) :ruleset shapes)\n"
        f"(rule ((= y {pat}) (= a (ndim g)) (= v (dim g (- a 1)))) ((set (dim y 1) v)) :ruleset shapes)"
        for pat in ("(scatter g i n)", "(mscatter g i o n)"))),
    Rule("shape-place", (
        "(rule ((= y (place v i n)) (= a (ndim v))) ((set (ndim y) (+ a 1)) (set (dim y a) (DLit n))) :ruleset shapes)\n"
        "(rule ((= y (place v i n)) (= x (dim v k))) ((set (dim y k) x)) :ruleset shapes)")),
    _index_shape("(tpick x i c)", "shape-tpick"),
    Rule("shape-tplace", (
        "(rule ((= y (tplace v i c n)) (= a (ndim v))) ((set (ndim y) (+ a 1)) (set (dim y a) (DLit n))) :ruleset shapes)\n"
        "(rule ((= y (tplace v i c n)) (= x (dim v k))) ((set (dim y k) x)) :ruleset shapes)\n"
        "(rule ((= y (mplace v i o n)) (= a (ndim i))) ((set (ndim y) (+ a 1)) (set (dim y a) (DLit n))) :ruleset shapes)\n"
        "(rule ((= y (mplace v i o n)) (= x (dim i k))) ((set (dim y k) x)) :ruleset shapes)")),
    # a placement has its values' dtype
    Rule("dtype-place", "\n".join(
        f"(rule ((= y {pat}) (= f (dtype v))) ((set (dtype y) f)) :ruleset shapes)"
        for pat in ("(place v i n)", "(tplace v i c n)", "(mplace v i o n)"))),
    # ... and so has a table of rows added into zeros
    Rule("dtype-scatter", "\n".join(
        f"(rule ((= y {pat}) (= f (dtype g))) ((set (dtype y) f)) :ruleset shapes)"
        for pat in ("(scatter g i n)", "(mscatter g i o n)"))),
    Rule("shape-tcount", "(rule ((= y (tcount x i c n))) ((set (ndim y) 0)) :ruleset shapes)"),
    # the ignore index of a loss's target pick as a constant's text and as a masked_fill op (to match
    # the fill of its local targets: tpick-local-*); a where's constant compared with t's shape
    Rule("ask-itext-tpick", "(rule ((= z (tpick L x c))) ((set (itext c) (to-string c)) "
         "(set (fillop c) (+ \"masked_fill:\" (to-string c)))) :ruleset shapes)\n"
         "(rule ((= z (tpick L (where m (iscalar \"sub\" t lo) (cst v s f)) c))) ((vpfx t s 0)) :ruleset shapes)\n"
         "(rule ((= z (tplace u x c n))) ((set (itext c) (to-string c)) "
         "(set (fillop c) (+ \"masked_fill:\" (to-string c)))) :ruleset shapes)\n"
         "(rule ((= z (tplace u (where m (iscalar \"sub\" t lo) (cst v s f)) c n))) ((vpfx t s 0)) :ruleset shapes)"),
    # the leading dims of a pick's operands through a broadcast op, compared one by one (bmm-view-batch)
    Rule("ask-bsame-pick", "(rule ((= z (pick (binary op a (view y s)) t))) ((bsame a y 0)) :ruleset shapes)"),
    Rule("shape-cst", (
        "(rule ((= y (cst c s t)) (= n (dlen s))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= y (cst c s t)) (= v (dat s i))) ((set (dim y i) v)) :ruleset shapes)\n"
        "(rule ((= y (cst c s t))) ((set (dtype y) t)) :ruleset shapes)")),
    # the clamp text of a table's rows, asked by a lookup at shifted ids (mtake-intro-clamp)
    Rule("ask-clampop-take", '(rule ((= z (take W (unary op (iscalar "sub" ids lo)))) (= (dim W 0) (DLit n))) '
         '((set (clampop n) (+ "clamp.default(_, 0, " (+ (to-string (- n 1)) ")")))) :ruleset shapes)'),
    # a nonzero result is [count, ndim of its input] int64, its count the term's own DRows; a write
    # at positions has its buffer's shape and dtype
    Rule("shape-nonzero", (
        "(rule ((= y (nonzero x)) (= n (ndim x))) ((set (ndim y) 2) (set (dim y 0) (DRows y)) "
        "(set (dim y 1) (DLit n)) (set (dtype y) \"int64\")) :ruleset shapes)")),
    Rule("shape-iput", (
        "(rule ((= y (iput x i v)) (= n (ndim x))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= y (iput x i v)) (= d (dim x k))) ((set (dim y k) d)) :ruleset shapes)\n"
        "(rule ((= y (iput x i v)) (= f (dtype x))) ((set (dtype y) f)) :ruleset shapes)")),
]
