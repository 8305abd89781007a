"""The instances of the elementwise lemmas (entangle_py/lemmas/elementwise.py), by lemma name; the checks of its
rules, by rule name."""
from entangle_py.semantics.terms import CASTS, FLOAT_DTYPES, WHERE_PATTERNS

from lemma_instances.common import Instances, cons, fixed
from lemma_instances.elementwise_cst import (
    add_zeros, add_zeros_bad, add_zeros_bcast, add_zeros_bcast_bad, add_zeros_bcast_terms, add_zeros_bsame_terms,
    add_zeros_terms, binary_concat_cst, binary_concat_cst_bad, cst_parts_cons, cst_parts_cons_bad, cst_parts_nil,
    div_add, div_add_bad, iscalar_strict, iscalar_strict_bad, iscalar_zeros, iscalar_zeros_big, mul_rows_mask,
    mul_rows_mask_bad, mul_rows_mask_terms, neg_rsum, not_and_bool, not_and_ints, not_compare, not_not_bool,
    not_not_other)
from lemma_instances.elementwise_ops import (
    add_comm, add_mul_neg, add_mul_neg_bool, add_rsum, add_zero, add_zero_int, bcast_absent, bcast_absent_r,
    bcast_full, bcast_full_r, bcast_one, bcast_one_r, binary_concat, binary_concat_rejected, cast_dtype_terms,
    cast_not, cast_not_bad, cast_other, cast_same, compare_dtype_terms, div_binary, div_binary_bad, div_int_cast,
    div_int_cast_bad, div_rsum, div_rsum_zero, iscalar_concat, iscalar_concat_arith, logical_not_dtype_terms,
    map_binary, map_binary_l_nil, map_iscalar, map_scalar, map_unary, mul_rsum, mul_rsum_inf, neg_neg, neg_sub,
    rsum_fold, rsum_fold_not_0d, rsum_pair, rsum_rsum, rsum_scalar, rsum_scalar_with, scalar_concat, sub_rsum_neg,
    unary_concat, zip_aligned_terms, zip_binary, zip_binary_mismatch, zip_ranks)
from lemma_instances.movement_zpad import with_zero_text
from lemma_instances.where import (
    bc_like_cons, bc_like_nil, bc_like_varying, where_concat, where_concat_misaligned, zip_where_cons,
    zip_where_misaligned, zip_where_nil)

