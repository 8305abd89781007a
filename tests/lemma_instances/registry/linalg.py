"""The instances of the linalg lemmas (entangle_py/lemmas/linalg.py), by lemma name; the checks of its
rules, by rule name."""
from lemma_instances.common import Instances, fixed
from lemma_instances.linalg import (
    bmm_concat_batch, bmm_inner, bmm_matmul, bmm_rows, bmm_terms, bmm_view, bmm_view_batch_terms, bmm_view_swapped,
    col, div_mm, div_mm_bad, inner, map_bmm_l, map_bmm_l_nil, map_mm_l, map_mm_l_nil, map_mm_r, map_mm_r_nil,
    matmul_concat, matmul_concat_rows, matmul_terms, mm_batch_one, mm_batch_one_bad, row, rsum_left, rsum_right,
    zip_bmm, zip_bmm_mismatch, zip_matmul, zip_matmul_mismatch, zip_mm, zip_mm_mismatch)

INSTANCES = {
    "mm-concat-right": Instances(col),
    "mm-concat-left": Instances(row),
    "mm-concat-inner": Instances(inner),
    "mm-rsum-left": Instances(rsum_left),
    "mm-rsum-right": Instances(rsum_right),
    "scalar-div-mm": Instances(div_mm, rejects=div_mm_bad),
    "map-mm-r-nil": Instances(map_mm_r_nil),
    "map-mm-r-cons": Instances(map_mm_r),
    "map-mm-l-nil": Instances(map_mm_l_nil),
    "map-mm-l-cons": Instances(map_mm_l),
    "bmm-concat-rows": Instances(bmm_rows),
    "map-bmm-l-nil": Instances(map_bmm_l_nil),
    "map-bmm-l-cons": Instances(map_bmm_l),
    "bmm-concat-inner": Instances(bmm_inner),
    "zip-bmm-nil": Instances(fixed({})),
    "zip-bmm-cons": Instances(zip_bmm, rejects=zip_bmm_mismatch),
    "zip-mm-nil": Instances(fixed({})),
    "zip-mm-cons": Instances(zip_mm, rejects=zip_mm_mismatch),
    "bmm-view-matmul": Instances(bmm_view, rejects=bmm_view_swapped),
    "view-mm-batch-one": Instances(mm_batch_one, rejects=mm_batch_one_bad),
    "matmul-concat-batch": Instances(matmul_concat, rejects=matmul_concat_rows),
    "bmm-concat-batch": Instances(bmm_concat_batch),
    "bmm-matmul": Instances(bmm_matmul),
    "zip-matmul-nil": Instances(fixed({"d": 0})),
    "zip-matmul-cons": Instances(zip_matmul, rejects=zip_matmul_mismatch),
}

CHECKS = {
    "shape-matmul": matmul_terms,
    "shape-bmm": bmm_terms,
    "bmm-view-batch": bmm_view_batch_terms,
}
