"""The instances of the collective lemmas (entangle_py/lemmas/collective.py), by lemma name; the checks of its
rules, by rule name."""
from lemma_instances.common import Instances
from lemma_instances.collective import (
    add_assoc_peer, add_assoc_peer_mixed, add_assoc_peer_rsum, add_assoc_peer_rsum_mixed, add_assoc_rsum,
    add_assoc_rsum_bad, add_rsum_part, add_rsum_part_bad, add_rsum_part_bsame_terms, add_rsum_shared,
    add_rsum_shared_bad, rsum_nested, rsum_peer_add, rsum_peer_add_bad, rsum_peer_extend, rsum_peer_extend_bad,
    rsum_zero_first, rsum_zero_second, single, slice_rsum_concat, slice_rsum_fold, slice_rsum_part, tlen_terms,
    view_unary_rsum, rank_mean, rank_mean_bad, rank_mean_scaled, rank_mean_scaled_bad, div_fold_one, div_fold,
    ask_rmean_terms)
from lemma_instances.movement_zpad import with_zero_text

INSTANCES = {
    "rsum-single": Instances(single),
    "rmax-single": Instances(single),
    "rsum-nested-last": Instances(rsum_nested),
    "rsum-zero-first": Instances(with_zero_text(rsum_zero_first), rejects=with_zero_text(None, rsum_zero_first)),
    "rsum-zero-second": Instances(with_zero_text(rsum_zero_second), rejects=with_zero_text(None, rsum_zero_second)),
    "rsum-peer-add": Instances(rsum_peer_add, rejects=rsum_peer_add_bad),
    "rsum-peer-extend": Instances(rsum_peer_extend, rejects=rsum_peer_extend_bad),
    "add-assoc-peer": Instances(add_assoc_peer, rejects=add_assoc_peer_mixed),
    "add-assoc-peer-rsum": Instances(add_assoc_peer_rsum, rejects=add_assoc_peer_rsum_mixed),
    "slice-rsum-concat": Instances(slice_rsum_concat),
    "view-unary-rsum": Instances(view_unary_rsum),
    "slice-rsum-fold": Instances(slice_rsum_fold),
    "slice-rsum-part": Instances(slice_rsum_part),
    "add-rsum-shared": Instances(add_rsum_shared, rejects=add_rsum_shared_bad),
    "add-rsum-part": Instances(add_rsum_part(0), rejects=add_rsum_part_bad(0)),
    "add-rsum-part-second": Instances(add_rsum_part(1), rejects=add_rsum_part_bad(1)),
    "add-assoc-rsum": Instances(add_assoc_rsum, rejects=add_assoc_rsum_bad),
    "rmean-div-rsum": Instances(rank_mean, rejects=rank_mean_bad),
    "rmean-rsum-div": Instances(rank_mean, rejects=rank_mean_bad),
    "rmean-rsum-div-scaled": Instances(rank_mean_scaled, rejects=rank_mean_scaled_bad),
    "map-scalar-div-fold-one": Instances(div_fold_one),
    "map-scalar-div-fold": Instances(div_fold),
}

CHECKS = {
    "ask-bsame-add-rsum-part": add_rsum_part_bsame_terms,
    "tlen": tlen_terms,
    "ask-rmean": ask_rmean_terms,
}
