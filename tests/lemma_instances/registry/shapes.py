"""The instances of the shapes lemmas (entangle_py/lemmas/shapes.py), by lemma name; the checks of its
rules, by rule name."""
from lemma_instances.shapes import (
    binary_0d_terms, binary_bcast_terms, binary_terms, concat_terms, dlen_terms, dtype_float_arith_terms,
    dtype_terms, elementwise_terms, ilist_query_terms, layernorm_terms, mm_terms, reduce_terms, rlse_terms,
    rmax_terms, rmean_terms, rsum_terms, scalar_terms, slice_terms, softmax_terms, transpose_terms, view_and_dat_terms,
    where_bcast_terms, where_terms)

INSTANCES = {}

CHECKS = {
    "shape-unary": elementwise_terms,
    "shape-scalar": scalar_terms,
    "shape-softmax": softmax_terms,
    "shape-rsum": rsum_terms,
    "shape-rmax": rmax_terms,
    "shape-rlse": rlse_terms,
    "shape-rmean": rmean_terms,
    "shape-layernorm": layernorm_terms,
    "shape-binary-same": binary_terms,
    "shape-binary-bcast": binary_bcast_terms,
    "shape-binary-0d": binary_0d_terms,
    "shape-where-same": where_terms,
    "shape-where-bcast": where_bcast_terms,
    "shape-concat": concat_terms,
    "shape-slice": slice_terms,
    "shape-mm": mm_terms,
    "shape-transpose": transpose_terms,
    "dlen": dlen_terms,
    "shape-view": view_and_dat_terms,
    "ilist-queries": ilist_query_terms,
    "shape-reduce": reduce_terms,
    "dtype-movement": dtype_terms,
    "dtype-float-arith": dtype_float_arith_terms,
}
