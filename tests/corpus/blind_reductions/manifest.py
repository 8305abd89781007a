"""The blind reductions corpus: correct/buggy pairs of small distributed programs whose crux is a
reduction over ranks (norms, logsumexp, losses and their divisors, accumulators, amax, normalisation
statistics, softmax), written from the README, docs/spec.md, docs/capture.md and the frameworks'
own designs only (no lemma, semantics module or corpus program of the checker was read).

Same layout as tests/corpus/blind/manifest.py (see its docstring for the fields): ``NAME_correct.py``
and ``NAME_buggy.py`` (derived by ``derive_buggy.py``: ONE line replaced, marked ``# BUG``), a spec
per mode, the world size, the modes, the style, and the gloo harness's draw hints (``keep``: an
input whose values ``build`` fixes, e.g. targets holding the ignore index -100).

    python tests/corpus/blind/blind_gloo.py --corpus tests/corpus/blind_reductions
    python tests/corpus/blind/first_run.py --corpus tests/corpus/blind_reductions
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("blind_manifest", HERE.parent / "blind" / "manifest.py")
_blind = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_blind)

F = ("forward",)
JOINT_ONLY = ("joint",)  # the bug is in a backward: the forward is the specification's

PAIRS = [
    # gradient-norm clipping
    dict(name="megatron_grad_norm_l2", world_size=2, modes=F, style="Megatron clip_grad_norm_fp32",
         parallelism="TP (optimizer, duplicate LayerNorm grad)",
         bug="the ranks' L2 norms all-reduced instead of their squares"),
    dict(name="titan_grad_norm_inf", world_size=2, modes=F, style="torchtitan clip_grad_norm_ (inf norm)",
         parallelism="FSDP shards (optimizer)", bug="inf-norm all-reduced in place with SUM instead of MAX"),
    dict(name="fsdp_grad_norm_l2", world_size=4, modes=F, style="FSDP flat parameter (by hand)",
         parallelism="FSDP (optimizer)", bug="all-reduced sum of squares divided by the world size"),
    # logsumexp / cross-entropy over a vocab-sharded dim
    dict(name="megatron_zloss", world_size=2, modes=F, style="PaLM / Megatron z-loss", parallelism="vocab parallel",
         bug="logits max not all-reduced (each rank shifts by its own max)"),
    dict(name="megatron_vocab_ce_ignore", world_size=2, modes=F, style="Megatron _VocabParallelCrossEntropy",
         parallelism="vocab parallel (loss, ignore_index -100)",
         bug="out-of-range mask replaced by the ignore mask: other ranks' targets pick local logit 0",
         keep=("input:target",)),
    # loss means and token counts
    dict(name="dp_loss_mean", world_size=4, modes=F, style="training loop (DP loss logging)", parallelism="DP",
         bug="divided by the world size before and again after the all-reduce"),
    dict(name="cp_masked_loss_mean", world_size=2, modes=F, style="context-parallel masked loss", parallelism="CP",
         bug="rank's unmasked-token count times W used as the global count",
         keep=("input:loss_mask",)),
    dict(name="hf_num_items", world_size=2, modes=F, style="Hugging Face causal-LM loss (num_items_in_batch)",
         parallelism="DP", bug="rank's target count times W used as the global count (not all-reduced)", keep=("input:labels",)),
    dict(name="ds_grad_accum_zeros", world_size=2, modes=F, style="DeepSpeed gradient accumulation (written out)",
         parallelism="DP", bug="accumulator all-reduced at every micro-batch (earlier ones counted W^k times)"),
    # amax, normalisation statistics, softmax, variance
    dict(name="fp8_amax_scale", world_size=2, modes=F, style="Transformer Engine fp8 scaling", parallelism="SP",
         bug="amax all-reduced with SUM instead of MAX"),
    dict(name="megatron_layernorm_tp", world_size=2, modes=F, style="LayerNorm over a TP-split hidden dim",
         parallelism="TP (hidden)", bug="variance divided by the local width"),
    dict(name="hf_rmsnorm_tp", world_size=4, modes=F, style="Hugging Face LlamaRMSNorm, hidden split",
         parallelism="TP (hidden)", bug="the ranks' mean squares summed, not averaged"),
    dict(name="dist_softmax", world_size=2, modes=F, style="vocab-parallel sampler softmax", parallelism="vocab parallel",
         bug="softmax denominator all-reduced with MAX instead of SUM"),
    dict(name="sp_variance_std", world_size=2, modes=F, style="sequence-parallel activation statistics",
         parallelism="SP", bug="Bessel's correction with the rank's sequence length"),
    dict(name="tp_layernorm_autograd", world_size=2, modes=JOINT_ONLY, style="Megatron autograd.Function reduce",
         parallelism="TP (hidden)", bug="the statistics' all-reduce has an identity backward (backward only)"),
]

ENTRIES = _blind.entries(PAIRS, HERE)
