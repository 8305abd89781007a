"""Write each pair's buggy twin from its correct program: the one line that differs, marked # BUG.

    python tests/corpus/blind/derive_buggy.py [NAME ...]

BUGS maps a pair to (text found on exactly one line of the correct program; the buggy line,
indented like it).  Keeping the twin derived keeps it one line away from the correct program.
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import twins as _twins  # noqa: E402  (tests/corpus/blind/twins.py)

BUGS = {
    "megatron_mlp": ("dist.all_reduce(out)", "# dist.all_reduce(out)"),
    "megatron_column_gather": ("dist.all_reduce(grad_output)", "# dist.all_reduce(grad_output)"),
    "megatron_attention": (
        "self.hidden_size_per_attention_head = self.hidden_size_per_partition // self.num_attention_heads_per_partition",
        "self.hidden_size_per_attention_head = self.hidden_size_per_partition // self.num_attention_heads"),
    "megatron_sp_mlp": ("return _reduce_scatter_along_first_dim(input_)", "return _split_along_first_dim(input_)"),
    "megatron_vocab_embedding": ("index_l = index_f + per_partition_vocab_size",
                                 "index_l = index_f + per_partition_vocab_size - 1"),
    "megatron_vocab_ce": ("_all_reduce(logits_max, world_size, op=torch.distributed.ReduceOp.MAX)",
                          "# _all_reduce(logits_max, world_size, op=torch.distributed.ReduceOp.MAX)"),
    "megatron_lm_head": ("output = torch.cat(tensor_list, dim=-1).contiguous()",
                         "output = torch.cat(tensor_list, dim=0).contiguous()"),
    "megatron_clip_grad_norm": ("is_not_tp_duplicate = self.rank == 0", "is_not_tp_duplicate = True"),
    "titan_ffn_from_local": ("out = DTensor.from_local(out_local, self.mesh, [Partial()], run_check=False)",
                             "out = DTensor.from_local(out_local, self.mesh, [Replicate()], run_check=False)"),
    "titan_qk_norm": ("variance = sq / self.full_dim", "variance = x.pow(2).mean(-1, keepdim=True)"),
    "titan_loss_parallel": ("num_tokens = labels.numel() * self.dp_degree",
                            "num_tokens = labels.numel() * self.world_size"),
    "hf_gpt2_mlp": ("bias = self.bias / self.world_size", "bias = self.bias"),
    "hf_rmsnorm_sp": ("full = gathered.view(self.world_size, b, s_local, h).transpose(0, 1)",
                      "full = gathered.view(b, self.world_size, s_local, h)"),
    "hf_llama_attention": ("hidden_states = self.reduce(attn_output) + residual",
                           "hidden_states = self.reduce(attn_output + residual)"),
    "hf_gqa_replicated_kv": ("kv_head = self.rank // (self.world_size // KV_HEADS)", "kv_head = self.rank % KV_HEADS"),
    "hf_moe_experts": ("expert_idx = self.rank * self.num_local_experts + local_idx", "expert_idx = local_idx"),
    "ds_moe_top1": ("out = _AllReduceForward.apply(out)", "out = _AllReduceForward.apply(out) / self.world_size"),
    "zero3_mlp": ("global_batch = x.shape[0] * self.world_size", "global_batch = x.shape[0]"),
    "fsdp_rowshard": ("grad_full = grad_full / world_size", "# grad_full = grad_full / world_size"),
    "ds_grad_accum": ("self.gradient_accumulation_steps = GLOBAL_BATCH // (MICRO_BATCH * self.dp_world_size)",
                      "self.gradient_accumulation_steps = GLOBAL_BATCH // MICRO_BATCH"),
    "dp_logsumexp_loss": ("loss = loss / self.world_size", "# loss = loss / self.world_size"),
    "fsdp_clip_grad_norm": ("dist.all_reduce(total_norm)", "dist.all_reduce(total_norm, op=dist.ReduceOp.MAX)"),
    "zero1_adam": ("g_part = grad.narrow(0, self.rank * n, n)", "g_part = grad.narrow(0, self.rank, n)"),
    "cp_ring_attention": (
        "out = out * torch.exp(lse - new_lse).unsqueeze(-1) + block_out * torch.exp(block_lse - new_lse).unsqueeze(-1)",
        "out = out + block_out * torch.exp(block_lse - new_lse).unsqueeze(-1)"),
    "cp_allgather_causal": ("q_pos = self.rank * s_local + torch.arange(s_local)", "q_pos = torch.arange(s_local)"),
    "crown_ibp_tp": ("dist.all_reduce(deviation)", "# dist.all_reduce(deviation)"),
    "crown_backward_tp": ("return concretize(self.reduce(A_in), x_lower, x_upper) + bias",
                          "return self.reduce(concretize(A_in, x_lower, x_upper)) + bias"),
    "crown_ibp_dp_gather": ("bounds[self.rank * n:(self.rank + 1) * n] = local", "bounds[self.rank:self.rank + n] = local"),
    "neox_row_parallel": ("return input_[..., rank * per_partition:(rank + 1) * per_partition].contiguous()",
                          "return input_[..., rank:rank + per_partition].contiguous()"),
    "vocab_parallel_zloss": (
        "parts = funcol.all_gather_tensor(lse.unsqueeze(0), gather_dim=0, group=dist.group.WORLD)",
        "parts = funcol.all_reduce(lse.unsqueeze(0), \"sum\", group=dist.group.WORLD)"),
}


def derive(name: str) -> Path:
    return _twins.write_twin(HERE, name, *BUGS[name], contains=True, mark='  # BUG')


if __name__ == "__main__":
    for n in sys.argv[1:] or sorted(BUGS):
        print(derive(n))
