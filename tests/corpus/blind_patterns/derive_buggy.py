"""Write each pair's buggy twin from its correct program: ONE line replaced, marked ``# BUG``.

    python tests/corpus/blind_patterns/derive_buggy.py
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "blind"))
import twins as _twins  # noqa: E402  (tests/corpus/blind/twins.py)

# pair -> (the correct program's line, stripped; the buggy line, without indentation)
BUGS = {
    "megatron_vocab_logsoftmax": (
        'sum_exp_logits = funcol.all_reduce(sum_exp_logits, "sum", dist.group.WORLD)',
        'sum_exp_logits = funcol.all_reduce(sum_exp_logits, "max", dist.group.WORLD)  # BUG: the partition sums reduced with MAX (copied from the max all-reduce above)'),
    "megatron_vocab_ce_ignore": (
        "predicted_logits[target_mask] = 0.0",
        "predicted_logits[target == IGNORE_INDEX] = 0.0  # BUG: only ignored targets zeroed, not the ones another rank owns"),
    "titan_loss_parallel_lse": (
        'target_logit = funcol.all_reduce(target_logit, "sum", dist.group.WORLD)',
        'target_logit = funcol.all_reduce(target_logit, "max", dist.group.WORLD)  # BUG: the target logits reduced with MAX (the non-owners hold 0)'),
    "megatron_dp_loss_avg": (
        "lm_loss = F.cross_entropy(logits, labels)",
        'lm_loss = F.cross_entropy(logits, labels, reduction="sum") / BATCH  # BUG: normalised by the global batch, then averaged over the ranks again'),
    "cp_loss_autograd": (
        "return grad_output",
        'return funcol.all_reduce(grad_output, "sum", dist.group.WORLD)  # BUG: the backward all-reduces too (the copy-to region\'s backward)'),
    "megatron_main_grad_accum": (
        "gradient_scaling_factor = 1.0 / self.world_size",
        "gradient_scaling_factor = 1.0 / (self.world_size * NUM_MICROBATCHES)  # BUG: micro-batches counted again (each micro-batch loss is already scaled)"),
    "hf_moe_ep_index_add": (
        "final_hidden_states = torch.zeros_like(hidden_states)",
        "final_hidden_states = hidden_states.clone()  # BUG: residual folded into the buffer on every expert-parallel rank"),
    "megatron_row_parallel_t": (
        "attn_out = reduce_from_tensor_model_parallel_region(attn_parallel, self.world_size)",
        "attn_out = attn_parallel  # BUG: the dense projection's partial sums never all-reduced"),
    "hf_gqa_replicated_kv_tp": (
        "first_head = self.rank * self.num_heads",
        "first_head = self.rank  # BUG: head offset = rank instead of rank * local heads"),
    "vocab_parallel_label_smoothing": (
        "one_hot = one_hot.masked_fill(target_mask.unsqueeze(-1), 0.0)",
        "one_hot = one_hot.masked_fill((target < 0).unsqueeze(-1), 0.0)  # BUG: masks only ignored targets, not the ones another rank owns"),
    "megatron_vocab_embedding_masked": (
        "input_mask = (input_ < self.vocab_start_index) | (input_ >= self.vocab_end_index)",
        "input_mask = (input_ <= self.vocab_start_index) | (input_ >= self.vocab_end_index)  # BUG: the first id of each range masked too"),
    "crown_ibp_tp_mlp": (
        'upper = funcol.all_reduce(upper, "sum", dist.group.WORLD)',
        'upper = funcol.all_reduce(lower, "sum", dist.group.WORLD)  # BUG: copy-paste, the lower bound reduced into upper'),
    "titan_clip_grad_norm": (
        "total_norm = total_norm ** (1.0 / NORM_TYPE)",
        "total_norm = (total_norm / self.world_size) ** (1.0 / NORM_TYPE)  # BUG: averaged as if the gradients were replicated (DP), not sharded"),
    "palm_zloss_lse": (
        "log_z = torch.logsumexp(gathered, dim=0)",
        "log_z = torch.logsumexp(gathered, dim=-1)  # BUG: reduced over the tokens instead of the ranks"),
    "ds_moe_top2_dense": (
        "global_expert_id = self.ep_rank * self.num_local_experts + local_expert_id",
        "global_expert_id = self.ep_rank + local_expert_id  # BUG: expert offset = rank instead of rank * local experts"),
    "fsdp_reduce_scatter_predivide": (
        "postdivide = self.world_size / predivide",
        "postdivide = self.world_size  # BUG: post-divided by the whole world size after the pre-division"),
}


def derive(name: str) -> Path:
    return _twins.write_twin(HERE, name, *BUGS[name])


if __name__ == "__main__":
    for pair in BUGS:
        derive(pair)
