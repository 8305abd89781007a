"""Write each pair's buggy twin from its correct program: ONE line replaced, marked ``# BUG``.

    python tests/corpus/blind_mean/derive_buggy.py
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "blind"))
import twins as _twins  # noqa: E402  (tests/corpus/blind/twins.py)

# pair -> (the correct program's line, stripped; the buggy line, without indentation)
BUGS = {
    "megatron_avg_losses": (
        "torch.distributed.all_reduce(averaged_losses, group=group)",
        "torch.distributed.all_reduce(averaged_losses, op=torch.distributed.ReduceOp.AVG, group=group)  # BUG: AVG already divides; the line below divides again"),
    "titan_dist_mean": (
        "return _dist_reduce_tensor(x, reduceOp=c10d.ReduceOp.AVG.name, mesh=mesh)",
        "return _dist_reduce_tensor(x, reduceOp=c10d.ReduceOp.MAX.name, mesh=mesh)  # BUG: copied from dist_max"),
    "titan_global_token_loss": (
        "global_valid_tokens = dist_sum(local_valid_tokens, self.mesh)",
        "global_valid_tokens = dist_mean(local_valid_tokens, self.mesh)  # BUG: the token count averaged over the ranks, not summed"),
    "accelerate_gather_mean": (
        "eval_loss = torch.mean(losses)",
        "eval_loss = torch.mean(loss)  # BUG: the rank's own loss, not the gathered losses"),
    "megatron_cp_masked_loss": (
        "loss = torch.cat([local_sum.view(1), total_tokens.view(1)])",
        "loss = torch.cat([(local_sum / total_tokens).view(1), torch.ones_like(total_tokens).view(1)])  # BUG: per-rank means averaged as if the ranks' token counts were equal"),
    "deepspeed_gas_loss": (
        "agg_loss = agg_loss / self.dp_world_size",
        "agg_loss = agg_loss.clone()  # BUG: no pre-division: the SUM all-reduce adds the ranks' losses"),
    "normformer_tp_ffn_ln": (
        "mean = self._sum_over_width(h) / self.ffn_hidden_size",
        "mean = self._sum_over_width(h) / self.ffn_hidden_size_per_partition  # BUG: the full-width sum divided by the partition width"),
    "hf_moe_balance_loss": (
        "dist.all_reduce(tokens_per_expert, op=dist.ReduceOp.AVG)",
        "dist.all_reduce(tokens_per_expert, op=dist.ReduceOp.SUM)  # BUG: the fractions summed over the ranks, not averaged"),
}


def derive(name: str) -> Path:
    return _twins.write_twin(HERE, name, *BUGS[name])


if __name__ == "__main__":
    for pair in BUGS:
        derive(pair)
