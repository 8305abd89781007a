"""The blind corpus: correct/buggy pairs of small distributed programs written from the README and
the frameworks' own designs only (no lemma, example or test of the checker was read).

Each pair ``NAME`` has ``NAME_correct.py`` and ``NAME_buggy.py`` (the same program with ONE line
changed, marked ``# BUG``), a spec per mode (``NAME.toml`` forward, ``NAME.joint.toml`` joint),
its world size, the modes it is checked in (a bug only the backward shows is checked joint only),
and its style.  ``int_ranges`` / ``positive`` tell the gloo harness how to draw inputs (token ids
inside their table; a width that must be positive), ``rtol`` / ``atol`` loosen its comparison for
a program that computes in float32 itself; the checker never reads them.

``ENTRIES`` is one dict per program: name, pair, script, spec (mode -> file), label, world_size,
modes, bug_line (the buggy twin's ``# BUG`` line, None for the correct one), style, parallelism,
bug (what the buggy twin gets wrong), and the harness's draw hints.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent

F, J = ("forward",), ("forward", "joint")
JOINT_ONLY = ("joint",)

# name, world size, modes, style, parallelism, the bug, harness hints
PAIRS = [
    # Megatron-LM: autograd.Function mappings (copy / reduce / gather / scatter), SP, vocab parallel
    dict(name="megatron_mlp", world_size=2, modes=J, style="Megatron", parallelism="TP",
         bug="row-parallel partial sums never all-reduced (the reduce region's all-reduce dropped)"),
    dict(name="megatron_column_gather", world_size=2, modes=JOINT_ONLY, style="Megatron", parallelism="TP",
         bug="copy-to region's backward does not all-reduce the input gradient (backward only)"),
    dict(name="megatron_attention", world_size=2, modes=J, style="Megatron", parallelism="TP (heads)",
         bug="head size computed from the global head count: each rank splits its q/k/v into twice as many, narrower heads"),
    dict(name="megatron_sp_mlp", world_size=2, modes=J, style="Megatron", parallelism="SP+TP",
         bug="fc2's partial sums split along the sequence instead of reduce-scattered"),
    dict(name="megatron_vocab_embedding", world_size=2, modes=J, style="Megatron", parallelism="vocab parallel",
         bug="vocab range end one short (inclusive/exclusive): each shard's last row never looked up",
         int_ranges={"input_ids": (0, 16)}),
    dict(name="megatron_vocab_ce", world_size=2, modes=J, style="Megatron", parallelism="vocab parallel (loss)",
         bug="logits max not all-reduced: ranks subtract different maxima", int_ranges={"labels": (0, 12)}),
    dict(name="megatron_lm_head", world_size=2, modes=F, style="Megatron", parallelism="TP (output layer)",
         bug="logits all-gathered along dim 0 instead of the vocabulary dim, then flattened",
         int_ranges={"labels": (0, 8)}),
    dict(name="megatron_clip_grad_norm", world_size=2, modes=F, style="Megatron", parallelism="TP (optimizer)",
         bug="replicated (duplicate) gradient counted in the norm on every rank"),
    # torchtitan / DTensor
    dict(name="titan_ffn_from_local", world_size=2, modes=J, style="torchtitan/DTensor", parallelism="TP",
         bug="local partial product wrapped as Replicate instead of Partial (no all-reduce)"),
    dict(name="titan_qk_norm", world_size=2, modes=F, style="torchtitan/DTensor", parallelism="TP",
         bug="QK-norm's mean square taken over the rank's slice of the width"),
    dict(name="titan_loss_parallel", world_size=2, modes=J, style="torchtitan/DTensor", parallelism="TP+loss parallel",
         bug="loss divided by the tokens times the TP size (TP degree mistaken for DP degree)",
         int_ranges={"labels": (0, 8)}),
    # Hugging Face modeling code
    dict(name="hf_gpt2_mlp", world_size=2, modes=J, style="Hugging Face (GPT-2 Conv1D)", parallelism="TP",
         bug="Conv1D's addmm adds the whole bias on every rank before the all-reduce"),
    dict(name="hf_rmsnorm_sp", world_size=2, modes=F, style="Hugging Face (Llama RMSNorm)", parallelism="SP",
         bug="all_gather_into_tensor result viewed as [b, W, s/W, h] without moving the rank dim (chunks interleaved)"),
    dict(name="hf_llama_attention", world_size=2, modes=J, style="Hugging Face (Llama: RoPE, GQA, mask)",
         parallelism="TP (heads)", bug="residual added before the all-reduce (counted W times)",
         int_ranges={"position_ids": (0, 16)}),
    dict(name="hf_gqa_replicated_kv", world_size=4, modes=J, style="Hugging Face/vLLM (GQA, replicated KV)",
         parallelism="TP (heads > kv heads)", bug="kv head chosen as rank % kv_heads instead of rank // (W / kv_heads)"),
    dict(name="hf_moe_experts", world_size=2, modes=J, style="Hugging Face (Mixtral MoE)", parallelism="EP",
         bug="local expert index used as the global one (missing rank offset)",
         rtol=1e-5, atol=1e-6),  # the router's softmax runs in float32 (dtype=torch.float), as in HF
    # DeepSpeed / FSDP written out, data parallel, optimizer code
    dict(name="ds_moe_top1", world_size=2, modes=J, style="DeepSpeed-MoE (top-1, one-hot scatter)", parallelism="EP",
         bug="experts' summed outputs divided by the world size (averaged)"),
    dict(name="zero3_mlp", world_size=2, modes=J, style="DeepSpeed ZeRO-3", parallelism="FSDP+DP",
         bug="loss divided by the local batch size instead of the global one"),
    dict(name="fsdp_rowshard", world_size=4, modes=JOINT_ONLY, style="FSDP (by hand)", parallelism="FSDP+DP",
         bug="gradient not divided by the world size before the reduce-scatter (backward only)"),
    dict(name="ds_grad_accum", world_size=2, modes=J, style="DeepSpeed (grad accumulation)", parallelism="DP",
         bug="accumulation steps computed without the data-parallel size"),
    dict(name="dp_logsumexp_loss", world_size=2, modes=J, style="training script (DP loss mean)", parallelism="DP",
         bug="all-reduced loss not divided by the world size", int_ranges={"labels": (0, 5)}),
    dict(name="fsdp_clip_grad_norm", world_size=2, modes=F, style="torch FSDP clip_grad_norm_", parallelism="FSDP (optimizer)",
         bug="squared norms all-reduced with MAX (the inf-norm's op) instead of SUM"),
    dict(name="zero1_adam", world_size=2, modes=F, style="DeepSpeed ZeRO-1 (Adam)", parallelism="ZeRO (optimizer)",
         bug="gradient partition offset = rank instead of rank * partition size", positive=("exp_avg_sq",)),
    # context parallel
    dict(name="cp_ring_attention", world_size=2, modes=F, style="ring attention (p2p)", parallelism="CP",
         bug="online-softmax merge does not rescale the running output"),
    dict(name="cp_allgather_causal", world_size=4, modes=F, style="Llama 3 CP (all-gather KV, SDPA)", parallelism="CP",
         bug="causal mask at local query positions (missing chunk offset)"),
    # CROWN-style bound propagation
    dict(name="crown_ibp_tp", world_size=2, modes=F, style="auto_LiRPA IBP", parallelism="TP",
         bug="the radius's partial products never all-reduced", positive=("eps",)),
    dict(name="crown_backward_tp", world_size=2, modes=F, style="CROWN backward bounds", parallelism="TP",
         bug="each rank concretises its partial bound matrix before the sum (clamp before the reduce)",
         positive=("x_width", "pre_width")),
    dict(name="crown_ibp_dp_gather", world_size=2, modes=F, style="IBP (verification tool)", parallelism="DP",
         bug="rank's rows written at offset rank instead of rank * rows (zero-buffer gather)", positive=("x_width",)),
    # other
    dict(name="neox_row_parallel", world_size=2, modes=J, style="GPT-NeoX / Megatron-DeepSpeed", parallelism="TP",
         bug="input scattered at offset rank instead of rank * partition (transposed weight layout)"),
    dict(name="vocab_parallel_zloss", world_size=2, modes=F, style="PaLM z-loss", parallelism="vocab parallel",
         bug="ranks' logsumexps all-reduced (summed) where a gather and logsumexp are needed"),
]


def _bug_line(path: Path) -> int | None:
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if "# BUG" in line:
            return i
    return None


def entries(pairs, here: Path) -> list[dict]:
    """One entry per program of ``pairs`` whose files live in ``here`` (also used by other blind
    corpora's manifests, e.g. tests/corpus/blind_reductions/manifest.py)."""
    out = []
    for p in pairs:
        spec = {"forward": f"{p['name']}.toml", "joint": f"{p['name']}.joint.toml"}
        spec = {m: spec[m] for m in p["modes"]}
        for label in ("correct", "buggy"):
            script = f"{p['name']}_{label}.py"
            out.append(dict(
                name=f"{p['name']}_{label}", pair=p["name"], script=script, spec=spec, label=label,
                world_size=p["world_size"], modes=tuple(p["modes"]),
                bug_line=_bug_line(here / script) if label == "buggy" and (here / script).exists() else None,
                style=p["style"], parallelism=p["parallelism"], bug=p["bug"],
                int_ranges=p.get("int_ranges", {}), positive=tuple(p.get("positive", ())),
                keep=tuple(p.get("keep", ())), dir=str(here),
                **{k: p[k] for k in ("rtol", "atol") if k in p}))
    return out


def load_entries(corpus: Path | str | None = None) -> list[dict]:
    """The entries of the corpus in directory ``corpus`` (its own ``manifest.py``; default: this
    one).  Each entry carries its directory (``dir``), where the harnesses find its files."""
    corpus = Path(corpus).resolve() if corpus else HERE
    if corpus == HERE:
        return ENTRIES
    spec = importlib.util.spec_from_file_location(f"manifest_{corpus.name}", corpus / "manifest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.ENTRIES


ENTRIES = entries(PAIRS, HERE)
