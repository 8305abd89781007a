"""The blind pattern corpus: correct/buggy pairs of small distributed programs, each on one
pattern of issue 25 item 5 (vocab-parallel log-softmax / cross entropy with and without ignored
targets, the mean of the ranks' losses and its backward, zeros accumulators, MoE buffers,
transposed row-parallel products, GQA with replicated K/V, one-hot scatter, the masked
vocab-parallel embedding, interval bounds with clamp, logsumexp / pow / vector_norm), written
from the README, docs/spec.md, docs/capture.md and the frameworks' own code only.

Same layout as ``tests/corpus/blind``: ``ENTRIES`` built by its ``entries()``; buggy twins by
``derive_buggy.py``.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent

_spec = importlib.util.spec_from_file_location("blind_manifest_base", HERE.parent / "blind" / "manifest.py")
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)

F = ("forward",)
JOINT_ONLY = ("joint",)

PAIRS = [
    dict(name="megatron_vocab_logsoftmax", world_size=2, modes=F,
         style="Megatron output layer + vocab-parallel log-softmax", parallelism="vocab parallel",
         bug="the partition sums of exp all-reduced with MAX instead of SUM"),
    dict(name="megatron_vocab_ce_ignore", world_size=2, modes=F,
         style="Megatron _VocabParallelCrossEntropy under an HF shifted, -100-padded causal-LM loss",
         parallelism="vocab parallel (loss)", int_ranges={"labels": (0, 8)},
         bug="predicted logits zeroed only for ignored targets, not for targets another rank owns"),
    dict(name="titan_loss_parallel_lse", world_size=2, modes=F,
         style="torchtitan loss_parallel written on local shards (logsumexp of gathered logsumexps)",
         parallelism="vocab parallel (loss)", int_ranges={"labels": (0, 8)},
         bug="target logits all-reduced with MAX instead of SUM"),
    dict(name="megatron_dp_loss_avg", world_size=2, modes=F,
         style="Megatron average_losses_across_data_parallel_group (in-place dist.all_reduce, then divide)",
         parallelism="DP", int_ranges={"labels": (0, 8)},
         bug="rank's loss normalised by the global batch before the DP average"),
    dict(name="cp_loss_autograd", world_size=2, modes=JOINT_ONLY,
         style="Megatron-style autograd.Function all-reduce of a CP loss sum / global tokens",
         parallelism="CP", bug="the all-reduce's backward all-reduces the gradient too (backward only)"),
    dict(name="megatron_main_grad_accum", world_size=2, modes=F,
         style="Megatron DDP main_grad (zeros_like, += per micro-batch, scale 1/dp then all-reduce)",
         parallelism="DP", bug="gradient scaling factor divides by the micro-batch count again"),
    dict(name="hf_moe_ep_index_add", world_size=2, modes=F, rtol=1e-5, atol=1e-6,
         style="Hugging Face Mixtral sparse block, EP router remap (torch.where, index_add_ into zeros_like)",
         parallelism="EP", bug="buffer started from the residual instead of zeros on every rank"),
    dict(name="megatron_row_parallel_t", world_size=2, modes=F,
         style="Megatron ParallelMLP + dense projection (x @ w.t(), matmul(x, w.T), F.linear)",
         parallelism="TP", bug="the dense projection's partial sums never all-reduced"),
    dict(name="hf_gqa_replicated_kv_tp", world_size=2, modes=F,
         style="Hugging Face Llama GQA (repeat_kv expand, matmul), K/V replicated",
         parallelism="TP (query heads)", bug="query-head offset = rank instead of rank * local heads"),
    dict(name="vocab_parallel_label_smoothing", world_size=2, modes=F,
         style="label-smoothed CE on vocab-parallel logits, one-hot by scatter_",
         parallelism="vocab parallel (loss)", int_ranges={"target": (0, 8)},
         bug="one-hot rows masked only for ignored targets, not for targets another rank owns"),
    dict(name="megatron_vocab_embedding_masked", world_size=2, modes=F,
         style="Megatron VocabParallelEmbedding (masked_input[mask] = 0, output[mask, :] = 0.0)",
         parallelism="vocab parallel", int_ranges={"input_": (0, 8)},
         bug="range mask <= start: each range's first id masked too"),
    dict(name="crown_ibp_tp_mlp", world_size=2, modes=F,
         style="auto_LiRPA IBP (center/radius, clamp ReLU relaxation)", parallelism="TP",
         bug="copy-paste: the lower bound's partial sums all-reduced into the upper bound"),
    dict(name="titan_clip_grad_norm", world_size=2, modes=F,
         style="torchtitan clip_grad_norm_ (vector_norm of a stack, ** p, all-reduce, ** 1/p)",
         parallelism="FSDP (optimizer)", bug="sum of p-th powers divided by the world size"),
    dict(name="palm_zloss_lse", world_size=2, modes=F,
         style="PaLM z-loss (logsumexp of gathered logsumexps, pow)", parallelism="vocab parallel",
         bug="logsumexp of the gathered values over the tokens instead of the ranks"),
    dict(name="ds_moe_top2_dense", world_size=2, modes=F,
         style="DeepSpeed-MoE top-2 (combine weights by scatter_, zeros_like += per local expert, grouped weights)",
         parallelism="EP", bug="expert offset = rank instead of rank * local experts"),
    dict(name="fsdp_reduce_scatter_predivide", world_size=2, modes=F,
         style="FSDP FlatParameter gradient predivide / reduce-scatter / postdivide",
         parallelism="FSDP+DP", bug="post-divided by the world size after the pre-division"),
]

ENTRIES = _base.entries(PAIRS, HERE)
