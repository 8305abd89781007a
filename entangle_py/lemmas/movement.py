"""Data movement: slice / concat / transpose / view / permute algebra.

A view is described by how much of its input's shape it keeps: (vpfx x s i) says the first i dims
of x are the first i entries of s, (vsfx x s j) the same for the last j (both derived for every
(view x s) by the RULES below); (ipos p d) is where the permutation p puts dim d.
"""
from entangle_py.engine.lemma import Lemma, Rule
from entangle_py.lemmas.conditions import ZERO_TEXTS
from entangle_py.semantics.lower.core import int_list as ilist

# Conditions for a view of a concat along d (parts bound as (Cons x r): lemmas match only concrete part
# lists, so that an unresolved helper list is never mapped over again -- views can form cycles).
_KEEP_PREFIX = ("(vpfx (concat (Cons x r) d) s (+ d 1))",)
_KEEP_SUFFIX = ("(= n (ndim (concat (Cons x r) d)))", "(= m (dlen s))", "(vsfx (concat (Cons x r) d) s (- n d))",
                "(= e (- (+ d m) n))")
# the dims before the concat axis kept, s[d] = p (a literal, not the axis' t: view-concat-keep-prefix
# reads that one, literal or not); the view's own validity makes the rest of s regroup the rest
_REGROUP = ("(vpfx (concat (Cons x r) d) s d)", "(= (dim (concat (Cons x r) d) d) (DLit t))", "(= (dat s d) (DLit p))",
            "(> t 0)", "(!= p t)")

# a + y + x for zero-padded blocks y, x of one float dtype with a, of one padded size along d:
# the blocks adjacent (x before y, or after it).  Elementwise at most one of y, x is not a padding
# zero, so (a + y) + x = a + (y + x) exactly (but for the sign of a zero)
_REASSOC = ("(= t (dtype a))", "(= t (dtype x))", "(= t (dtype y))", "(fdtype t)", "(= n (ndim x))", "(= n (ndim y))",
            "(= (dim x d) (DLit m))", "(= (dim y d) (DLit k))", "(= (+ (+ l1 m) h1) (+ (+ l2 k) h2))")
_X_BEFORE_Y, _X_AFTER_Y = ("(= l2 (+ l1 m))",), ("(= l1 (+ l2 k))",)

# (bsame a b n) is asked of the add's operands in their order
_ZPAD_ADJ = ("(= n (ndim x))", "(= n (ndim y))", "(= (dim x d) (DLit m))", "(= l2 (+ l1 m))", "(= t (dtype x))",
             "(= t (dtype y))")

_GROUP2 = "(concat (Cons x (Cons y (Cons z r))) d)"

