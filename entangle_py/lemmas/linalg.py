"""Matrix products versus concat on either side and sums over ranks (row/column parallel), and
batched matmul: bmm over [b*h, m, k] tensors that are views of [b, h, m, k] ones is a batched matmul
over the 4-D (or any n-D) forms; heads split across ranks are a concat along a batch dim of those."""
from entangle_py.engine.lemma import Lemma, Rule

LEMMAS = [
    # column parallel: x @ [W0 W1 ...] = [x@W0  x@W1 ...]
    Lemma("mm-concat-right", "(mm x (concat l 1))", "(concat (map_mm_r x l) 1)"),
    # [X0; X1; ...] @ w = [X0@w; X1@w; ...]
    Lemma("mm-concat-left", "(mm (concat l 0) w)", "(concat (map_mm_l l w) 0)"),
    # row parallel: [X0 X1 ...] @ [W0; W1; ...] = sum_r X_r @ W_r  (parts must line up)
    Lemma("mm-concat-inner", "(mm (concat l1 1) (concat l2 0))", "(rsum (zip_mm l1 l2))"),
    Lemma("mm-rsum-left", "(mm (rsum l) w)", "(rsum (map_mm_l l w))"),
    Lemma("mm-rsum-right", "(mm x (rsum l))", "(rsum (map_mm_r x l))"),
    # a scaled product is a product with its left operand scaled (the 1 / n of a mean's gradient
    # moved into a weight gradient), where both have one floating dtype (int operands: no product
    # of a float and an int matrix)
    Lemma("scalar-div-mm", '(scalar "div" (mm a b) c)', '(mm (scalar "div" a c) b)',
          when=("(= t (dtype a))", "(= t (dtype b))", "(fdtype t)", '(!= c "inf")', '(!= c "-inf")', '(!= c "nan")',
                '(!= c "0.0")', '(!= c "-0.0")')),
    Lemma("map-mm-r-nil", "(map_mm_r x (Nil))", "(Nil)"),
    Lemma("map-mm-r-cons", "(map_mm_r x (Cons w r))", "(Cons (mm x w) (map_mm_r x r))"),
    Lemma("map-mm-l-nil", "(map_mm_l (Nil) w)", "(Nil)"),
    Lemma("map-mm-l-cons", "(map_mm_l (Cons x r) w)", "(Cons (mm x w) (map_mm_l r w))"),
    # rows of a batched product: bmm([X0, X1, ...] along dim 1, w) = [X0 w, X1 w, ...] along dim 1
    # (context parallelism: each rank's queries against the gathered keys)
    Lemma("bmm-concat-rows", "(bmm (concat l 1) w)", "(concat (map_bmm_l l w) 1)"),
    Lemma("map-bmm-l-nil", "(map_bmm_l (Nil) w)", "(Nil)"),
    Lemma("map-bmm-l-cons", "(map_bmm_l (Cons x r) w)", "(Cons (bmm x w) (map_bmm_l r w))"),
    # a batched product whose contraction dim is split (A's last dim against B's middle one) is the
    # sum of the parts' products, the parts lining up (a context-parallel K/V gradient: P^T dO with
    # each rank's queries, before its reduce-scatter)
    Lemma("bmm-concat-inner", "(bmm (concat l1 2) (concat l2 1))", "(rsum (zip_bmm l1 l2))"),
    Lemma("zip-bmm-nil", "(zip_bmm (Nil) (Nil))", "(Nil)"),
    Lemma("zip-bmm-cons", "(zip_bmm (Cons a r1) (Cons b r2))", "(Cons (bmm a b) (zip_bmm r1 r2))",
          when=("(= (dim a 2) (dim b 1))",)),
    Lemma("zip-mm-nil", "(zip_mm (Nil) (Nil))", "(Nil)"),
    Lemma("zip-mm-cons", "(zip_mm (Cons a r1) (Cons b r2))", "(Cons (mm a b) (zip_mm r1 r2))",
          when=("(= (dim a 1) (dim b 0))",)),
    # batched matmul: a bmm of views that only merge the batch dims, when the batch dims line up
    Lemma("bmm-view-matmul", "(bmm (view x s1) (view y s2))",
          "(view (matmul x y) (DCons b (DCons i (DCons j (DNil)))))",
          when=("(= n (ndim x))", "(= n (ndim y))", "(vsfx x s1 2)", "(vsfx y s2 2)", "(bsame x y (- n 2))",
                "(= b (dat s1 0))", "(= i (dat s1 1))", "(= j (dat s2 2))")),
    # a batched product of a batch of one is the product of the 2-D views, viewed back (an
    # expert-parallel bmm with one expert a rank, written as x.view(t, h) @ w.view(h, f)): only the
    # view back to [1, i, j] (a view to [1, j, i] has the same size)
    Lemma("view-mm-batch-one", "(view (mm (view x s1) (view y s2)) s3)", "(matmul x y)",
          when=("(= n (ndim x))", "(= n (ndim y))", "(= n (+ 2 1))", "(= 2 (dlen s1))", "(= 2 (dlen s2))",
                "(= n (dlen s3))", "(= (dim x 0) (DLit 1))", "(= (dim y 0) (DLit 1))", "(vsfx x s1 2)",
                "(vsfx y s2 2)", "(= (dat s3 0) (DLit 1))", "(= (dat s3 1) (dim x 1))", "(= (dat s3 2) (dim y 2))")),
    Lemma("matmul-concat-batch", "(matmul (concat l1 d) (concat l2 d))", "(concat (zip_matmul l1 l2 d) d)",
          when=("(= n (ndim (concat l1 d)))", "(= n (ndim (concat l2 d)))", "(< d (- n 2))")),
    # a bmm of operands both concatenated along the batch dim is their batched matmul (bmm is
    # matmul on 3-D operands with one batch): matmul-concat-batch then splits it by the parts
    # (query heads with their KV heads sharded together)
    Lemma("bmm-concat-batch", "(bmm (concat l1 0) (concat l2 0))", "(matmul (concat l1 0) (concat l2 0))"),
    # ... and a bmm is the matmul of the same operands where both are in the e-graph (the ranks'
    # own bmm against the parts' matmuls)
    Lemma("bmm-matmul", "(bmm a b)", "(matmul a b)", trigger=("(bmm a b)", "(matmul a b)")),
    Lemma("zip-matmul-nil", "(zip_matmul (Nil) (Nil) d)", "(Nil)"),
    Lemma("zip-matmul-cons", "(zip_matmul (Cons a r1) (Cons b r2) d)", "(Cons (matmul a b) (zip_matmul r1 r2 d))",
          when=("(= (dim a d) (dim b d))",)),
]