INSTANCES = {
    "unary-concat": Instances(unary_concat),
    "map-unary-nil": Instances(fixed({"op": "exp"})),
    "map-unary-cons": Instances(map_unary),
    "scalar-concat": Instances(scalar_concat),
    "map-scalar-nil": Instances(fixed({"op": "mul", "c": "2"})),
    "map-scalar-cons": Instances(map_scalar),
    "iscalar-concat": Instances(cons(iscalar_concat), rejects=cons(iscalar_concat_arith)),
    "iscalar-sub-zeros": Instances(iscalar_zeros, rejects=iscalar_zeros_big),
    "iscalar-add-zeros": Instances(iscalar_zeros, rejects=iscalar_zeros_big),
    "iscalar-gt-ge": Instances(iscalar_strict, rejects=iscalar_strict_bad),
    "iscalar-le-lt": Instances(iscalar_strict, rejects=iscalar_strict_bad),
    **{f"not-iscalar-{a}": Instances(not_compare) for a in ("ge", "lt", "gt", "le", "eq", "ne")},
    "not-not-bool": Instances(not_not_bool, rejects=not_not_other),
    "not-and-or": Instances(not_and_bool, rejects=not_and_ints),
    "map-iscalar-nil": Instances(fixed({"op": "ne", "c": 0})),
    "map-iscalar-cons": Instances(map_iscalar),
    "binary-concat-concat": Instances(binary_concat, rejects=binary_concat_rejected),
    "zip-binary-nil": Instances(fixed({"op": "add", "d1": 0, "d2": 0})),
    "zip-binary-cons": Instances(zip_binary, rejects=zip_binary_mismatch),
    "binary-concat-bcast-absent": Instances(bcast_absent, rejects=bcast_full),
    "binary-concat-bcast-one": Instances(bcast_one, rejects=bcast_full),
    "binary-bcast-absent-concat": Instances(bcast_absent_r, rejects=bcast_full_r),
    "binary-bcast-one-concat": Instances(bcast_one_r, rejects=bcast_full_r),
    "binary-concat-cst": Instances(binary_concat_cst, rejects=binary_concat_cst_bad),
    "binary-cst-concat": Instances(binary_concat_cst, rejects=binary_concat_cst_bad),
    "cst-parts-nil": Instances(cst_parts_nil),
    "cst-parts-cons": Instances(cst_parts_cons, rejects=cst_parts_cons_bad),
    "map-binary-r-nil": Instances(map_binary_l_nil),
    "map-binary-r-cons": Instances(map_binary),
    "map-binary-l-nil": Instances(map_binary_l_nil),
    "map-binary-l-cons": Instances(map_binary),
    "scalar-mul-rsum": Instances(rsum_scalar, rejects=rsum_scalar_with("inf", "-inf", "nan")),
    "scalar-div-rsum": Instances(rsum_scalar, rejects=rsum_scalar_with("inf", "0.0", "-0.0")),
    "scalar-div-add": Instances(div_add, rejects=div_add_bad),
    "scalar-div-binary": Instances(div_binary, rejects=div_binary_bad),
    "rsum-pair-add": Instances(rsum_pair),
    "rsum-pair-add-swapped": Instances(rsum_pair),
    "rsum-fold-first": Instances(rsum_fold, rejects=rsum_fold_not_0d),
    "add-zero": Instances(add_zero, rejects=add_zero_int),
    "add-zeros-right": Instances(with_zero_text(add_zeros("right")),
                                 rejects=with_zero_text(add_zeros_bad("right"), add_zeros("right"))),
    "add-zeros-left": Instances(with_zero_text(add_zeros("left")),
                                rejects=with_zero_text(add_zeros_bad("left"), add_zeros("left"))),
    "add-zeros-bcast-right": Instances(with_zero_text(add_zeros_bcast),
                                       rejects=with_zero_text(add_zeros_bcast_bad, add_zeros_bcast)),
    "div-rsum-nonzero": Instances(div_rsum, rejects=div_rsum_zero),
    "mul-rsum-finite": Instances(mul_rsum, rejects=mul_rsum_inf),
    "mul-finite-rsum": Instances(mul_rsum, rejects=mul_rsum_inf),
    "add-rsum-rsum": Instances(rsum_rsum("add")),
    "sub-rsum-rsum": Instances(rsum_rsum("sub")),
    "zip-ranks-nil": Instances(fixed({"op": "add"})),
    "zip-ranks-cons": Instances(zip_ranks),
    "neg-sub": Instances(neg_sub),
    "add-mul-neg": Instances(add_mul_neg, rejects=add_mul_neg_bool),
    "sub-rsum-neg": Instances(sub_rsum_neg),
    "neg-rsum": Instances(neg_rsum),
    "neg-neg": Instances(neg_neg),
    "add-comm": Instances(add_comm),
    "add-rsum-accumulate": Instances(add_rsum(3)),
    "add-rsum-accumulate-pair": Instances(add_rsum(2)),
    "mul-rows-mask": Instances(mul_rows_mask, rejects=mul_rows_mask_bad),
    "mul-rows-mask-swapped": Instances(mul_rows_mask, rejects=mul_rows_mask_bad),
    "rsub-one-cast-not": Instances(cast_not, rejects=cast_not_bad),
    "cast-not-rsub-one": Instances(cast_not, rejects=cast_not_bad),
    **{f"cast-same-{t}": Instances(cast_same(t), rejects=cast_other(t)) for t in CASTS},
    **{f"div-int-cast-{f}": Instances(div_int_cast(f), rejects=div_int_cast_bad(f)) for f in FLOAT_DTYPES},
    # one lemma per where pattern p: named by its concat operands (the "L"s of p among c, a, b)
    **{"where-concat-" + "".join(o for o, kind in zip("cab", p) if kind == "L"):
       Instances(where_concat(p), rejects=where_concat_misaligned(p)) for p in WHERE_PATTERNS},
    # ... with a condition (so rejects) where two or more parts line up
    **{f"zip-where-cons-{p}": Instances(zip_where_cons(p),
                                        rejects=zip_where_misaligned(p) if p.count("L") > 1 else None)
       for p in WHERE_PATTERNS},
    "zip-where-nil": Instances(zip_where_nil),
    "bc-like-nil": Instances(bc_like_nil),
    "bc-like-absent": Instances(bc_like_cons("absent"), rejects=bc_like_varying),
    "bc-like-one": Instances(bc_like_cons("one"), rejects=bc_like_varying),
}

CHECKS = {
    "ask-vpfx-mul-rows": mul_rows_mask_terms,
    "dtype-cast": cast_dtype_terms,
    "zip-aligned": zip_aligned_terms,
    "dtype-logical-not": logical_not_dtype_terms,
    "dtype-compare": compare_dtype_terms,
    "ask-vsfx-add-cst": add_zeros_bcast_terms,
    "ask-bsame-add-cst": add_zeros_bsame_terms,
    "ask-vpfx-add-cst": add_zeros_terms,
}