LEMMAS = [
    # ------------------------------------------------------------------ slice / concat / transpose
    # transpose(concat(parts, d)) = concat(transpose(parts), d') with d' the image of d (over a
    # concrete part list: transposes of transposes of views cycle, and mapping over the unresolved
    # list of an earlier map nests maps without end -- the backward of multi-query attention)
    Lemma("transpose-concat-a", "(transpose (concat (Cons x r) d) a b)",
          "(concat (map_transpose (Cons x r) a b) b)",
          when=("(= d a)",)),
    Lemma("transpose-concat-b", "(transpose (concat (Cons x r) d) a b)",
          "(concat (map_transpose (Cons x r) a b) a)",
          when=("(= d b)",)),
    Lemma("transpose-concat-other", "(transpose (concat (Cons x r) d) a b)",
          "(concat (map_transpose (Cons x r) a b) d)",
          when=("(!= d a)", "(!= d b)")),
    Lemma("map-transpose-nil", "(map_transpose (Nil) a b)", "(Nil)"),
    Lemma("map-transpose-cons", "(map_transpose (Cons x r) a b)", "(Cons (transpose x a b) (map_transpose r a b))"),
    # slice of a concat along the same dim: inside the first part, or past it
    # (sizes may be symbolic: `dle` is decided by egglog for literals and by Z3 otherwise)
    Lemma("slice-concat-first", "(slice (concat (Cons x r) d) d s e)", "(slice x d s e)",
          when=("(= n (dim x d))", "(dle e n)")),
    Lemma("slice-concat-rest", "(slice (concat (Cons x (Cons y r)) d) d s e)",
          "(slice (concat (Cons y r) d) d (dsub s n) (dsub e n))",
          when=("(= n (dim x d))", "(dle n s)")),
    # the concat of x's two slices [0, b) and [b, n) along d is x (the gradient blocks of a concat
    # of slices, put back together; slice-cover joins slices whose union is in the e-graph)
    Lemma("concat-slices-whole", "(concat (Cons (slice x d (DLit 0) (DLit b)) (Cons (slice x d (DLit b) (DLit c)) (Nil))) d)",
          "x", when=("(= (dim x d) (DLit c))", "(<= 0 b)", "(<= b c)")),
    Lemma("slice-full", "(slice x d (DLit 0) n)", "x",
          when=("(= n (dim x d))",)),
    Lemma("concat-single", "(concat (Cons x (Nil)) d)", "x"),
    # a transpose undone (a block transposed before a gather and back after it)
    Lemma("transpose-transpose", "(transpose (transpose x a b) a b)", "x"),

    # ------------------------------------------------------------------ view / reshape
    # reshaping only the dims before a concat along the last dim keeps the concat
    Lemma("view-concat-last", "(view (concat l d) s)", "(concat (map_view_last l s) (- k 1))",
          when=("(= d (- (ndim (concat l d)) 1))", "(= (dlast s) (dim (concat l d) d))", "(= k (dlen s))")),
    Lemma("map-view-last-nil", "(map_view_last (Nil) s)", "(Nil)"),
    Lemma("map-view-last-cons", "(map_view_last (Cons x r) s)",
          "(Cons (view x (dset_last s v)) (map_view_last r s))",
          when=("(= n (ndim x))", "(= v (dim x (- n 1)))")),
    # a view is linear: it commutes with a sum over ranks
    Lemma("view-rsum", "(view (rsum l) s)", "(rsum (map_view l s))"),
    Lemma("map-view-nil", "(map_view (Nil) s)", "(Nil)"),
    Lemma("map-view-cons", "(map_view (Cons x r) s)", "(Cons (view x s) (map_view r s))"),
    # shape-list helpers
    Lemma("dset-last-one", "(dset_last (DCons x (DNil)) v)", "(DCons v (DNil))"),
    Lemma("dset-last-more", "(dset_last (DCons x (DCons y r)) v)", "(DCons x (dset_last (DCons y r) v))"),

    # ------------------------------------------------------------------ slice tiling, cover, flattening
    # (sequence parallelism: a replicated tensor sliced per rank, reduce_scatter = the rank's slice of
    # a sum).  Slices of x the e-graph holds that tile it along d, from 0 to its end, in order (the
    # relation stile, chained by RULES over the slices present): x is their concat, one flat concat
    # however many parts.  Found in one step, where pairwise joining built every interval of the
    # parts and every grouping of them (2 steps and 34 matches for 4 parts; 6 steps and 235 k
    # matches, past 300 k e-nodes, for 16)
    Lemma("slice-tile", "(concat l d)", "x", trigger=("(stile x d 0 l)",)),
    # Two adjacent non-empty slices of the same tensor along d are the slice over both, where that
    # slice is in the e-graph too (a rank's block of two chunks): no new slice is made.  Empty
    # pieces are refused: they would only make churn.
    Lemma("slice-cover", "(slice x d (DLit a) (DLit c))",
          "(concat (Cons (slice x d (DLit a) (DLit b)) (Cons (slice x d (DLit b) (DLit c)) (Nil))) d)",
          trigger=("(slice x d (DLit a) (DLit c))", "(slice x d (DLit a) (DLit b))", "(slice x d (DLit b) (DLit c))"),
          when=("(< a b)", "(< b c)")),
    # concat of a concat (as first part) along the same dim: one flat concat.  Only with more parts
    # after it: every x is (concat (Cons x (Nil)) d), so flattening that would nest lappends without
    # end over a list no walk resolves
    Lemma("concat-flatten-head", "(concat (Cons (concat l1 d) (Cons z r)) d)", "(concat (lappend l1 (Cons z r)) d)"),
    # ... and a concat as the last of two parts (a block split in blocks after a part of its own):
    # its parts spliced in; a one-part concat gives the same term back.  Found from the pairs
    # (concat2, RULES) whose last part is a concat along d: as one pattern over two concats, egglog
    # joined every concat with every other along the same dim
    Lemma("concat-flatten-last", "(concat (Cons x (Cons (concat l2 d) (Nil))) d)", "(concat (Cons x l2) d)",
          trigger=("(concat2 x (concat l2 d) d)",)),
    # the inverse of concat-flatten-head for a head of two parts that the e-graph holds as a concat of
    # its own (a rank's block with a zero row beside its rows): grouped.  Longer heads regroup two
    # parts at a time where the program nests them that way (a padded table is lowered right-nested).
    # The pair's concat is read from the relation concat2 (RULES): the same pattern over the concat
    # and list tables twice made egglog join every concat with every other along the same dim, a
    # search that grew with the square of the concats (L1 TP 8 GPT: 98 % of the rule time)
    Lemma("concat-group-head2", _GROUP2, "(concat (Cons (concat (Cons x (Cons y (Nil))) d) (Cons z r)) d)",
          trigger=(_GROUP2, "(concat2 x y d)")),
    # ... and the inverse of concat-flatten-last: the parts after the first, where the e-graph holds
    # them as a concat of their own (a rank's block after the blocks before it), grouped
    Lemma("concat-group-tail", "(concat (Cons x (Cons y (Cons z r))) d)",
          "(concat (Cons x (Cons (concat (Cons y (Cons z r)) d) (Nil))) d)",
          trigger=("(concat (Cons x (Cons y (Cons z r))) d)", "(concat (Cons y (Cons z r)) d)")),
    Lemma("lappend-nil", "(lappend (Nil) r)", "r"),
    Lemma("lappend-cons", "(lappend (Cons x l) r)", "(Cons x (lappend l r))"),
    # a transpose is linear: grad^T of a partial-sum gradient (backward of a row-parallel layer)
    Lemma("transpose-rsum", "(transpose (rsum (Cons x r)) a b)", "(rsum (map_transpose (Cons x r) a b))"),
    # ... and so is a permute (a reduce-scatter along an inner dim, written as movedim, reduce-scatter
    # along dim 0 and movedim back: the gradient of an all-gather along the hidden dim)
    Lemma("permute-rsum", "(permute (rsum (Cons x r)) p)", "(rsum (map_permute (Cons x r) p))"),

    # ------------------------------------------------------------------ views, transposes, permutes and
    # slices that keep a concat axis whole (attention with heads split across ranks).  A view that
    # keeps the concat axis, splits it in two or merges it with the next dim keeps the concat; one
    # that merges it with a dim before it does not.
    # reshapes compose; a reshape to the tensor's own shape is the tensor
    Lemma("view-view", "(view (view x s1) s2)", "(view x s2)"),
    Lemma("view-self", "(view x s)", "x", when=("(= n (ndim x))", "(= n (dlen s))", "(vpfx x s n)")),
    # an expand to x's own shape (a rank's one KV head "expanded" over its one query head)
    Lemma("expand-self", "(expand x s)", "x", when=("(= n (ndim x))", "(= n (dlen s))", "(vpfx x s n)")),
    # the concat axis and everything before it kept: each part is viewed alike
    Lemma("view-concat-keep-prefix", "(view (concat (Cons x r) d) s)", "(concat (map_view_at (Cons x r) s d d) d)",
          when=_KEEP_PREFIX),
    # the concat axis and everything after it kept: the axis moves to its place in s
    Lemma("view-concat-keep-suffix", "(view (concat (Cons x r) d) s)", "(concat (map_view_at (Cons x r) s d e) e)",
          when=_KEEP_SUFFIX),
    # the concat axis and the dims after it regrouped (split in any number of dims, merged with the
    # dims after it, or both: a fused QKV projection [.., G * 3 * h] viewed [.., G, 3, h]), the
    # axis staying the outermost: the flattened region [d:] of part k holds the rows [o_k, o_k + m_k)
    # of the axis, whole rows of the view's dim d where p * m_k / t is whole (checked part by part
    # by the walk, which stops otherwise).  A view merging the axis into a dim before it is not one
    Lemma("view-concat-regroup", "(view (concat (Cons x r) d) s)", "(concat (map_view_scale (Cons x r) s d t) d)",
          when=_REGROUP),
    Lemma("map-view-at-nil", "(map_view_at (Nil) s d j)", "(Nil)"),
    Lemma("map-view-at-cons", "(map_view_at (Cons x r) s d j)",
          "(Cons (view x (dset s j v)) (map_view_at r s d j))", when=("(= v (dim x d))",)),
    Lemma("map-view-scale-nil", "(map_view_scale (Nil) s d t)", "(Nil)"),
    Lemma("map-view-scale-cons", "(map_view_scale (Cons x r) s d t)",
          "(Cons (view x (dset s d (DLit (/ (* p m) t)))) (map_view_scale r s d t))",
          when=("(= (dim x d) (DLit m))", "(= (dat s d) (DLit p))", "(> t 0)", "(= (% (* p m) t) 0)")),
    Lemma("dset-here", "(dset (DCons a r) 0 v)", "(DCons v r)"),
    Lemma("dset-later", "(dset (DCons a r) i v)", "(DCons a (dset r (- i 1) v))", when=("(> i 0)",)),
    # a slice along a dim other than the concat axis slices every part
    Lemma("slice-concat-other-dim", "(slice (concat (Cons x r) d) k a b)", "(concat (map_slice (Cons x r) k a b) d)",
          when=("(!= k d)",)),
    Lemma("map-slice-nil", "(map_slice (Nil) k a b)", "(Nil)"),
    Lemma("map-slice-cons", "(map_slice (Cons x r) k a b)", "(Cons (slice x k a b) (map_slice r k a b))"),
    # permute of a concat: the concat axis moves to where the permutation puts it
    Lemma("permute-concat", "(permute (concat (Cons x r) d) p)", "(concat (map_permute (Cons x r) p) j)", when=("(= j (ipos p d))",)),
    # ... and of a slice: the sliced dim moves likewise (a rank's block of a reduce-scatter along an
    # inner dim, taken along dim 0 between two movedims)
    Lemma("permute-slice", "(permute (slice x d a b) p)", "(slice (permute x p) j a b)", when=("(= j (ipos p d))",)),
    # ... and so moves a transpose (a permute of two dims is lowered as one), for a rank's block of
    # a sum over ranks: a reduce-scatter along another dim than 0, written transpose / reduce-scatter
    # / transpose.  Only there: on any slice (attention heads, QKV blocks) it doubled GPT's matches
    *(Lemma(f"transpose-slice-rsum-{k}", "(transpose (slice (rsum l) d s e) a b)", f"(slice (transpose (rsum l) a b) {j} s e)",
            when=when)
      for k, j, when in (("a", "b", ("(= d a)",)), ("b", "a", ("(= d b)",)), ("other", "d", ("(!= d a)", "(!= d b)")))),
    Lemma("map-permute-nil", "(map_permute (Nil) p)", "(Nil)"),
    Lemma("map-permute-cons", "(map_permute (Cons x r) p)", "(Cons (permute x p) (map_permute r p))"),
    # a permute undone by its inverse (q[i] = where p puts dim i): an all-gather along a dim other
    # than 0 (movedim to 0, gather, movedim back) of a 3-D to 5-D tensor.  One lemma per length, q's
    # entries indexed from the front (0, 1, 2) or from the back (n - 1, n - 2); a 2-D permute is
    # lowered as a transpose (transpose-transpose)
    *(Lemma(f"permute-inverse-{n}", f"(permute (permute x p) {ilist([f'q{i}' for i in range(n)])})", "x",
            when=("(= n (ndim x))",) + tuple(f"(= q{i} (ipos p {i if i <= 2 else f'(- n {n - i})'}))" for i in range(n))) for n in range(3, 6)),
    # transpose after a view, when both swapped dims are dims the view kept (front or back)
    Lemma("transpose-view-front", "(transpose (view x s) a b)", "(view (transpose x a b) (dset (dset s a vb) b va))",
          when=("(vpfx x s (+ a 1))", "(vpfx x s (+ b 1))", "(= va (dat s a))", "(= vb (dat s b))")),
    Lemma("transpose-view-back", "(transpose (view x s) a b)",
          "(view (transpose x (+ a (- n m)) (+ b (- n m))) (dset (dset s a vb) b va))",
          when=("(= n (ndim x))", "(= m (dlen s))", "(vsfx x s (- m a))", "(vsfx x s (- m b))", "(= va (dat s a))",
                "(= vb (dat s b))")),
    # transpose of a dim with its neighbour that the view merged from two dims of x.  Not where a
    # merged dim is 1 (merged-left: its first): that view only drops the dim, and the lemmas above
    # (or merged-left, for merged-right's first) state the transpose of it already.  Two readings
    # of one view keep building transposes of transposes of x that never cancel (a 3-D weight of
    # one expert viewed 2-D: transpose-transpose undoes one reading, never a mix of the two);
    # one reading each, and the view's transpose transposed back is x again.
    Lemma("transpose-view-merged-right", "(transpose (view x s) a b)",
          "(view (transpose (transpose x a b) b (+ b 1)) (dset (dset s a vb) b va))",
          when=("(= b (+ a 1))", "(= n (ndim x))", "(= m (dlen s))", "(= (+ m 1) n)", "(vpfx x s b)",
                "(vsfx x s (- m (+ b 1)))", "(= va (dat s a))", "(= vb (dat s b))",
                "(!= (dim x b) (DLit 1))", "(!= (dim x (+ b 1)) (DLit 1))")),
    Lemma("transpose-view-merged-left", "(transpose (view x s) a b)",
          "(view (transpose (transpose x b (+ b 1)) a b) (dset (dset s a vb) b va))",
          when=("(= b (+ a 1))", "(= n (ndim x))", "(= m (dlen s))", "(= (+ m 1) n)", "(vpfx x s a)",
                "(vsfx x s (- m b))", "(= va (dat s a))", "(= vb (dat s b))", "(!= (dim x a) (DLit 1))")),
    # an expand that keeps the concat axis (its size there unchanged: leading dims may be added,
    # size-1 dims elsewhere broadcast) expands every part alike (the backward of a mean over a dim
    # of sequence-sharded rows: the gradient expanded over the reduced dim)
    Lemma("expand-concat", "(expand (concat (Cons x r) d) s)", "(concat (map_expand_at (Cons x r) s d j) j)",
          when=("(= n (ndim (concat (Cons x r) d)))", "(= m (dlen s))", "(= j (+ d (- m n)))",
                "(= (dim (concat (Cons x r) d) d) (dat s j))")),
    Lemma("map-expand-at-nil", "(map_expand_at (Nil) s d j)", "(Nil)"),
    Lemma("map-expand-at-cons", "(map_expand_at (Cons x r) s d j)",
          "(Cons (expand x (dset s j v)) (map_expand_at r s d j))", when=("(= v (dim x d))",)),
    # an expand to p along a dim where x has size 1 (broadcast) is k = p / q copies of x expanded
    # to q there, concatenated along it (multi-query attention: the one KV head expanded over every
    # query head is the concat of the ranks' expands over their own heads).  Only beside an expand
    # of x to q on that dim (a rank computed it), so that splits are not invented.
    Lemma("expand-split-bcast", "(expand x s)", "(concat (repl (expand x (dset s j (DLit q))) k) j)",
          trigger=("(expand x s)", "(expand x t)", "(dat t j)"),
          when=("(= n (ndim x))", "(= m (dlen s))", "(= m (dlen t))", "(>= j (- m n))",
                "(= (dim x (- j (- m n))) (DLit 1))", "(= (dat s j) (DLit p))", "(= (dat t j) (DLit q))",
                "(> q 0)", "(< q p)",
                "(= (% p q) 0)", "(= k (/ p q))")),
    # ... and along a leading dim x does not have (a scalar loss gradient expanded over the rows of
    # its batch, against a rank's expand over its own rows)
    Lemma("expand-split-absent", "(expand x s)", "(concat (repl (expand x (dset s j (DLit q))) k) j)",
          trigger=("(expand x s)", "(expand x t)", "(dat t j)"),
          when=("(= n (ndim x))", "(= m (dlen s))", "(= m (dlen t))", "(>= j 0)", "(< j (- m n))",
                "(= (dat s j) (DLit p))", "(= (dat t j) (DLit q))", "(> q 0)", "(< q p)",
                "(= (% p q) 0)", "(= k (/ p q))")),
    # ... in two, the first q and the rest, where q does not divide p (uneven batches: a rank's 4
    # rows and the other's 3)
    Lemma("expand-split-absent-rest", "(expand x s)",
          "(concat (Cons (expand x (dset s j (DLit q))) (Cons (expand x (dset s j (DLit (- p q)))) (Nil))) j)",
          trigger=("(expand x s)", "(expand x t)", "(dat t j)"),
          when=("(= n (ndim x))", "(= m (dlen s))", "(= m (dlen t))", "(>= j 0)", "(< j (- m n))",
                "(= (dat s j) (DLit p))", "(= (dat t j) (DLit q))", "(> q 0)", "(< q p)", "(!= (% p q) 0)")),
    Lemma("repl-zero", "(repl x 0)", "(Nil)"),
    Lemma("repl-more", "(repl x k)", "(Cons x (repl x (- k 1)))", when=("(> k 0)",)),
    # two concats along e, concatenated along d: the concat along e of the pairs' concats along d
    # (rotate-half RoPE under context parallelism: cat([x1', x2'], -1) of sequence-sharded halves).
    # In two steps, for cost: a concat along the LAST dim (features: rotate-half, [gate; up])
    # whose first part is a concat along another dim is marked (concat_nest), and the
    # interchange matches the mark, only where the first pair's concat is in the e-graph (a rank
    # computed it).  One pattern over the big concat and list tables cost a fifth of the GPT
    # check in egglog's search; marking concats along any dim, a tenth (the row and column
    # parallel products of a GPT layer nest concats, and some of their pairs exist).
    Lemma("concat-nest", "(concat (Cons (concat l1 e) r) d)", "(concat_nest l1 r d e)",
          when=("(!= d e)", "(= (+ d 1) (ndim (concat l1 e)))")),
    Lemma("concat-interchange", "(concat_nest (Cons a r1) (Cons (concat (Cons b r2) e) (Nil)) d e)",
          "(concat (zip_concat (Cons a r1) (Cons b r2) d e) e)",
          trigger=("(concat_nest (Cons a r1) (Cons (concat (Cons b r2) e) (Nil)) d e)",
                   "(concat (Cons a (Cons b (Nil))) d)"),
          when=("(!= d e)",)),
    # ... and with a constant for the second concat: a constant is the concat of its blocks, split
    # where the first concat's parts are (labels shifted and padded with a constant column, -100,
    # along dim 1, of row-sharded ids: each rank pads its rows with its own block of the column)
    Lemma("concat-nest-cst", "(concat_nest (Cons a r1) (Cons (cst c s t) (Nil)) d e)",
          "(concat_nest (Cons a r1) (Cons (concat (cst_parts c s t e (Cons a r1) e) e) (Nil)) d e)",
          when=("(!= d e)", "(= (dlen s) (ndim (concat (Cons a r1) e)))", "(= (dat s e) (dim (concat (Cons a r1) e) e))")),
    Lemma("zip-concat-nil", "(zip_concat (Nil) (Nil) d e)", "(Nil)"),
    Lemma("zip-concat-cons", "(zip_concat (Cons a r1) (Cons b r2) d e)",
          "(Cons (concat (Cons a (Cons b (Nil))) d) (zip_concat r1 r2 d e))",
          when=("(= (dim a e) (dim b e))",)),
    # elementwise ops commute with reshapes (moved outward, so views meet views)
    Lemma("scalar-view", "(scalar op (view x s) c)", "(view (scalar op x c) s)"),
    Lemma("unary-view", "(unary op (view x s))", "(view (unary op x) s)"),
    Lemma("iscalar-view", "(iscalar op (view x s) c)", "(view (iscalar op x c) s)"),
    # ... and with the other data movement, any dtype (the gradient of a mean, grad / n expanded
    # over the batch: a scaling pushed through a backward graph meets the expand, transpose, slice)
    Lemma("scalar-expand", "(scalar op (expand x s) c)", "(expand (scalar op x c) s)"),
    Lemma("scalar-transpose", "(scalar op (transpose x a b) c)", "(transpose (scalar op x c) a b)"),
    Lemma("scalar-slice", "(scalar op (slice x d a b) c)", "(slice (scalar op x c) d a b)"),
    # an expand to the other operand's shape is the broadcast the binary op does anyway (a
    # mean's gradient, expand(g / n, shape of x), times x)
    Lemma("binary-expand-left", "(binary op (expand x s) y)", "(binary op x y)",
          when=("(= n (ndim y))", "(= n (dlen s))", "(vpfx y s n)")),
    Lemma("binary-expand-right", "(binary op y (expand x s))", "(binary op y x)",
          when=("(= n (ndim y))", "(= n (dlen s))", "(vpfx y s n)")),
    # an expand combined with a 0-D tensor of its dtype is the expand of the combination (a mean
    # loss's gradient g / count expanded over the targets: the count a sum over ranks)
    Lemma("binary-expand-scalar", "(binary op (expand x s) y)", "(expand (binary op x y) s)",
          when=("(= 0 (ndim y))", "(= t (dtype x))", "(= t (dtype y))")),
    # a view of x + bias, the bias broadcasting over trailing dims the view keeps, is the view
    # plus the bias (nn.Linear on a 3-D input: view -> addmm -> view back)
    Lemma("view-binary-bcast", "(view (binary op x y) s)", "(binary op (view x s) y)",
          when=("(= 1 (ndim y))", "(= n (ndim x))", "(= n (ndim (binary op x y)))",
                "(vsfx (binary op x y) s 1)", "(= (dim x (- n 1)) (dim (binary op x y) (- n 1)))")),
    # ------------------------------------------------------------------ zero padding (slice_backward)
    # a concat is the sum of its parts each padded with zeros to the whole (x + 0 = x): the gradient
    # of a weight each rank slices its own rows of.  Only where the first part's padded form is in
    # the e-graph (a rank computed it), so that concats elsewhere are left alone.
    Lemma("concat-zpad-rsum", "(concat (Cons x r) d)", "(rsum (map_zpad (Cons x r) d 0 t))",
          trigger=("(concat (Cons x r) d)", "(zpad x d 0 h)"),
          when=("(= (dim (concat (Cons x r) d) d) (DLit t))",)),
    # a slice of a zero-padded tensor that lies inside the tensor is a slice of it (the gradient
    # of a weight a rank slices its real rows of, read back by the spec's slice of those rows)
    Lemma("slice-zpad-inner", "(slice (zpad x d lo hi) d (DLit s) (DLit e))", "(slice x d (DLit (- s lo)) (DLit (- e lo)))",
          when=("(= (dim x d) (DLit m))", "(<= lo s)", "(<= s e)", "(<= e (+ lo m))")),
    # ... and one reaching into the padding on either side is the slice of x it covers, padded
    # (rank r's narrow of a gradient that is the padded sum of the ranks' blocks, uneven splits)
    Lemma("slice-zpad-left", "(slice (zpad x d lo hi) d (DLit s) (DLit e))", "(zpad (slice x d (DLit 0) (DLit (- e lo))) d (- lo s) 0)",
          when=("(= (dim x d) (DLit m))", "(<= 0 s)", "(< s lo)", "(< lo e)", "(<= e (+ lo m))")),
    Lemma("slice-zpad-right", "(slice (zpad x d lo hi) d (DLit s) (DLit e))", "(zpad (slice x d (DLit (- s lo)) (DLit m)) d 0 (- e (+ lo m)))",
          when=("(= (dim x d) (DLit m))", "(<= lo s)", "(< s (+ lo m))", "(< (+ lo m) e)", "(<= e (+ (+ lo m) hi))")),
    Lemma("slice-zpad-around", "(slice (zpad x d lo hi) d (DLit s) (DLit e))", "(zpad x d (- lo s) (- e (+ lo m)))",
          when=("(= (dim x d) (DLit m))", "(<= 0 s)", "(< s lo)", "(< (+ lo m) e)", "(<= e (+ (+ lo m) hi))")),
    Lemma("zpad-none", "(zpad x d 0 0)", "x"),
    # a zero constant padded with zeros is the zero constant of the padded shape (the zero
    # gradient of a rank that does not hold a block, padded to the whole by concat-zpad-rsum).
    # Not -0.0: zpad pads with +0.0
    *(Lemma(f"zpad-zeros{k}", f'(zpad (cst "{z}" s t) d lo hi)', f'(cst "{z}" (dset s d (DLit (+ m (+ lo hi)))) t)',
            when=("(= (dat s d) (DLit m))",))
      for z, k in zip(ZERO_TEXTS, ("", "-int"))),
    # a permute (transpose) of a zero-padded tensor is the padded permute, the padding moved with
    # its dim (the backward of a block taken between two movedims: slice_backward, then moved back)
    Lemma("permute-zpad", "(permute (zpad x d lo hi) p)", "(zpad (permute x p) j lo hi)", when=("(= j (ipos p d))",)),
    Lemma("transpose-zpad-a", "(transpose (zpad x d lo hi) a b)", "(zpad (transpose x a b) b lo hi)",
          when=("(= d a)",)),
    Lemma("transpose-zpad-b", "(transpose (zpad x d lo hi) a b)", "(zpad (transpose x a b) a lo hi)",
          when=("(= d b)",)),
    Lemma("transpose-zpad-other", "(transpose (zpad x d lo hi) a b)", "(zpad (transpose x a b) d lo hi)",
          when=("(!= d a)", "(!= d b)")),
    # a concat of x with zero blocks (a constant zero of any shape: the concat's meaning makes it
    # x's shape but along d, and x's dtype) before it, after it or on both sides is x zero-padded
    # (a rank's rows placed in a zero tensor by cat([new_zeros, x, new_zeros]), all-reduced; a
    # zero constant_pad_nd).  Not -0.0: zpad pads with +0.0.  Not x followed by zeros alone: with
    # concat-zpad-rsum (x's padded form being there) that concat is the sum over (its own class,
    # zeros), and add-rsum-rsum / rsum-pair-add then grow it without end (uneven_gather's F.pad)
    *(lem for z, k in zip(ZERO_TEXTS, ("", "-int")) for lem in (
        Lemma(f"concat-zeros-x{k}", f'(concat (Cons (cst "{z}" s1 t) (Cons x (Nil))) d)', "(zpad x d lo 0)",
              when=("(= (dat s1 d) (DLit lo))",)),
        Lemma(f"concat-zeros-x-zeros{k}",
              f'(concat (Cons (cst "{z}" s1 t) (Cons x (Cons (cst "{z}" s2 t) (Nil)))) d)', "(zpad x d lo hi)",
              when=("(= (dat s1 d) (DLit lo))", "(= (dat s2 d) (DLit hi))")))),

    # the sum of two zero-padded blocks of one shape, adjacent along d (the backward of two slices
    # [lo, lo + m) and [lo + m, ...) of one tensor: slice_backward of each, added), is the
    # padded concat of the blocks.  Same dtype; every dim alike (no broadcasting) by bsame.
    Lemma("zpad-add-adjacent", '(binary "add" (zpad x d l1 h1) (zpad y d l2 h2))',
          "(zpad (concat (Cons x (Cons y (Nil))) d) d l1 h2)",
          when=_ZPAD_ADJ + ("(bsame (zpad x d l1 h1) (zpad y d l2 h2) n)",)),
    Lemma("zpad-add-adjacent-swapped", '(binary "add" (zpad y d l2 h2) (zpad x d l1 h1))',
          "(zpad (concat (Cons x (Cons y (Nil))) d) d l1 h2)",
          when=_ZPAD_ADJ + ("(bsame (zpad y d l2 h2) (zpad x d l1 h1) n)",)),
    # a pad along a dim other than a concat's axis pads every part alike (the gradient of a row
    # selected from a hidden-sharded tensor: each rank's gradient row padded to its block)
    Lemma("zpad-concat-other-dim", "(zpad (concat (Cons x r) d) k lo hi)",
          "(concat (map_zpad_each (Cons x r) k lo hi) d)",
          when=("(!= k d)",)),
    # a pad is linear: it commutes with a sum over ranks (the gradient of a strided slice of the
    # ranks' summed gradients: each rank's padded alike).  Only where the first part's pad is in
    # the e-graph (a rank computed it): pads of sums of pads of sums... grow without end otherwise
    Lemma("zpad-rsum", "(zpad (rsum (Cons x r)) d lo hi)", "(rsum (map_zpad_each (Cons x r) d lo hi))",
          trigger=("(zpad (rsum (Cons x r)) d lo hi)", "(zpad x d lo hi)")),
    Lemma("map-zpad-each-nil", "(map_zpad_each (Nil) d lo hi)", "(Nil)"),
    Lemma("map-zpad-each-cons", "(map_zpad_each (Cons x r) d lo hi)",
          "(Cons (zpad x d lo hi) (map_zpad_each r d lo hi))"),
    # a gradient accumulated from slices' gradients out of order (the backward of a concat of three
    # slices: rows 0, 3, then 1-2 added): an adjacent block added last joins the block beside it
    # first, so that zpad-add-adjacent combines them.  The added block is the right operand of the
    # inner add, or its left one
    *(Lemma(f"zpad-add-reassoc-{side}-{order}", f'(binary "add" {inner} (zpad x d l1 h1))',
            '(binary "add" a (binary "add" (zpad y d l2 h2) (zpad x d l1 h1)))',
            when=_REASSOC + cond)
      for side, inner in (("right", '(binary "add" a (zpad y d l2 h2))'), ("left", '(binary "add" (zpad y d l2 h2) a)'))
      for order, cond in (("before", _X_BEFORE_Y), ("after", _X_AFTER_Y))),
    Lemma("map-zpad-nil", "(map_zpad (Nil) d lo t)", "(Nil)"),
    Lemma("map-zpad-cons", "(map_zpad (Cons x r) d lo t)",
          "(Cons (zpad x d lo (- t (+ lo n))) (map_zpad r d (+ lo n) t))",
          when=("(= (dim x d) (DLit n))",)),
]

