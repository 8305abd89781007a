"""Write each pair's buggy twin from its correct program: ONE line replaced, marked ``# BUG``.

    python tests/corpus/blind_reductions/derive_buggy.py [NAME ...]

``BUGS`` maps a pair to (the correct program's line, stripped; its replacement, same indent).
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "blind"))
import twins as _twins  # noqa: E402  (tests/corpus/blind/twins.py)

BUGS = {
    "megatron_grad_norm_l2": ("total = local_norm ** 2",
                              "total = local_norm  # BUG: the ranks' norms are summed, not their squares"),
    "titan_grad_norm_inf": ("dist.all_reduce(total_norm, op=dist.ReduceOp.MAX)",
                            "dist.all_reduce(total_norm, op=dist.ReduceOp.SUM)  # BUG: the inf-norm reduced with SUM"),
    "fsdp_grad_norm_l2": ('local_sq = funcol.all_reduce(local_sq, "sum", dist.group.WORLD)',
                          'local_sq = funcol.all_reduce(local_sq, "sum", dist.group.WORLD) / self.world_size'
                          '  # BUG: averaged like a gradient'),
    "megatron_zloss": ('logits_max = funcol.all_reduce(logits_max, "max", dist.group.WORLD)',
                       "logits_max = logits_max.detach()  # BUG: the local max is never all-reduced"),
    "megatron_vocab_ce_ignore": ('predicted = predicted.masked_fill(target_mask, 0.0)',
        "predicted = predicted.masked_fill(target == IGNORE_INDEX, 0.0)  # BUG: only ignored targets zeroed, not other ranks' targets"),
    "dp_loss_mean": ('loss = funcol.all_reduce(loss, "sum", dist.group.WORLD)',
                     'loss = funcol.all_reduce(loss, "sum", dist.group.WORLD) / self.world_size'
                     '  # BUG: divided by the world size again after the all-reduce'),
    "cp_masked_loss_mean": ('count = funcol.all_reduce(local_count, "sum", dist.group.WORLD)',
        "count = local_count * self.world_size  # BUG: the local count stands for every rank's"),
    "ds_grad_accum_zeros": ('if self.world_size > 1 and reduce_now:',
        'if self.world_size > 1:  # BUG: the accumulator is all-reduced at every micro-batch'),
    "fp8_amax_scale": ('amax = funcol.all_reduce(amax, "max", dist.group.WORLD)',
                       'amax = funcol.all_reduce(amax, "sum", dist.group.WORLD)  # BUG: amax reduced with SUM'),
    "megatron_layernorm_tp": ("var = sq_sum / HIDDEN",
                              "var = sq_sum / (HIDDEN // self.world_size)  # BUG: divided by the local width"),
    "hf_rmsnorm_tp": ('variance = funcol.all_reduce(variance, "sum", dist.group.WORLD) / self.world_size',
                      'variance = funcol.all_reduce(variance, "sum", dist.group.WORLD)  # BUG: the ranks\' means summed, not averaged'),
    "dist_softmax": ('denom = funcol.all_reduce(denom, "sum", dist.group.WORLD)',
                     'denom = funcol.all_reduce(denom, "max", dist.group.WORLD)  # BUG: MAX where the sum is needed'),
    "sp_variance_std": ("var = sq_dev / (SEQ - 1)",
                        "var = sq_dev / (self.local_seq - 1)  # BUG: Bessel's correction with the rank's sequence length"),
    "hf_num_items": ('num_items_in_batch = funcol.all_reduce(num_items_in_batch, "sum", dist.group.WORLD)',
        'num_items_in_batch = num_items_in_batch * self.world_size  # BUG: assumes every rank holds as many targets'),
    "tp_layernorm_autograd": ('return funcol.all_reduce(grad, "sum", dist.group.WORLD)',
        "return grad  # BUG: identity backward (Megatron's reduce-from-region), right only when every rank reads the sum alike"),
}


def derive(name: str) -> Path:
    return _twins.write_twin(HERE, name, *BUGS[name])


if __name__ == "__main__":
    for n in sys.argv[1:] or BUGS:
        print(derive(n))
