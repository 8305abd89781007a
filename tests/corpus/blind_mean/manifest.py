"""The blind mean corpus: correct/buggy pairs of small distributed programs on one class,
averaging over ranks (the mean of the ranks' values, as real frameworks write it: in-place
all-reduce then divide, ``funcol.all_reduce(x, "AVG", mesh)``, ``ReduceOp.AVG``, pre-division,
accelerate's gather-then-mean, gradient accumulation, token means over sequence shards, a mean
over a column-parallel width, a global token count), written from README.md, docs/spec.md,
docs/capture.md, docs/concepts.md and the frameworks' own code only.

Same layout as ``tests/corpus/blind``: ``ENTRIES`` built by its ``entries()``; buggy twins by
``derive_buggy.py`` (every bug sits where only the distributed program (W > 1) differs from the
sequential one, so the sequential specification is the correct program's).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent

_spec = importlib.util.spec_from_file_location("blind_manifest_base", HERE.parent / "blind" / "manifest.py")
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)

F = ("forward",)
J = ("forward", "joint")

PAIRS = [
    dict(name="megatron_avg_losses", world_size=2, modes=F,
         style="Megatron average_losses_across_data_parallel_group (cat of detached losses, in-place all_reduce, / group.size())",
         parallelism="DP", int_ranges={"labels": (0, 8)},
         bug="all-reduced with ReduceOp.AVG, then divided by the group size again"),
    dict(name="titan_dist_mean", world_size=2, modes=F, rtol=1e-5, atol=1e-6,  # titan's .float() loss
         style="torchtitan dist_mean (funcol.all_reduce(x, ReduceOp.AVG.name, mesh), wait_tensor)",
         parallelism="DP", int_ranges={"tokens": (0, 8), "labels": (0, 8)},
         bug="reduced with ReduceOp.MAX.name (dist_max's op) instead of AVG"),
    dict(name="titan_global_token_loss", world_size=2, modes=J,
         style="torchtitan token-normalised loss (sum CE / dist_sum of valid tokens), each rank's share",
         parallelism="DP", int_ranges={"labels": (0, 8)},
         bug="global token count averaged over the ranks (dist_mean) where it must be summed"),
    dict(name="accelerate_gather_mean", world_size=4, modes=F,
         style="Hugging Face no_trainer eval with accelerate gather(loss.repeat(bs)) then torch.mean",
         parallelism="DP (eval)",
         bug="one-letter typo: torch.mean of the rank's own loss instead of the gathered losses"),
    dict(name="megatron_cp_masked_loss", world_size=2, modes=F, rtol=1e-5, atol=1e-6,  # Megatron's .float()
         style="Megatron pretrain_gpt loss_func under CP (cat[masked sum, token count], one all_reduce, quotient)",
         parallelism="CP", int_ranges={"labels": (0, 8)},
         bug="each rank normalises by its own token count, one count per rank: a mean of uneven means"),
    dict(name="deepspeed_gas_loss", world_size=2, modes=F,
         style="DeepSpeed engine (loss / GAS per micro-batch, accumulated, pre-divide by dp size, all_reduce SUM)",
         parallelism="DP + grad accumulation",
         bug="the pre-division by the DP world size dropped (all_reduce taken to average)"),
    dict(name="normformer_tp_ffn_ln", world_size=2, modes=F,
         style="NormFormer FFN LayerNorm over a column-parallel width (funcol sum / full width)",
         parallelism="TP",
         bug="the all-reduced sum divided by the partition width instead of the full FFN width"),
    dict(name="hf_moe_balance_loss", world_size=2, modes=F,
         style="Hugging Face Mixtral load_balancing_loss_func, tokens split over ranks (dist.all_reduce AVG)",
         parallelism="DP/SP (router)",
         bug="tokens-per-expert fractions summed over the ranks (ReduceOp.SUM) instead of averaged"),
]

ENTRIES = _base.entries(PAIRS, HERE)