RULES = [
    # (stile x d a l): l is slices of x along d the e-graph holds, from a to x's end, in order --
    # chained from the last slice back, one part per rule firing
    Rule("slice-tiles", (
        "(rule ((= s (slice x d (DLit a) (DLit e))) (= (dim x d) (DLit e)) (< a e)) "
        "((stile x d a (Cons s (Nil)))) :ruleset shapes)\n"
        "(rule ((= s (slice x d (DLit a) (DLit b))) (stile x d b l) (< a b)) "
        "((stile x d a (Cons s l))) :ruleset shapes)")),
    # (concat2 x y d): the e-graph holds the concat of the two parts x, y along d
    Rule("concat2", "(rule ((= c (concat (Cons x (Cons y (Nil))) d))) ((concat2 x y d)) :ruleset shapes)"),
    Rule("shape-expand", (
        "(rule ((= y (expand x s)) (= n (dlen s))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= y (expand x s)) (= v (dat s i))) ((set (dim y i) v)) :ruleset shapes)")),
    # vpfx / vsfx grow one dim at a time from 0 while x and s agree there
    Rule("view-kept-dims", (
        "(rule ((= y (view x s))) ((vpfx x s 0) (vsfx x s 0)) :ruleset shapes)\n"
        "(rule ((= y (expand x s))) ((vpfx x s 0)) :ruleset shapes)\n"
        "(rule ((vpfx x s i) (= v (dim x i)) (= v (dat s i))) ((vpfx x s (+ i 1))) :ruleset shapes)\n"
        "(rule ((vsfx x s j) (= n (ndim x)) (= m (dlen s)) (< j n) (< j m) (= v (dim x (- (- n j) 1)))"
        " (= v (dat s (- (- m j) 1)))) ((vsfx x s (+ j 1))) :ruleset shapes)")),
    # the shape of the other operand of a binary op with an expand, compared with the expand's
    Rule("binary-expand-dims", (
        "(rule ((= z (binary op (expand x s) y))) ((vpfx y s 0)) :ruleset shapes)\n"
        "(rule ((= z (binary op y (expand x s)))) ((vpfx y s 0)) :ruleset shapes)")),
    Rule("ipos", (
        "(rule ((= l (ICons a r))) ((set (ipos l a) 0)) :ruleset shapes)\n"
        "(rule ((= l (ICons a r)) (= k (ipos r b)) (!= b a)) ((set (ipos l b) (+ k 1))) :ruleset shapes)")),
    # every dim of two zero-padded blocks added, compared (zpad-add-adjacent)
    Rule("ask-bsame-zpad-add", "(rule ((= z (binary \"add\" (zpad x d l1 h1) (zpad y d l2 h2)))) "
         "((bsame (zpad x d l1 h1) (zpad y d l2 h2) 0)) :ruleset shapes)"),
    Rule("shape-zpad", (
        "(rule ((= y (zpad x d lo hi)) (= n (ndim x))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= y (zpad x d lo hi)) (= v (dim x i)) (!= i d)) ((set (dim y i) v)) :ruleset shapes)\n"
        "(rule ((= y (zpad x d lo hi)) (= v (dim x d))) ((set (dim y d) (dadd (dadd v (DLit lo)) (DLit hi)))) "
        ":ruleset shapes)")),
    Rule("shape-permute", (
        "(rule ((= y (permute x p)) (= n (ndim x))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= y (permute x p)) (= i (ipos p k)) (= v (dim x k))) ((set (dim y i) v)) :ruleset shapes)")),
]