RULES = [
    Rule("shape-matmul", (
        "(rule ((= y (matmul a b)) (= n (ndim a))) ((set (ndim y) n)) :ruleset shapes)\n"
        # batch dims only where both operands agree (no broadcasting is assumed)
        "(rule ((= y (matmul a b)) (= n (ndim a)) (= v (dim a i)) (= v (dim b i)) (< i (- n 2))) ((set (dim y i) v)) :ruleset shapes)\n"
        "(rule ((= y (matmul a b)) (= n (ndim a)) (= v (dim a (- n 2)))) ((set (dim y (- n 2)) v)) :ruleset shapes)\n"
        "(rule ((= y (matmul a b)) (= n (ndim b)) (= v (dim b (- n 1)))) ((set (dim y (- n 1)) v)) :ruleset shapes)")),
    Rule("shape-bmm", (
        "(rule ((= y (bmm a b))) ((set (ndim y) 3)) :ruleset shapes)\n"
        "(rule ((= y (bmm a b)) (= v (dim a i)) (< i 2)) ((set (dim y i) v)) :ruleset shapes)\n"
        "(rule ((= y (bmm a b)) (= v (dim b 2))) ((set (dim y 2) v)) :ruleset shapes)")),
    # batch dims of the operands of a bmm over views, compared one by one
    Rule("bmm-view-batch", (
        "(rule ((= z (bmm (view x s1) (view y s2)))) ((bsame x y 0)) :ruleset shapes)\n"
        "(rule ((bsame x y i) (= v (dim x i)) (= v (dim y i))) ((bsame x y (+ i 1))) :ruleset shapes)")),
]
