"""The adversarial soundness corpus: wrong distributed programs and their correct twins.

Each entry: ``Entry(name, script, spec, label, cls, mode, exits)``.  ``label`` is what the program
IS ("correct" / "wrong"), confirmed by running it for real on 2 gloo processes
(``run_gloo.py``); ``exits`` are the exit codes ``entangle check`` should give: ``(0,)`` for a
correct program, ``(1,)`` for a wrong one, ``(1, 2)`` where refusing the program (exit 2: an argument
the checker cannot express) is also an acceptable answer.

Classes:
  1 certificate names tensors the distributed program does not return (``*_noexpect_*``: the
    same programs under a spec without ``[expect]``, where only the certificate decides)
  2 negative dims
  3 lowering drops arguments (rounding_mode, dropout's training, alpha, gelu's approximate)
  4 lemmas wrong on broadcasting shapes
  5 collectives paired by member set, not communicator (and broadcast's src)
  6 spec entries and state: a [cut] tensor, an inner [outputs] check entry, a write to the state
    only one program makes (a spec entry adds facts, never removes an obligation)
  7 reductions over a sharded dim combined from the ranks' reductions (norms, orders, logsumexp)
  8 layer memoization: a stack of 8 blocks where one block is wrong (its all-reduce missing, its
    slice at the wrong offset), where one block's parameters are related differently, or where
    the blocks are isomorphic but the relation at their boundary differs
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Entry:
    name: str
    script: str          # absolute path of the capture script
    spec: str            # absolute path of its spec TOML
    label: str           # "correct" | "wrong"
    cls: int
    mode: str = "forward"
    exits: tuple = ()    # acceptable `entangle check` exit codes

    @property
    def world_size(self) -> int:
        return 2


def _e(name, cls, exits=None, mode="forward", script=None):
    """``script`` (default ``name``): the capture script's stem, when a program is checked under
    another spec (``*_noexpect_*``: the same program, spec without ``[expect]``)."""
    label = "wrong" if name.endswith("_wrong") else "correct"
    if exits is None:
        exits = (1,) if label == "wrong" else (0,)
    return Entry(name, str(HERE / f"{script or name}.py"), str(HERE / f"{name}.toml"), label, cls, mode,
                 tuple(exits))


def _noexpect(stem, label, cls):
    """``stem_label`` checked with no ``[expect]``: nothing but the relation the checker finds
    decides, so a certificate naming a tensor the program does not return must not pass."""
    return _e(f"{stem}_noexpect_{label}", cls, script=f"{stem}_{label}")


CORPUS = [
    # 1. certificate names tensors the distributed program does not return
    _e("c1_scaled_allreduce_wrong", 1),
    _e("c1_scaled_allreduce_correct", 1),
    _e("c1_sum_of_means_wrong", 1),
    _e("c1_sum_of_means_correct", 1),
    _e("c1_empty_wrong", 1),
    _e("c1_empty_correct", 1),
    _noexpect("c1_scaled_allreduce", "wrong", 1),
    _noexpect("c1_scaled_allreduce", "correct", 1),
    _noexpect("c1_sum_of_means", "wrong", 1),
    _noexpect("c1_sum_of_means", "correct", 1),
    _noexpect("c1_empty", "wrong", 1),
    _noexpect("c1_empty", "correct", 1),
    # 2. negative dims
    _e("c2_softmax_sharded_last_wrong", 2),
    _e("c2_softmax_unsharded_dim_correct", 2),
    _e("c2_softmax_leading_shard_correct", 2),
    _e("c2_sum_last_wrong", 2),
    _e("c2_sum_last_correct", 2),
    # 3. lowering drops arguments: refusing an argument the checker cannot express (exit 2) is
    #    acceptable for the wrong programs; the correct twins use the same argument on both sides
    #    and must refine
    _e("c3_floor_div_wrong", 3, (1, 2)),
    _e("c3_floor_div_correct", 3),
    _e("c3_dropout_wrong", 3, (1, 2)),
    _e("c3_dropout_eval_correct", 3),
    _e("c3_add_alpha_wrong", 3, (1, 2)),
    _e("c3_add_alpha_correct", 3),
    _e("c3_gelu_tanh_wrong", 3, (1, 2)),
    _e("c3_gelu_tanh_correct", 3),
    # 4. lemmas wrong on broadcasting shapes
    _e("c4_colpar_gather_dim0_wrong", 4),
    _e("c4_colpar_gather_dim0_view_wrong", 4),
    _e("c4_colpar_gather_feature_correct", 4),
    _e("c4_colpar_gather_transposed_correct", 4),
    _noexpect("c4_colpar_gather_dim0", "wrong", 4),
    _noexpect("c4_colpar_gather_dim0_view", "wrong", 4),
    _e("c4_bias_rows_sum_wrong", 4),
    _e("c4_bias_rows_sum_correct", 4),
    _e("c4_bias_cols_wrong", 4),
    _e("c4_bias_cols_correct", 4),
    _e("c4_rowpar_bias_before_wrong", 4),
    _e("c4_rowpar_bias_after_correct", 4),
    _e("c4_weight_rows_wrong", 4),
    _e("c4_weight_cols_correct", 4),
    # 5. collectives paired by communicator; broadcast's src is a group rank
    _e("c5_same_members_swapped_wrong", 5),
    _e("c5_same_members_same_order_correct", 5),
    _e("c5_same_members_issue_order_correct", 5),
    _e("c5_bcast_src_wrong", 5),
    _e("c5_bcast_src_correct", 5),
    _noexpect("c5_bcast_src", "wrong", 5),
    _noexpect("c5_bcast_src", "correct", 5),
    _e("c5_bcast_reordered_group_wrong", 5),
    _e("c5_bcast_reordered_group_correct", 5),
    # 6. spec entries add facts, never remove an obligation; every write is accounted for
    _e("c6_cut_scaled_wrong", 6),
    _e("c6_cut_scaled_correct", 6),
    _e("c6_check_inner_wrong", 6),
    _e("c6_check_inner_correct", 6),
    _e("c6_state_write_wrong", 6),
    _e("c6_state_seq_only_wrong", 6),
    _e("c6_state_write_correct", 6),
    # 7. a reduction over a sharded dim is the combining reduction of the ranks' reductions, not
    #    any other: a norm is not the sum of norms, an order is not another, an inf-norm combines
    #    by max, a logsumexp by logsumexp; a replicated tensor's norm in a stack of norms counts
    #    once (one rank stacks it), not once per rank
    _e("c7_norm_sum_of_norms_wrong", 7),
    _e("c7_norm_sum_of_norms_correct", 7),
    _e("c7_norm_order_wrong", 7),
    _e("c7_norm_order_correct", 7),
    _e("c7_inf_norm_sum_wrong", 7),
    _e("c7_inf_norm_max_correct", 7),
    _e("c7_lse_sum_wrong", 7),
    _e("c7_lse_gather_correct", 7),
    _e("c7_norm_stack_duplicate_wrong", 7),
    _e("c7_norm_stack_duplicate_correct", 7),
    # 8. layer memoization: one block of eight wrong, a block's parameters related differently,
    #    and isomorphic blocks whose boundary relation differs (docs/memoization.md)
    _e("c8_stack_correct", 8),
    _e("c8_stack_noreduce_wrong", 8),
    _e("c8_stack_sliced_correct", 8),
    _e("c8_stack_tanh_correct", 8),
    _e("c8_stack_sliced_offset_wrong", 8),
    _e("c8_stack_param_wrong", 8, script="c8_stack_correct"),
    _e("c8_stack_boundary_wrong", 8),
    # 9. checking by stages (tests/test_stages_adversary.py attacks [stages] with them): state a
    #    replicated weight's in-place update writes, one rank with the wrong factor
    _e("c9_stages_state_correct", 9),
    _e("c9_stages_state_wrong", 9),
]

BY_NAME = {e.name: e for e in CORPUS}
