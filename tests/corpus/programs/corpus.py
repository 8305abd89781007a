"""The program corpus: small distributed programs users write, correct/buggy twins, every label
confirmed on real gloo ranks (``run_gloo.py``).

``Entry(name, script, spec, label, mode, world_size, bug)``: ``label`` "correct" / "buggy";
``mode`` "forward" / "joint"; ``bug`` (buggy entries) = (family module, text of the ``# BUG``
line), resolved to ``file:line`` by :func:`bug_line`.  ``entangle check`` SHOULD give exit 0 for a
correct program and exit 1 for a buggy one.  Specs are per family (``<family>.toml`` forward,
``<family>_joint.toml`` joint); a family's programs are builders its ``_<family>.py`` names
(``<name> = make_build(...)``), and an entry's ``script`` is the capture target
``.../_<family>.py:<name>`` (``entangle capture`` takes it as it is).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Entry:
    name: str
    script: str
    spec: str
    label: str
    mode: str = "forward"
    world_size: int = 2
    bug: tuple | None = None     # (module file, text on the # BUG line)

    @property
    def file(self) -> str:
        """The program's file (``script`` is ``file:builder``)."""
        return self.script.rsplit(":", 1)[0]

    @property
    def builder(self) -> str:
        """The name of the program's build function in its file."""
        return self.script.rsplit(":", 1)[1]

    @property
    def id(self) -> str:
        """``name[mode]``; ``name[mode@N]`` at N ranks other than 2 (a program may run at several)."""
        return f"{self.name}[{self.mode}]" if self.world_size == 2 else f"{self.name}[{self.mode}@{self.world_size}]"


def bug_line(entry, folder: Path = HERE) -> str | None:
    """``file:line`` of the entry's ``# BUG`` line (its module in ``folder``)."""
    if entry.bug is None:
        return None
    module, text = entry.bug
    for i, line in enumerate((folder / module).read_text().splitlines(), 1):
        if "# BUG" in line and text in line:
            return f"{module}:{i}"
    raise LookupError(f"{entry.name}: no '# BUG' line containing {text!r} in {module}")


def builders(folder: Path) -> dict[str, str]:
    """{program name: its capture target ``folder/_<family>.py:<name>``}: the builders the family
    modules in ``folder`` name (``<name> = make_build(...)`` lines)."""
    out: dict[str, str] = {}
    for f in sorted(folder.glob("_*.py")):
        for name in re.findall(r"^(\w+) = make_build\(", f.read_text(), re.M):
            if name in out:
                raise LookupError(f"program {name} is named by {out[name]} and {f}")
            out[name] = f"{f}:{name}"
    return out


TARGETS = builders(HERE)


def _e(script, family, mode="forward", bug=None, ws=2):
    spec = f"{family}_joint.toml" if mode == "joint" else f"{family}.toml"
    return Entry(script, TARGETS[script], str(HERE / spec), "buggy" if bug else "correct", mode, ws, bug)


CORPUS = [
    # TP column/row linear (nn.Linear), 2-D and 3-D inputs
    _e("tp_mlp2d_correct", "tp_mlp"),
    _e("tp_mlp2d_correct", "tp_mlp", "joint"),
    _e("tp_mlp2d_missing_allreduce", "tp_mlp", bug=("_tp_mlp.py", "never all-reduced")),
    _e("tp_mlp2d_missing_allreduce", "tp_mlp", "joint", bug=("_tp_mlp.py", "never all-reduced")),
    _e("tp_mlp2d_funcol_all_reduce", "tp_mlp", "joint", bug=("_tp_mlp.py", "all-reduces the gradient again")),
    _e("tp_mlp3d_correct", "tp_mlp"),
    _e("tp_mlp3d_correct", "tp_mlp", "joint"),
    _e("tp_mlp3d_bias_before_reduce", "tp_mlp", bug=("_tp_mlp.py", "then summed")),
    _e("tp_mlp3d_bias_before_reduce", "tp_mlp", "joint", bug=("_tp_mlp.py", "then summed")),
    # SP: layer norm, RMSNorm + SP MLP, dropout
    _e("sp_layernorm_correct", "sp_layernorm"),
    _e("sp_layernorm_correct", "sp_layernorm", "joint"),
    _e("sp_layernorm_grad_not_reduced", "sp_layernorm", "joint", bug=("_sp_norm.py", "LN weight gradient")),
    _e("sp_rmsnorm_mlp_correct", "sp_rmsnorm_mlp"),
    _e("sp_rmsnorm_mlp_correct", "sp_rmsnorm_mlp", "joint"),
    _e("sp_rmsnorm_mlp_slice_not_reduce_scatter", "sp_rmsnorm_mlp", bug=("_sp_norm.py", "never summed")),
    _e("sp_dropout_correct", "sp_dropout"),
    _e("sp_dropout_wrong_p", "sp_dropout", bug=("_sp_dropout.py", "attention dropout rate")),
    # vocab parallel embedding and cross-entropy
    _e("vocab_embedding_correct", "vocab_embedding"),
    _e("vocab_embedding_correct", "vocab_embedding", "joint"),
    _e("vocab_embedding_wrong_offset", "vocab_embedding", bug=("_vocab.py", "last id")),
    _e("vocab_cross_entropy_correct", "vocab_cross_entropy"),
    _e("vocab_cross_entropy_local_sumexp", "vocab_cross_entropy", bug=("_vocab.py", "sum of exponentials")),
    _e("vocab_cross_entropy_correct", "vocab_cross_entropy", "joint"),
    _e("vocab_cross_entropy_local_sumexp", "vocab_cross_entropy", "joint", bug=("_vocab.py", "sum of exponentials")),
    # attention: GQA / MQA with a causal mask; RoPE under CP; CP attention
    _e("gqa_causal_correct", "gqa_causal"),
    _e("gqa_causal_repeat", "gqa_causal", bug=("_attn.py", "j % kvh")),
    _e("mqa_causal_correct", "mqa_causal"),
    _e("mqa_causal_correct", "mqa_causal", "joint"),
    _e("mqa_causal_kv_grad_not_reduced", "mqa_causal", "joint", bug=("_attn.py", "KV projection")),
    # ... on 4 ranks: one query head per rank, the KV head "expanded" over it to its own shape
    _e("mqa_head_per_rank_correct", "mqa_causal", ws=4),
    _e("mqa_head_per_rank_correct", "mqa_causal", "joint", ws=4),
    _e("mqa_head_per_rank_kv_grad_not_reduced", "mqa_causal", "joint", bug=("_attn.py", "KV projection"), ws=4),
    _e("rope_cp_correct", "rope_cp"),
    _e("rope_cp_local_positions", "rope_cp", bug=("_rope.py", "restart at 0")),
    _e("cp_attention_correct", "cp_attention"),
    _e("cp_attention_local_mask", "cp_attention", bug=("_cp_attn.py", "local query positions")),
    # attention masked with torch.where (heads split across ranks)
    _e("where_attn_correct", "where"),
    _e("where_attn_correct", "where", "joint"),
    _e("where_attn_shifted", "where", bug=("_where.py", "also sees the next key")),
    _e("where_attn_shifted", "where", "joint", bug=("_where.py", "also sees the next key")),
    # SwiGLU unfused (sliced replicated weights) and fused (interleaved layout)
    _e("swiglu_unfused_correct", "swiglu_unfused"),
    _e("swiglu_unfused_correct", "swiglu_unfused", "joint"),
    _e("swiglu_unfused_swapped_shard", "swiglu_unfused", bug=("_swiglu.py", "other rank's rows")),
    _e("swiglu_fused_correct", "swiglu_fused"),
    _e("swiglu_fused_swapped_halves", "swiglu_fused", bug=("_swiglu.py", "[up; gate] read from")),
    _e("swiglu_fused_rank1_swapped", "swiglu_fused", bug=("_swiglu.py", "rank 1 alone")),
    _e("swiglu_fused_correct", "swiglu_fused", "joint"),
    _e("swiglu_fused_swapped_halves", "swiglu_fused", "joint", bug=("_swiglu.py", "[up; gate] read from")),
    _e("swiglu_fused_rank1_swapped", "swiglu_fused", "joint", bug=("_swiglu.py", "rank 1 alone")),
    # the CPU attention kernels with a hand-written backward, heads sharded
    _e("attn_bwd_correct", "attn_bwd"),
    _e("attn_bwd_correct", "attn_bwd", "joint"),
    _e("attn_bwd_not_causal", "attn_bwd", "joint", bug=("_attn_bwd.py", "without the mask")),
    _e("attn_bwd_zero_out", "attn_bwd", "joint", bug=("_attn_bwd.py", "zeros for the output")),
    # a fused QKV projection viewed into head groups across the sharded dim (2 and 4 ranks)
    *(e for ws in (2, 4) for e in (
        _e("fused_qkv_correct", "fused_qkv", ws=ws),
        _e("fused_qkv_correct", "fused_qkv", "joint", ws=ws),
        _e("fused_qkv_outer", "fused_qkv", bug=("_fused_qkv.py", "[3, G, h] rows sharded"), ws=ws),
        _e("fused_qkv_outer", "fused_qkv", "joint", bug=("_fused_qkv.py", "[3, G, h] rows sharded"), ws=ws))),
    # (at 4 ranks a rank holds one group: [3, 1, h] and [1, 3, h] read alike, so inner is right there)
    _e("fused_qkv_inner", "fused_qkv", bug=("_fused_qkv.py", "q, k, v outermost")),
    _e("fused_qkv_inner", "fused_qkv", "joint", bug=("_fused_qkv.py", "q, k, v outermost")),
    # Megatron's layout: viewed [.., G_r, 3 * h] and split along the last dim; the weight's gradient
    # is the concat of q's, k's and v's gradients (each a concat over ranks) viewed [s * b, G * 3 * h]
    *(e for ws in (2, 4) for e in (
        _e("fused_qkv_split_correct", "fused_qkv", ws=ws),
        _e("fused_qkv_split_correct", "fused_qkv", "joint", ws=ws),
        _e("fused_qkv_split_swapped", "fused_qkv", "joint", bug=("_fused_qkv.py", "key and value gradients swapped"), ws=ws),
        _e("fused_qkv_split_unreduced", "fused_qkv", "joint", bug=("_fused_qkv.py", "never all-reduced"), ws=ws))),
    _e("swiglu_fused_t_correct", "swiglu_fused_t"),
    _e("swiglu_fused_t_swapped_halves", "swiglu_fused_t", bug=("_swiglu.py", "Conv1D weight")),
    _e("swiglu_fused_t_correct", "swiglu_fused_t", "joint"),
    _e("swiglu_fused_t_swapped_halves", "swiglu_fused_t", "joint", bug=("_swiglu.py", "Conv1D weight")),
    # vLLM custom kernels (torch.ops._C), given their meaning by entangle's plugin
    _e("vllm_mlp_correct", "vllm_mlp"),
    _e("vllm_mlp_swapped_halves", "vllm_mlp", bug=("_vllm.py", "[up; gate]")),
    # uneven shards (pad, gather, cut)
    _e("uneven_gather_correct", "uneven_gather"),
    _e("uneven_gather_local_size", "uneven_gather", bug=("_uneven.py", "local size")),
    _e("uneven_gather_correct", "uneven_gather", "joint"),
    # DP: loss averaging, gradient averaging; gradient accumulation; FSDP
    _e("dp_avg_correct", "dp"),
    _e("dp_avg_correct", "dp", "joint"),
    _e("dp_loss_sum", "dp", bug=("_dp.py", "not divided by W")),
    _e("dp_grad_sum", "dp", "joint", bug=("_dp.py", "summed, not averaged")),
    _e("grad_accum_correct", "grad_accum"),
    _e("grad_accum_correct", "grad_accum", "joint"),
    _e("grad_accum_per_microbatch_mean", "grad_accum", bug=("_grad_accum.py", "per micro-batch")),
    _e("fsdp_correct", "fsdp"),
    _e("fsdp_correct", "fsdp", "joint"),
    _e("fsdp_no_reduce_scatter", "fsdp", "joint", bug=("_fsdp.py", "never reduced")),
    # EP, PP, 2-D mesh
    _e("moe_ep_correct", "moe_ep"),
    _e("moe_ep_wrong_block", "moe_ep", bug=("_moe.py", "wrong expert")),
    _e("moe_ep_correct", "moe_ep", "joint"),
    _e("moe_ep_wrong_block", "moe_ep", "joint", bug=("_moe.py", "wrong expert")),
    _e("pp_two_stage_correct", "pp_two_stage"),
    _e("pp_two_stage_wrong_peer", "pp_two_stage", bug=("_pp.py", "comes from rank 1")),
    _e("pp_two_stage_correct", "pp_two_stage", "joint"),
    _e("pp_two_stage_wrong_peer", "pp_two_stage", "joint", bug=("_pp.py", "comes from rank 1")),
    _e("pp_p2p_correct", "pp_p2p"),
    _e("pp_p2p_reordered", "pp_p2p", bug=("_pp.py", "micro-batch 1 before")),
    _e("pp_p2p_correct", "pp_p2p", "joint"),
    _e("pp_p2p_reordered", "pp_p2p", "joint", bug=("_pp.py", "micro-batch 1 before")),
    _e("pp_skip_correct", "pp_skip", ws=3),
    _e("pp_skip_swapped_peers", "pp_skip", ws=3, bug=("_pp.py", "h2 taken from rank 0")),
    _e("pp_skip_correct", "pp_skip", "joint", ws=3),
    _e("pp_skip_swapped_peers", "pp_skip", "joint", ws=3, bug=("_pp.py", "h2 taken from rank 0")),
    # DTensor / parallelize_module: input relations from the placements
    _e("dtensor_mlp_correct", "dtensor_mlp"),
    _e("dtensor_mlp_correct", "dtensor_mlp", "joint"),
    _e("dtensor_mlp_partial_output", "dtensor_mlp", bug=("_dtensor.py", "never all-reduced")),
    _e("dtensor_mlp_partial_output", "dtensor_mlp", "joint", bug=("_dtensor.py", "never all-reduced")),
    _e("dtensor_sp_correct", "dtensor_sp"),
    _e("mesh_dp_tp_correct", "mesh_dp_tp", ws=4),
    _e("mesh_dp_tp_wrong_group", "mesh_dp_tp", ws=4, bug=("_mesh.py", "wrong mesh dimension")),
    _e("mesh_dp_tp_correct", "mesh_dp_tp", "joint", ws=4),
    _e("mesh_dp_tp_wrong_group", "mesh_dp_tp", "joint", ws=4, bug=("_mesh.py", "wrong mesh dimension")),
    # adversarial (helper-adv): point-to-point pairing by tag, stale send buffer, read before receive
    _e("adv_pp_tags_correct", "adv_pp_tags"),
    _e("adv_pp_tags_tag_order", "adv_pp_tags", bug=("_adv_pp.py", "tag-2 receive taken as a")),
    _e("adv_pp_stale_correct", "adv_pp"),
    _e("adv_pp_stale_before_relu", "adv_pp", bug=("_adv_pp.py", "sent before the in-place relu")),
    _e("adv_pp_read_before_correct", "adv_pp"),
    _e("adv_pp_read_before_clone_before", "adv_pp", bug=("_adv_pp.py", "read before the receive")),
    _e("adv_pp_subgroup_correct", "adv_pp3", ws=3),
    _e("adv_pp_subgroup_swapped_comm", "adv_pp3", ws=3, bug=("_adv_pp.py", "WORLD receive taken as b")),
    Entry("adv_pp_wrong_rank_ok", TARGETS["adv_pp_wrong_rank_ok"], str(HERE / "adv_pp_wrong_rank_ok.toml"), "correct"),
    Entry("adv_pp_wrong_rank", TARGETS["adv_pp_wrong_rank"], str(HERE / "adv_pp_wrong_rank.toml"), "buggy",
          bug=("adv_pp_wrong_rank.toml", "fc2 named as rank 0")),
    # adversarial (helper-adv): slice relations leaving rows unrelated (padding), negative bounds
    _e("adv_slice_head_correct", "adv_slice_head"),
    _e("adv_slice_head_pad", "adv_slice_head", bug=("_adv_slice.py", "rows read from the wrong place")),
    _e("adv_slice_head_off_by_one", "adv_slice_head", bug=("_adv_slice.py", "rows read from the wrong place")),
    _e("adv_slice_head_rank1_pad", "adv_slice_head", bug=("_adv_slice.py", "rows read from the wrong place")),
    _e("adv_slice_head_correct", "adv_slice_head", "joint"),
    _e("adv_slice_head_pad", "adv_slice_head", "joint", bug=("_adv_slice.py", "rows read from the wrong place")),
    _e("adv_slice_head_off_by_one", "adv_slice_head", "joint", bug=("_adv_slice.py", "rows read from the wrong place")),
    _e("adv_slice_head_rank1_pad", "adv_slice_head", "joint", bug=("_adv_slice.py", "rows read from the wrong place")),
    _e("adv_slice_tail_correct", "adv_slice_tail"),
    _e("adv_slice_tail_head_read", "adv_slice_tail", bug=("_adv_slice.py", "real rows are last")),
    _e("adv_slice_tail_correct", "adv_slice_tail", "joint"),
    _e("adv_slice_tail_head_read", "adv_slice_tail", "joint", bug=("_adv_slice.py", "real rows are last")),
    # adversarial (helper-adv): vLLM kernels with another epsilon, a stale residual, NeoX vs GPT-J
    # rotary, and a kernel writing a view (must be refused)
    _e("adv_vllm_norm_correct", "adv_vllm_norm"),
    _e("adv_vllm_norm_eps", "adv_vllm_norm", bug=("_adv_vllm.py", "another epsilon")),
    _e("adv_vllm_norm_residual", "adv_vllm_norm", bug=("_adv_vllm.py", "pre-add residual")),
    _e("adv_vllm_rope_correct", "adv_vllm_rope"),
    _e("adv_vllm_rope_gptj", "adv_vllm_rope", bug=("_adv_vllm.py", "GPT-J rotation")),
    _e("adv_vllm_rope_positions", "adv_vllm_rope", bug=("_adv_vllm.py", "off by one")),
    _e("adv_vllm_view_correct", "adv_vllm_view"),
    _e("adv_vllm_view_rows", "adv_vllm_view", bug=("_adv_vllm.py", "wrong rows")),
    # adversarial (helper-adv2): positions, strided slices, writes into a slice of a buffer, top-k,
    # flip, cross-entropy, constant_pad_nd, repeat, layer norm, embedding backward, reduce-scatter
    # by slicing, a float16 all-reduce (_adv2.py)
    _e("adv2_pos_correct", "adv2_pos"),
    _e("adv2_pos_start", "adv2_pos"),
    _e("adv2_pos_off1", "adv2_pos", bug=("_adv2.py", "position offset")),
    _e("adv2_pos_strided", "adv2_pos", bug=("_adv2.py", "position offset")),
    _e("adv2_strided_correct", "adv2_strided"),
    _e("adv2_strided_two_step", "adv2_strided"),
    _e("adv2_strided_phase", "adv2_strided", bug=("_adv2.py", "the columns this rank reads")),
    _e("adv2_strided_window", "adv2_strided", bug=("_adv2.py", "the columns this rank reads")),
    _e("adv2_kernel_correct", "adv2_kernel"),
    _e("adv2_kernel_swap", "adv2_kernel", bug=("_adv2.py", "the slice of the buffer this rank writes")),
    _e("adv2_kernel_overlap", "adv2_kernel", bug=("_adv2.py", "the slice of the buffer this rank writes")),
    _e("adv2_sscat_correct", "adv2_sscat"),
    _e("adv2_sscat_swap", "adv2_sscat", bug=("_adv2.py", "the slice of the buffer this rank writes")),
    _e("adv2_sscat_overlap", "adv2_sscat", bug=("_adv2.py", "the slice of the buffer this rank writes")),
    _e("adv2_sscat_correct", "adv2_sscat", "joint"),
    _e("adv2_sscat_swap", "adv2_sscat", "joint", bug=("_adv2.py", "the slice of the buffer this rank writes")),
    _e("adv2_sscat_overlap", "adv2_sscat", "joint", bug=("_adv2.py", "the slice of the buffer this rank writes")),
    _e("adv2_topk_correct", "adv2_topk"),
    _e("adv2_topk_dim0", "adv2_topk", bug=("_adv2.py", "top-k along another dim")),
    _e("adv2_topk_smallest", "adv2_topk", bug=("_adv2.py", "or the smallest")),
    _e("adv2_flip_correct", "adv2_flip"),
    _e("adv2_flip_no_swap", "adv2_flip", bug=("_adv2.py", "block order")),
    _e("adv2_flip_dim", "adv2_flip", bug=("_adv2.py", "the flipped dim")),
    _e("adv2_flip_correct", "adv2_flip", ws=4),
    _e("adv2_flip_no_swap", "adv2_flip", ws=4, bug=("_adv2.py", "block order")),
    _e("adv2_flip_dim", "adv2_flip", ws=4, bug=("_adv2.py", "the flipped dim")),
    _e("adv2_xent_correct", "adv2_xent"),
    _e("adv2_xent_ignore_m1", "adv2_xent"),
    _e("adv2_xent_ignore0", "adv2_xent", bug=("_adv2.py", "the ignored class")),
    _e("adv2_xent_local_n", "adv2_xent", bug=("_adv2.py", "local batch")),
    _e("adv2_vpick_correct", "adv2_vpick"),
    _e("adv2_vpick_unmasked", "adv2_vpick", bug=("_adv2.py", "not zeroed")),
    _e("adv2_pad_correct", "adv2_pad"),
    _e("adv2_pad_local", "adv2_pad", bug=("_adv2.py", "the shift, its rows")),
    _e("adv2_pad_width2", "adv2_pad", bug=("_adv2.py", "the shift, its rows")),
    _e("adv2_pad_value", "adv2_pad", bug=("_adv2.py", "or fill")),
    _e("adv2_repeat_correct", "adv2_repeat"),
    _e("adv2_repeat_tile", "adv2_repeat", bug=("_adv2.py", "tiled, not interleaved")),
    _e("adv2_ln_correct", "adv2_ln"),
    _e("adv2_lng_correct", "adv2_lng", "joint"),
    _e("adv2_ln_eps", "adv2_ln", bug=("_adv2.py", "another eps")),
    _e("adv2_ln_dims", "adv2_ln", bug=("_adv2.py", "eps, dims")),
    _e("adv2_lng_bias_grad", "adv2_lng", "joint", bug=("_adv2.py", "eps, dims or a gradient")),
    _e("adv2_ln_hidden_correct", "adv2_ln_hidden"),
    _e("adv2_ln_hidden_local", "adv2_ln_hidden", bug=("_adv2.py", "hidden shard normalised alone")),
    _e("adv2_ln_hidden_correct", "adv2_ln_hidden", "joint"),
    _e("adv2_ln_hidden_local", "adv2_ln_hidden", "joint", bug=("_adv2.py", "hidden shard normalised alone")),
    _e("adv2_emb_correct", "adv2_emb", "joint"),
    _e("adv2_emb_pad_all", "adv2_emb", "joint", bug=("_adv2.py", "padding_idx on every rank")),
    _e("adv2_rs_correct", "adv2_rs"),
    _e("adv2_rs_other", "adv2_rs", bug=("_adv2.py", "the rank's columns")),
    _e("adv2_rs_correct", "adv2_rs", "joint"),
    _e("adv2_rs_other", "adv2_rs", "joint", bug=("_adv2.py", "the rank's columns")),
    _e("adv2_half_correct", "adv2_half"),
    _e("adv2_half_half", "adv2_half", bug=("_adv2.py", "all-reduced in float16")),
    _e("adv2_topkx_correct", "adv2_topkx"),
    _e("adv2_topkx_local", "adv2_topkx", bug=("_adv2.py", "top-1 per expert shard")),
    _e("adv2_zslice_correct", "adv2_zslice", "joint"),
    _e("adv2_zslice_no_reduce", "adv2_zslice", "joint", bug=("_adv2.py", "gradient not all-reduced")),
    _e("adv2_select_correct", "adv2_select"),
    _e("adv2_select_index", "adv2_select", bug=("_adv2.py", "the selected row")),
    _e("adv2_all_correct", "adv2_all"),
    _e("adv2_all_local", "adv2_all", bug=("_adv2.py", "verdicts combined")),
    _e("adv2_emb_off_correct", "adv2_emb_off", "joint"),
    _e("adv2_emb_off_offset", "adv2_emb_off", "joint", bug=("_adv2.py", "rank 1's vocab range")),
    # adversarial (helper-adv3): batched receives with views of the buffer, padding_idx mid-block and
    # negative, cross-entropy means over unequal counts, all/any over ranks, bmm operands, permute
    # inverses, rank-dependent integer constants, concat regrouping, reductions over a size-1 shard
    _e("adv3_pp_correct", "adv3_pp"),
    _e("adv3_pp_view_old", "adv3_pp", bug=("_adv3.py", "a view of the buffer kept as its old contents")),
    _e("adv3_ppv_correct", "adv3_ppv"),
    _e("adv3_ppv_both", "adv3_ppv", bug=("_adv3.py", "the buffer read as if it held u")),
    _e("adv3_emb_correct", "adv3_emb", "joint"),
    _e("adv3_emb_neg", "adv3_emb", "joint"),
    _e("adv3_emb_wrong_rank", "adv3_emb", "joint", bug=("_adv3.py", "the rank and row of padding_idx")),
    _e("adv3_emb_neg_off", "adv3_emb", "joint", bug=("_adv3.py", "the rank and row of padding_idx")),
    _e("adv3_emb0_correct", "adv3_emb", "joint"),
    _e("adv3_emb0_neg", "adv3_emb", "joint"),
    _e("adv3_emb0_wrong_rank", "adv3_emb", "joint", bug=("_adv3.py", "the rank and row of padding_idx")),
    _e("adv3_xentu_correct", "adv3_xentu"),
    _e("adv3_xentu_mean_of_means", "adv3_xentu", bug=("_adv3.py", "the mean of the ranks' means")),
    _e("adv3_xenti_correct", "adv3_xenti"),
    _e("adv3_xenti_mean_of_means", "adv3_xenti", bug=("_adv3.py", "the mean of the ranks' means")),
    _e("adv3_all_correct", "adv3_all"),
    _e("adv3_all_float", "adv3_all"),
    _e("adv3_all_any", "adv3_all", bug=("_adv3.py", "any() for all()")),
    _e("adv3_all_sum", "adv3_all", bug=("_adv3.py", "combined by a sum")),
    _e("adv3_bmm_correct", "adv3_bmm"),
    _e("adv3_bmm_no_t", "adv3_bmm", bug=("_adv3.py", "the rank's k operand")),
    _e("adv3_bmm_flip", "adv3_bmm", bug=("_adv3.py", "the rank's k operand")),
    _e("adv3_perm_correct", "adv3_perm"),
    _e("adv3_perm_same", "adv3_perm", bug=("_adv3.py", "the permute back")),
    _e("adv3_iscal_correct", "adv3_iscal"),
    _e("adv3_iscal_rank_c", "adv3_iscal", bug=("_adv3.py", "the threshold of the mask")),
    _e("adv3_cat_correct", "adv3_cat"),
    _e("adv3_cat_overlap", "adv3_cat", bug=("_adv3.py", "the blocks cut and their order")),
    _e("adv3_cat_order", "adv3_cat", bug=("_adv3.py", "the blocks cut and their order")),
    _e("adv3_amax_correct", "adv3_red1"),
    _e("adv3_amax_local", "adv3_red1", bug=("_adv3.py", "the ranks' maxima combined")),
    _e("adv3_mean_correct", "adv3_red1"),
    _e("adv3_mean_no_div", "adv3_red1", bug=("_adv3.py", "the ranks' means combined")),
    # helper-adv4: the vocab-parallel loss gradient (nll_loss_backward, _log_softmax_backward_data), a
    # product over a sum over ranks, permutes around a reduce-scatter, counts of masks, typed constants
    _e("adv4_vpnll_correct", "adv4_vpnll"),
    _e("adv4_vpnll_full", "adv4_vpnll"),
    _e("adv4_vpnll_ign0", "adv4_vpnll", bug=("_adv4.py", "foreign targets filled with a class")),
    _e("adv4_vpnllm_correct", "adv4_vpnll"),
    _e("adv4_vpnllm_mean", "adv4_vpnll", bug=("_adv4.py", "the ranks' means of their own targets summed")),
    _e("adv4_vpnll_correct", "adv4_vpnll", "joint"),
    _e("adv4_vpnll_ign0", "adv4_vpnll", "joint", bug=("_adv4.py", "foreign targets filled with a class")),
    _e("adv4_vpnllm_correct", "adv4_vpnll", "joint"),
    _e("adv4_vpnllm_mean", "adv4_vpnll", "joint", bug=("_adv4.py", "the ranks' means of their own targets summed")),
    _e("adv4_lsmv_correct", "adv4_lsmv", "joint"),
    _e("adv4_lsmv_local", "adv4_lsmv", "joint", bug=("_adv4.py", "the row sum of g over the rank's block only")),
    _e("adv4_lsmd_correct", "adv4_lsmd", "joint"),
    _e("adv4_lsmd_dim0", "adv4_lsmd", "joint", bug=("_adv4.py", "the backward's reduction dim")),
    _e("adv4_nllb_correct", "adv4_nllb", "joint"),
    _e("adv4_nllb_ign", "adv4_nllb", "joint", bug=("_adv4.py", "the backward's reduction and ignore index")),
    _e("adv4_nllb_mean", "adv4_nllb", "joint", bug=("_adv4.py", "the backward's reduction and ignore index")),
    _e("adv4_rsp_correct", "adv4_rsp"),
    _e("adv4_rsp_alt", "adv4_rsp"),
    _e("adv4_rsp_back", "adv4_rsp", bug=("_adv4.py", "the permutes around the reduce-scatter")),
    _e("adv4_rsp_order", "adv4_rsp", bug=("_adv4.py", "the permutes around the reduce-scatter")),
    _e("adv4_rsp_slice", "adv4_rsp"),
    _e("adv4_rsp_other", "adv4_rsp", bug=("_adv4.py", "(rsp): the rank's block")),
    _e("adv4_rsp_correct", "adv4_rsp", "joint"),
    _e("adv4_rsp_slice", "adv4_rsp", "joint"),
    _e("adv4_rsp_slice_ident", "adv4_rsp", "joint", bug=("_adv4.py", "the all-reduce's backward")),
    _e("adv4_mulrs_correct", "adv4_mulrs"),
    _e("adv4_mulrs_inner", "adv4_mulrs"),
    _e("adv4_mulrs_local", "adv4_mulrs", bug=("_adv4.py", "the partials multiplied, then summed")),
    _e("adv4_mulrs_div", "adv4_mulrs", bug=("_adv4.py", "divided by the ranks")),
    _e("adv4_mulrs_inner", "adv4_mulrs", "joint"),
    _e("adv4_mulrs_inner_ident", "adv4_mulrs", "joint", bug=("_adv4.py", "the inner all-reduce's backward")),
    _e("adv4_lnh_correct", "adv4_lnh", "joint"),
    _e("adv4_lnh_split", "adv4_lnh", "joint", bug=("_adv4.py", "the gather's backward")),
    _e("adv4_fdt_correct", "adv4_fdt"),
    _e("adv4_fdt_half", "adv4_fdt", bug=("_adv4.py", "the constant's dtype")),
    _e("adv4_fdtr_correct", "adv4_fdtr"),
    _e("adv4_fdtr_half", "adv4_fdtr", bug=("_adv4.py", "the constant's dtype")),
    _e("adv4_zpad_correct", "adv4_zpad"),
    _e("adv4_zpad_ones", "adv4_zpad", bug=("_adv4.py", "the padding's fill")),
    _e("adv4_zpad_correct", "adv4_zpad", ws=4),
    _e("adv4_cnt_correct", "adv4_cnt"),
    _e("adv4_cnt_cnz", "adv4_cnt"),
    _e("adv4_cnt_dim0", "adv4_cnt", bug=("_adv4.py", "the count over the other dim")),
    _e("adv4_cnt8_correct", "adv4_cnt"),
    _e("adv4_cnt8_u8", "adv4_cnt", bug=("_adv4.py", "the count summed in uint8")),
    _e("adv4_xign_correct", "adv4_xign"),
    _e("adv4_xign_other", "adv4_xign", bug=("_adv4.py", "the ranks' ignore index")),
    _e("adv4_xignm_correct", "adv4_xign"),
    _e("adv4_xignm_count", "adv4_xign", bug=("_adv4.py", "the count of targets")),
    _e("adv4_xpad_correct", "adv4_xpad"),
    _e("adv4_xpad_batch", "adv4_xpad", bug=("_adv4.py", "divided by the batch size, padding targets included")),
    # labels the program pads with -100 itself: the input-label assumption must not cover them
    _e("loss_pad_correct", "loss_pad"),
    _e("loss_pad_batch", "loss_pad", bug=("_loss_pad.py", "divided by the batch size")),
    _e("loss_pad_correct", "loss_pad", "joint"),
    _e("loss_pad_batch", "loss_pad", "joint", bug=("_loss_pad.py", "divided by the batch size")),
    _e("loss_pad_correct", "loss_pad", ws=4),
    _e("loss_pad_batch", "loss_pad", bug=("_loss_pad.py", "divided by the batch size"), ws=4),
    _e("adv4_tvm_correct", "adv4_tvm"),
    _e("adv4_tvm_tt", "adv4_tvm"),
    _e("adv4_tvm_reshape", "adv4_tvm", bug=("_adv4.py", "a reshape for a transpose")),
    _e("adv4_tvm_correct", "adv4_tvm", "joint"),
    _e("adv4_tvm_reshape", "adv4_tvm", "joint", bug=("_adv4.py", "a reshape for a transpose")),
    _e("adv4_amin_correct", "adv4_amin"),
    _e("adv4_amin_dim1", "adv4_amin", bug=("_adv4.py", "the dim of the min")),
    _e("adv4_mulrs_inner", "adv4_mulrs", ws=4),
    _e("adv4_mulrs_local", "adv4_mulrs", bug=("_adv4.py", "the partials multiplied, then summed"), ws=4),
    _e("adv4_mulrs_inner", "adv4_mulrs", "joint", ws=4),
    _e("adv4_mulrs_inner_ident", "adv4_mulrs", "joint", bug=("_adv4.py", "the inner all-reduce's backward"), ws=4),
    _e("adv4_xpad_batch", "adv4_xpad", bug=("_adv4.py", "divided by the batch size, padding targets included"), ws=4),
    # helper-j1: joint mode for attention (GQA, CP, RoPE under CP), SP dropout, DTensor SP
    _e("gqa_causal_correct", "gqa_causal", "joint"),
    _e("gqa_causal_repeat", "gqa_causal", "joint", bug=("_attn.py", "j % kvh")),
    _e("cp_attention_correct", "cp_attention", "joint"),
    _e("cp_attention_local_mask", "cp_attention", "joint", bug=("_cp_attn.py", "local query positions")),
    _e("rope_cp_correct", "rope_cp", "joint"),
    _e("rope_cp_local_positions", "rope_cp", "joint", bug=("_rope.py", "restart at 0")),
    _e("sp_dropout_correct", "sp_dropout", "joint"),
    _e("sp_dropout_wrong_p", "sp_dropout", "joint", bug=("_sp_dropout.py", "attention dropout rate")),
    _e("dtensor_sp_correct", "dtensor_sp", "joint"),
    # ... and their classic backward bugs: a gradient never all-reduced / reduce-scattered
    _e("gqa_causal_x_grad_not_reduced", "gqa_causal", "joint", bug=("_attn.py", "without copy_to")),
    _e("cp_attention_kv_grad_split", "cp_attention", "joint", bug=("_cp_attn.py", "keeps this rank's slice")),
    _e("rope_cp_bwd_local_positions", "rope_cp", "joint", bug=("_rope.py", "hand-written backward")),
    _e("sp_dropout_scale_grad_not_reduced", "sp_dropout", "joint", bug=("_sp_dropout.py", "never all-reduced")),
    # helper-j2: joint mode for the adversarial families that had forward entries only (their float
    # inputs now require grad: select/slice/pad/topk/repeat/permute/cat/reduction backwards)
    _e("adv2_ln_correct", "adv2_ln", "joint"),
    _e("adv2_ln_eps", "adv2_ln", "joint", bug=("_adv2.py", "another eps")),
    _e("adv2_ln_dims", "adv2_ln", "joint", bug=("_adv2.py", "eps, dims")),
    _e("adv2_strided_correct", "adv2_strided", "joint"),
    _e("adv2_strided_two_step", "adv2_strided", "joint"),
    _e("adv2_strided_phase", "adv2_strided", "joint", bug=("_adv2.py", "the columns this rank reads")),
    _e("adv2_strided_window", "adv2_strided", "joint", bug=("_adv2.py", "the columns this rank reads")),
    _e("adv2_half_correct", "adv2_half", "joint"),
    _e("adv2_half_half", "adv2_half", "joint", bug=("_adv2.py", "all-reduced in float16")),
    _e("adv2_pad_correct", "adv2_pad", "joint"),
    _e("adv2_pad_local", "adv2_pad", "joint", bug=("_adv2.py", "the shift, its rows")),
    _e("adv2_pad_width2", "adv2_pad", "joint", bug=("_adv2.py", "the shift, its rows")),
    _e("adv2_pad_value", "adv2_pad", "joint", bug=("_adv2.py", "or fill")),
    _e("adv2_repeat_correct", "adv2_repeat", "joint"),
    _e("adv2_repeat_tile", "adv2_repeat", "joint", bug=("_adv2.py", "tiled, not interleaved")),
    _e("adv2_select_correct", "adv2_select", "joint"),
    _e("adv2_select_index", "adv2_select", "joint", bug=("_adv2.py", "the selected row")),
    _e("adv2_topk_correct", "adv2_topk", "joint"),
    _e("adv2_topk_dim0", "adv2_topk", "joint", bug=("_adv2.py", "top-k along another dim")),
    _e("adv2_topk_smallest", "adv2_topk", "joint", bug=("_adv2.py", "or the smallest")),
    _e("adv2_xent_correct", "adv2_xent", "joint"),
    _e("adv2_xent_ignore_m1", "adv2_xent", "joint"),
    _e("adv2_xent_ignore0", "adv2_xent", "joint", bug=("_adv2.py", "the ignored class")),
    _e("adv2_xent_local_n", "adv2_xent", "joint", bug=("_adv2.py", "local batch")),
    _e("adv3_bmm_correct", "adv3_bmm", "joint"),
    _e("adv3_bmm_no_t", "adv3_bmm", "joint", bug=("_adv3.py", "the rank's k operand")),
    _e("adv3_bmm_flip", "adv3_bmm", "joint", bug=("_adv3.py", "the rank's k operand")),
    _e("adv3_perm_correct", "adv3_perm", "joint"),
    _e("adv3_perm_same", "adv3_perm", "joint", bug=("_adv3.py", "the permute back")),
    _e("adv3_cat_correct", "adv3_cat", "joint"),
    _e("adv3_cat_overlap", "adv3_cat", "joint", bug=("_adv3.py", "the blocks cut and their order")),
    _e("adv3_cat_order", "adv3_cat", "joint", bug=("_adv3.py", "the blocks cut and their order")),
    _e("adv3_mean_correct", "adv3_red1", "joint"),
    _e("adv3_mean_no_div", "adv3_red1", "joint", bug=("_adv3.py", "the ranks' means combined")),
    # the forward is correct, its backward not: reduce_max's backward passes every rank's tangent
    # to its own column's maximum, the sequential one only to the row's
    _e("adv3_amax_correct", "adv3_red1", "joint", bug=("_adv3.py", "the ranks' maxima combined")),
    _e("adv3_amax_local", "adv3_red1", "joint", bug=("_adv3.py", "the ranks' maxima combined")),
    _e("adv3_xentu_correct", "adv3_xentu", "joint"),
    _e("adv3_xentu_mean_of_means", "adv3_xentu", "joint", bug=("_adv3.py", "the mean of the ranks' means")),
    _e("adv3_xenti_correct", "adv3_xenti", "joint"),
    _e("adv3_xenti_mean_of_means", "adv3_xenti", "joint", bug=("_adv3.py", "the mean of the ranks' means")),
    # helper-jadv2: joint mode for the adv2/adv3 correct programs that had a forward entry only
    # (their float inputs now require grad: positions, flip, vocab-parallel pick, top-k over
    # expert shards, all() masks)
    _e("adv2_pos_correct", "adv2_pos", "joint"),
    _e("adv2_pos_start", "adv2_pos", "joint"),
    _e("adv2_pos_off1", "adv2_pos", "joint", bug=("_adv2.py", "position offset")),
    _e("adv2_pos_strided", "adv2_pos", "joint", bug=("_adv2.py", "position offset")),
    _e("adv2_flip_correct", "adv2_flip", "joint"),
    _e("adv2_flip_no_swap", "adv2_flip", "joint", bug=("_adv2.py", "block order")),
    _e("adv2_flip_dim", "adv2_flip", "joint", bug=("_adv2.py", "the flipped dim")),
    _e("adv2_flip_correct", "adv2_flip", "joint", ws=4),
    _e("adv2_flip_no_swap", "adv2_flip", "joint", ws=4, bug=("_adv2.py", "block order")),
    _e("adv2_flip_dim", "adv2_flip", "joint", ws=4, bug=("_adv2.py", "the flipped dim")),
    _e("adv2_vpick_correct", "adv2_vpick", "joint"),
    _e("adv2_vpick_unmasked", "adv2_vpick", "joint", bug=("_adv2.py", "not zeroed")),
    _e("adv2_topkx_correct", "adv2_topkx", "joint"),
    _e("adv2_topkx_local", "adv2_topkx", "joint", bug=("_adv2.py", "top-1 per expert shard")),
    _e("adv2_all_correct", "adv2_all", "joint"),
    _e("adv2_all_local", "adv2_all", "joint", bug=("_adv2.py", "verdicts combined")),
    _e("adv3_all_correct", "adv3_all", "joint"),
    _e("adv3_all_float", "adv3_all", "joint"),
    _e("adv3_all_any", "adv3_all", "joint", bug=("_adv3.py", "any() for all()")),
    _e("adv3_all_sum", "adv3_all", "joint", bug=("_adv3.py", "combined by a sum")),
    _e("adv3_iscal_correct", "adv3_iscal", "joint"),
    _e("adv3_iscal_rank_c", "adv3_iscal", "joint", bug=("_adv3.py", "the threshold of the mask")),
    # helper-jadv4: joint entries of the adv4 programs that had a forward entry only (and their buggy twins)
    _e("adv4_vpnll_full", "adv4_vpnll", "joint"),
    _e("adv4_rsp_alt", "adv4_rsp", "joint"),
    _e("adv4_rsp_back", "adv4_rsp", "joint", bug=("_adv4.py", "the permutes around the reduce-scatter")),
    _e("adv4_rsp_order", "adv4_rsp", "joint", bug=("_adv4.py", "the permutes around the reduce-scatter")),
    _e("adv4_rsp_other", "adv4_rsp", "joint", bug=("_adv4.py", "(rsp): the rank's block")),
    # forward-correct, backward wrong (gloo): b's gradient W times (all_reduce's backward on a tensor
    # every rank goes on with whole); the inner twin is the correct joint program
    _e("adv4_mulrs_correct", "adv4_mulrs", "joint", bug=("_adv4.py", "all_reduce's backward sums the ranks' equal")),
    _e("adv4_mulrs_local", "adv4_mulrs", "joint", bug=("_adv4.py", "the partials multiplied, then summed")),
    _e("adv4_mulrs_div", "adv4_mulrs", "joint", bug=("_adv4.py", "divided by the ranks")),
    _e("adv4_fdt_correct", "adv4_fdt", "joint"),
    _e("adv4_fdt_half", "adv4_fdt", "joint", bug=("_adv4.py", "the constant's dtype")),
    _e("adv4_fdtr_correct", "adv4_fdtr", "joint"),
    _e("adv4_fdtr_half", "adv4_fdtr", "joint", bug=("_adv4.py", "the constant's dtype")),
    _e("adv4_zpad_correct", "adv4_zpad", "joint"),
    _e("adv4_zpad_ones", "adv4_zpad", "joint", bug=("_adv4.py", "the padding's fill")),
    _e("adv4_zpad_correct", "adv4_zpad", "joint", ws=4),
    _e("adv4_cnt_correct", "adv4_cnt", "joint"),
    _e("adv4_cnt_cnz", "adv4_cnt", "joint"),
    _e("adv4_cnt_dim0", "adv4_cnt", "joint", bug=("_adv4.py", "the count over the other dim")),
    _e("adv4_cnt8_correct", "adv4_cnt", "joint"),
    _e("adv4_cnt8_u8", "adv4_cnt", "joint", bug=("_adv4.py", "the count summed in uint8")),
    _e("adv4_xign_correct", "adv4_xign", "joint"),
    _e("adv4_xign_other", "adv4_xign", "joint", bug=("_adv4.py", "the ranks' ignore index")),
    _e("adv4_xignm_correct", "adv4_xign", "joint"),
    _e("adv4_xignm_count", "adv4_xign", "joint", bug=("_adv4.py", "the count of targets")),
    _e("adv4_xpad_correct", "adv4_xpad", "joint"),
    _e("adv4_xpad_batch", "adv4_xpad", "joint", bug=("_adv4.py", "divided by the batch size, padding targets included")),
    _e("adv4_tvm_tt", "adv4_tvm", "joint"),
    _e("adv4_amin_correct", "adv4_amin", "joint"),
    _e("adv4_amin_dim1", "adv4_amin", "joint", bug=("_adv4.py", "the dim of the min")),
    # the forward of programs written for their backward (every correct program has both modes)
    _e("adv2_lng_correct", "adv2_lng"),
    _e("adv2_emb_correct", "adv2_emb"),
    _e("adv2_zslice_correct", "adv2_zslice"),
    _e("adv2_emb_off_correct", "adv2_emb_off"),
    _e("adv3_emb_correct", "adv3_emb"),
    _e("adv3_emb_neg", "adv3_emb"),
    _e("adv3_emb0_correct", "adv3_emb"),
    _e("adv3_emb0_neg", "adv3_emb"),
    _e("adv4_lsmv_correct", "adv4_lsmv"),
    _e("adv4_lsmd_correct", "adv4_lsmd"),
    _e("adv4_nllb_correct", "adv4_nllb"),
    _e("adv4_lnh_correct", "adv4_lnh"),

    # helper-moesk: Megatron's SwitchMLP with Sinkhorn routing (torch.ops.megatron.sinkhorn), expert
    # parallel over sequence-sharded tokens, dense-mask dispatch (Megatron's own nonzero dispatch: the
    # moe_sinkhorn_nonzero_* block at the end)
    _e("moe_sinkhorn_correct", "moe_sinkhorn"),
    _e("moe_sinkhorn_correct", "moe_sinkhorn", "joint"),
    _e("moe_sinkhorn_correct", "moe_sinkhorn", ws=4),
    _e("moe_sinkhorn_correct", "moe_sinkhorn", "joint", ws=4),
    _e("moe_sinkhorn_router_grad", "moe_sinkhorn", "joint", bug=("_moe_sinkhorn.py", "router gradient is not all-reduced")),
    _e("moe_sinkhorn_offset", "moe_sinkhorn", bug=("_moe_sinkhorn.py", "local expert index")),
    _e("moe_sinkhorn_offset", "moe_sinkhorn", "joint", bug=("_moe_sinkhorn.py", "local expert index")),
    _e("moe_sinkhorn_offset", "moe_sinkhorn", ws=4, bug=("_moe_sinkhorn.py", "local expert index")),
    _e("moe_sinkhorn_slice", "moe_sinkhorn", bug=("_moe_sinkhorn.py", "never summed")),
    _e("moe_sinkhorn_slice", "moe_sinkhorn", "joint", bug=("_moe_sinkhorn.py", "never summed")),

    # helper-adv5: assumption scopes, joint backward paths, collectives' arguments, views (_adv5.py)
    _e("adv5_bpad_correct", "adv5_bpad"),
    _e("adv5_bpad_correct", "adv5_bpad", "joint"),
    _e("adv5_bpad_correct", "adv5_bpad", ws=4),
    _e("adv5_mpad_correct", "adv5_mpad"),
    _e("adv5_mpad_correct", "adv5_mpad", "joint"),
    _e("adv5_twice_correct", "adv5_twice"),
    _e("adv5_twice_correct", "adv5_twice", "joint"),
    _e("adv5_twice_once", "adv5_twice", "joint", bug=("_adv5.py", "the second read without copy_to")),
    _e("adv5_detach_correct", "adv5_detach"),
    _e("adv5_detach_correct", "adv5_detach", "joint"),
    _e("adv5_detach_detach", "adv5_detach", "joint", bug=("_adv5.py", "the row sum of a detached x")),
    _e("adv5_fnb_correct", "adv5_fnb"),
    _e("adv5_fnb_correct", "adv5_fnb", "joint"),
    _e("adv5_fnb_scale", "adv5_fnb", "joint", bug=("_adv5.py", "the input's gradient divided by W")),
    _e("adv5_bsrc_correct", "adv5_bsrc"),
    _e("adv5_bsrc_src", "adv5_bsrc", bug=("_adv5.py", "broadcast from rank 1")),
    _e("adv5_rsop_correct", "adv5_rsop"),
    _e("adv5_rsop_max", "adv5_rsop", bug=("_adv5.py", "the reduce-scatter's op")),
    _e("adv5_agv_correct", "adv5_agv"),
    _e("adv5_agv_view", "adv5_agv", bug=("_adv5.py", "the gathered rows viewed")),
    _e("adv5_agv_correct", "adv5_agv", "joint"),
    _e("adv5_agv_view", "adv5_agv", "joint", bug=("_adv5.py", "the gathered rows viewed")),
    _e("adv5_grev_rev", "adv5_grev"),
    _e("adv5_grev_fwd", "adv5_grev"),
    _e("adv5_grev_list", "adv5_grev"),
    _e("adv5_inpl_correct", "adv5_inpl"),
    _e("adv5_inpl_narrow", "adv5_inpl", bug=("_adv5.py", "rank 0 writes through its first two")),
    _e("adv5_inpl_correct", "adv5_inpl", "joint"),
    _e("adv5_inpl_narrow", "adv5_inpl", "joint", bug=("_adv5.py", "rank 0 writes through its first two")),
    _e("adv5_nzero_correct", "adv5_nzero"),
    _e("adv5_gpad_correct", "adv5_gpad"),
    _e("adv5_gpad_correct", "adv5_gpad", "joint"),
    # helper-adv5's holes, now refuted: labels padded with -100 from an int buffer, a module-level
    # tensor constant or a [cut] tensor were (given ...) like the user's inputs, so no_ignored_targets
    # covered padding the program made; given now marks input: ports only
    _e("adv5_bpad_batch", "adv5_bpad", bug=("_adv5.py", "the padding targets included")),
    _e("adv5_bpad_batch", "adv5_bpad", "joint", bug=("_adv5.py", "the padding targets included")),
    _e("adv5_bpad_batch", "adv5_bpad", bug=("_adv5.py", "the padding targets included"), ws=4),
    _e("adv5_gpad_batch", "adv5_gpad", bug=("_adv5.py", "the padding targets included")),
    _e("adv5_gpad_batch", "adv5_gpad", "joint", bug=("_adv5.py", "the padding targets included")),
    _e("adv5_mpad_batch", "adv5_mpad", bug=("_adv5.py", "divided by the batch size, padding")),
    _e("adv5_mpad_batch", "adv5_mpad", "joint", bug=("_adv5.py", "divided by the batch size, padding")),
    # adv5_nzero_acc (an accumulator started at 0.0 whose -0.0 term 1/x amplifies to -inf) is not an
    # entry: add-zero (x + 0.0 = x) holds in exact arithmetic, which is what refines means (README);
    # the numeric re-check flags it (exit 4)

    # helper-ddp: torch.nn.parallel.DistributedDataParallel as users write it (real DDP on gloo)
    *[_e(f"ddp_{v}", "ddp", m, ws=n) for v in ("correct", "uneven_correct") for m in ("forward", "joint") for n in (2, 4)],
    *[_e("ddp_loss_sum", "ddp", "joint", bug=("_ddp.py", "the local sum"), ws=n) for n in (2, 4)],
    *[_e("ddp_head_outside", "ddp", "joint", bug=("_ddp.py", "not inside the DDP wrapper"), ws=n) for n in (2, 4)],
    *[_e("ddp_uneven_mean", "ddp", "joint", bug=("_ddp.py", "averaged by DDP"), ws=n) for n in (2, 4)],

    # helper-dtb: DTensor tensor parallelism with biases (nn.Linear's default): RowwiseParallel adds
    # bias / W on every rank before the all-reduce / reduce-scatter; fc2 run by hand on the local
    # shards, the bias undivided on every rank (W * b) or its share added after the sum (b / W).
    _e("dtensor_bias_mlp_correct", "dtensor_bias_mlp"),
    _e("dtensor_bias_mlp_local_correct", "dtensor_bias_mlp"),
    _e("dtensor_bias_mlp_every_rank", "dtensor_bias_mlp", bug=("_dtensor.py", "every rank's partial sums")),
    _e("dtensor_bias_mlp_after_reduce", "dtensor_bias_mlp", bug=("_dtensor.py", "added after the sum")),
    _e("dtensor_bias_mlp_correct", "dtensor_bias_mlp", "joint"),
    _e("dtensor_bias_mlp_local_correct", "dtensor_bias_mlp", "joint"),
    _e("dtensor_bias_mlp_every_rank", "dtensor_bias_mlp", "joint", bug=("_dtensor.py", "every rank's partial sums")),
    _e("dtensor_bias_mlp_after_reduce", "dtensor_bias_mlp", "joint", bug=("_dtensor.py", "added after the sum")),
    _e("dtensor_bias_sp_correct", "dtensor_bias_sp"),
    _e("dtensor_bias_sp_local_correct", "dtensor_bias_spl"),
    _e("dtensor_bias_sp_every_rank", "dtensor_bias_spl", bug=("_dtensor.py", "every rank's partial sums")),
    _e("dtensor_bias_sp_correct", "dtensor_bias_sp", "joint"),
    _e("dtensor_bias_sp_local_correct", "dtensor_bias_spl", "joint"),
    _e("dtensor_bias_sp_every_rank", "dtensor_bias_spl", "joint", bug=("_dtensor.py", "every rank's partial sums")),
    _e("dtensor_bias_mlp_correct", "dtensor_bias_mlp", ws=4),
    _e("dtensor_bias_mlp_local_correct", "dtensor_bias_mlp", ws=4),
    _e("dtensor_bias_mlp_every_rank", "dtensor_bias_mlp", ws=4, bug=("_dtensor.py", "every rank's partial sums")),
    _e("dtensor_bias_mlp_after_reduce", "dtensor_bias_mlp", ws=4, bug=("_dtensor.py", "added after the sum")),
    _e("dtensor_bias_mlp_correct", "dtensor_bias_mlp", "joint", ws=4),
    _e("dtensor_bias_mlp_local_correct", "dtensor_bias_mlp", "joint", ws=4),
    _e("dtensor_bias_mlp_every_rank", "dtensor_bias_mlp", "joint", ws=4, bug=("_dtensor.py", "every rank's partial sums")),
    _e("dtensor_bias_mlp_after_reduce", "dtensor_bias_mlp", "joint", ws=4, bug=("_dtensor.py", "added after the sum")),
    _e("dtensor_bias_sp_correct", "dtensor_bias_sp", ws=4),
    _e("dtensor_bias_sp_local_correct", "dtensor_bias_spl", ws=4),
    _e("dtensor_bias_sp_every_rank", "dtensor_bias_spl", ws=4, bug=("_dtensor.py", "every rank's partial sums")),

    # helper-jadv5: joint mode for adv5's collective-argument and signed-zero programs (their float
    # inputs require grad; broadcast / reduce-scatter as autograd.Functions with their backward:
    # a reduce to src, an all-gather; the group-order gather's backward reduce-scatters over it)
    _e("adv5_bsrc_correct", "adv5_bsrc", "joint"),
    _e("adv5_bsrc_src", "adv5_bsrc", "joint", bug=("_adv5.py", "broadcast from rank 1")),
    # the forward right, the backward wrong: rank 1's rows of x get a gradient they do not have
    _e("adv5_bsrc_keep", "adv5_bsrc", "joint", bug=("_adv5.py", "every rank keeps the summed gradient")),
    _e("adv5_rsop_correct", "adv5_rsop", "joint"),
    _e("adv5_rsop_max", "adv5_rsop", "joint", bug=("_adv5.py", "the reduce-scatter's op")),
    _e("adv5_grev_rev", "adv5_grev", "joint"),
    _e("adv5_grev_fwd", "adv5_grev", "joint"),
    _e("adv5_grev_list", "adv5_grev", "joint"),
    _e("adv5_nzero_correct", "adv5_nzero", "joint"),
    # Megatron's own SwitchMLP dispatch: out_total[(max_ind == e).nonzero(), :] = expert(gx[...]),
    # a size counted from the values (the checker's DRows); at 4 ranks joint the experts' input
    # gradients, added in backward order, are the reduce-scatter's sum in rank order (the peer sums,
    # entangle_py/lemmas/collective.py)
    _e("moe_sinkhorn_nonzero_correct", "moe_sinkhorn"),
    _e("moe_sinkhorn_nonzero_correct", "moe_sinkhorn", "joint"),
    _e("moe_sinkhorn_nonzero_correct", "moe_sinkhorn", ws=4),
    _e("moe_sinkhorn_nonzero_offset", "moe_sinkhorn", bug=("_moe_sinkhorn.py", "local expert index taken as the global one (nonzero dispatch)")),
    _e("moe_sinkhorn_nonzero_offset", "moe_sinkhorn", "joint", bug=("_moe_sinkhorn.py", "local expert index taken as the global one (nonzero dispatch)")),
    _e("moe_sinkhorn_nonzero_offset", "moe_sinkhorn", ws=4, bug=("_moe_sinkhorn.py", "local expert index taken as the global one (nonzero dispatch)")),
    _e("moe_sinkhorn_nonzero_slice", "moe_sinkhorn", bug=("_moe_sinkhorn.py", "never summed")),
    _e("moe_sinkhorn_nonzero_slice", "moe_sinkhorn", "joint", bug=("_moe_sinkhorn.py", "never summed")),
    _e("moe_sinkhorn_nonzero_router_grad", "moe_sinkhorn", "joint", bug=("_moe_sinkhorn.py", "router gradient is not all-reduced")),
    _e("moe_sinkhorn_nonzero_correct", "moe_sinkhorn", "joint", ws=4),
    _e("moe_sinkhorn_nonzero_router_grad", "moe_sinkhorn", "joint", ws=4, bug=("_moe_sinkhorn.py", "router gradient is not all-reduced")),
    _e("moe_sinkhorn_nonzero_slice", "moe_sinkhorn", "joint", ws=4, bug=("_moe_sinkhorn.py", "never summed")),

    # helper-adv6: DDP's contract (its group, buffers, the parameters it was built with), DTensor
    # partial sums with a bias, labels padded by arithmetic, a division by False, Sinkhorn's tol,
    # an all-gather by zero-padded all-reduce (_adv6.py; the DDP bugs are gradient bugs: joint only)
    *[_e(f"adv6_{k}_correct", "adv6_ddp", m) for k in ("dsub", "dunused", "dlate", "dswap") for m in ("forward", "joint")],
    _e("adv6_dsub_self", "adv6_ddp", "joint", bug=("_adv6.py", "own one-rank group")),
    _e("adv6_dunused_detach", "adv6_ddp", "joint", bug=("_adv6.py", "rank 1 reads fc2's weight detached")),
    _e("adv6_dlate_after", "adv6_ddp", "joint", bug=("_adv6.py", "fc2 attached after")),
    _e("adv6_dswap_after", "adv6_ddp", "joint", bug=("_adv6.py", "replaced after DDP")),
    _e("adv6_dspare_correct", "adv6_dspare"),
    _e("adv6_dspare_correct", "adv6_dspare", "joint"),
    _e("adv6_dspare_stall", "adv6_dspare", "joint", bug=("_adv6.py", "waits for spare's gradient")),
    _e("adv6_dfrz_correct", "adv6_dfrz"),
    _e("adv6_dfrz_correct", "adv6_dfrz", "joint"),
    _e("adv6_dfrz_after", "adv6_dfrz", "joint", bug=("_adv6.py", "frozen after DDP")),
    _e("adv6_dbuf_correct", "adv6_dbuf"),
    _e("adv6_dbuf_correct", "adv6_dbuf", "joint"),
    _e("adv6_dbuf_bcast", "adv6_dbuf", bug=("_adv6.py", "broadcast_buffers (the default)")),
    _e("adv6_dbuf_bcast", "adv6_dbuf", "joint", bug=("_adv6.py", "broadcast_buffers (the default)")),
    _e("adv6_dtwo_correct", "adv6_dtwo", ws=4),
    _e("adv6_dtwo_correct", "adv6_dtwo", "joint", ws=4),
    _e("adv6_dtwo_pairs", "adv6_dtwo", "joint", bug=("_adv6.py", "over a pair of ranks"), ws=4),
    _e("adv6_dmesh_correct", "adv6_dmesh", ws=4),
    _e("adv6_dmesh_correct", "adv6_dmesh", "joint", ws=4),
    _e("adv6_dmesh_tp", "adv6_dmesh", "joint", bug=("_adv6.py", "over the tp group"), ws=4),
    *[_e("adv6_lar_correct", "adv6_lbl", m) for m in ("forward", "joint")],
    *[_e("adv6_lar_batch", "adv6_lbl", m, bug=("_adv6.py", "the padding targets included")) for m in ("forward", "joint")],
    *[_e("adv6_divf_correct", "adv6_divf", m) for m in ("forward", "joint")],
    *[_e("adv6_divf_each", "adv6_divf", m, bug=("_adv6.py", "each rank's partial sum divided")) for m in ("forward", "joint")],
    *[_e("adv6_dtb_correct", "adv6_dtb", m) for m in ("forward", "joint")],
    *[_e("adv6_dtb_bpartial", "adv6_dtb", m, bug=("_adv6.py", "wrapped as Partial on every rank")) for m in ("forward", "joint")],
    *[_e("adv6_dtb_avg", "adv6_dtb", m, bug=("_adv6.py", "their mean")) for m in ("forward", "joint")],
    *[_e("adv6_dtb_rank0", "adv6_dtb0", m) for m in ("forward", "joint")],
    *[_e("adv6_dtb_rank0div", "adv6_dtb0", m, bug=("_adv6.py", "rank 0 adds a share")) for m in ("forward", "joint")],
    _e("adv6_sk_correct", "adv6_sk"),
    _e("adv6_sk_tol", "adv6_sk", bug=("_adv6.py", "another tolerance")),
    _e("adv6_sk_local", "adv6_sk", bug=("_adv6.py", "its own tokens only")),
    *[_e("adv6_zag_correct", "adv6_zag", m) for m in ("forward", "joint")],
    *[_e(f"adv6_zag_{v}", "adv6_zag", m, bug=("_adv6.py", t)) for v, t in (("off", "at offset 0"), ("one", "padded with ones"))
      for m in ("forward", "joint")],
    # Hugging Face's sparse MoE block (Mixtral): torch.where(expert_mask[e]) (nonzero) and
    # index_add_ of each expert's rows, expert parallel over replicated tokens
    *[_e("moe_hf_correct", "moe_hf", ws=w) for w in (2, 4)],
    _e("moe_hf_offset", "moe_hf", bug=("_moe_hf.py", "BUG (offset)")),
    *[_e("moe_hf_index", "moe_hf", bug=("_moe_hf.py", "BUG (index)"), ws=w) for w in (2, 4)],
    _e("moe_hf_norm", "moe_hf", bug=("_moe_hf.py", "BUG (norm)")),

    # helper-falarm: adv5's correct programs the checker failed on (missing lemmas), with their twins
    _e("adv5_a2a_correct", "adv5_a2a"),
    _e("adv5_a2a_order", "adv5_a2a", bug=("_adv5.py", "rank 1 takes its own rows first")),
    _e("adv5_a2a_correct", "adv5_a2a", "joint"),
    _e("adv5_a2a_order", "adv5_a2a", "joint", bug=("_adv5.py", "rank 1 takes its own rows first")),
    _e("adv5_isel_correct", "adv5_isel"),
    _e("adv5_isel_correct", "adv5_isel", "joint"),
    _e("adv5_isel_copy", "adv5_isel", "joint", bug=("_adv5.py", "index_copy keeps one gradient of a duplicate")),
    _e("adv5_fpad_correct", "adv5_fpad"),
    _e("adv5_fpad_batch", "adv5_fpad", bug=("_adv5.py", "the padding targets included")),
    _e("adv5_fpad_correct", "adv5_fpad", "joint"),
    _e("adv5_fpad_batch", "adv5_fpad", "joint", bug=("_adv5.py", "the padding targets included")),
    _e("adv5_fpad_correct", "adv5_fpad", ws=4),
    _e("adv5_fpad_batch", "adv5_fpad", bug=("_adv5.py", "the padding targets included"), ws=4),
    _e("adv5_msrc_correct", "adv5_msrc"),
    _e("adv5_msrc_src", "adv5_msrc", bug=("_adv5.py", "the doubled rows sent from rank 1")),
    _e("adv5_msrc_correct", "adv5_msrc", "joint"),
    _e("adv5_msrc_src", "adv5_msrc", "joint", bug=("_adv5.py", "the doubled rows sent from rank 1")),
    _e("adv5_msrc_keep", "adv5_msrc", "joint", bug=("_adv5.py", "every rank keeps the summed gradient")),

    # helper-slow: the 4-rank cases that took minutes.  The sequence-parallel joint (the window now
    # follows the reduce-scatter's data movement to the layer norm backward: seconds, was minutes),
    # and the router gradient not all-reduced (the violated expectation refuted on values before
    # widening: seconds, was 21 min)
    _e("dtensor_bias_sp_correct", "dtensor_bias_sp", "joint", ws=4),
    _e("dtensor_bias_sp_local_correct", "dtensor_bias_spl", "joint", ws=4),
    _e("dtensor_bias_sp_every_rank", "dtensor_bias_spl", "joint", ws=4, bug=("_dtensor.py", "every rank's partial sums")),
    _e("moe_sinkhorn_router_grad", "moe_sinkhorn", "joint", ws=4, bug=("_moe_sinkhorn.py", "router gradient is not all-reduced")),

    # helper-hf: Hugging Face's MoE block as a training step.  The routing weights' gradient is
    # accumulated over the experts in reverse order by the sequential program; each rank pushes
    # the sum of its own experts' through the renormalisation, top-k and softmax backward before
    # the all-reduce (peers summed over ranks, entangle_py/lemmas/collective.py)
    *[_e("moe_hf_correct", "moe_hf", "joint", ws=w) for w in (2, 4)],
    _e("moe_hf_offset", "moe_hf", "joint", bug=("_moe_hf.py", "BUG (offset)")),
    *[_e("moe_hf_index", "moe_hf", "joint", bug=("_moe_hf.py", "BUG (index)"), ws=w) for w in (2, 4)],
    _e("moe_hf_norm", "moe_hf", "joint", bug=("_moe_hf.py", "BUG (norm)")),
]

BY_ID = {e.id: e for e in CORPUS}


# Correct programs that have no joint entry, and why: each is a forward-only program as users run it
# (an inference kernel without autograd, or raw point-to-point that carries no gradient).  Every
# other correct program of the corpus has a joint entry (tests/test_program_corpus.py).
_KERNEL = ("vLLM's _C kernels (the stand-ins in _vllm_ops.py) have no autograd: they write into an "
           "out= buffer and vLLM runs them for inference only")
_RAW_P2P = ("raw point-to-point: the received tensor carries no gradient, so as a training step stage 0 "
            "never gets its parameters' gradient (the pp family, _pp.py, sends gradients back)")
NO_JOINT = {
    "vllm_mlp_correct": _KERNEL,
    "adv_vllm_norm_correct": _KERNEL,
    "adv_vllm_rope_correct": _KERNEL,
    "adv_vllm_view_correct": _KERNEL,
    "adv2_kernel_correct": _KERNEL,
    "adv_pp_tags_correct": _RAW_P2P,
    "adv_pp_stale_correct": _RAW_P2P,
    "adv_pp_read_before_correct": _RAW_P2P,
    "adv_pp_subgroup_correct": _RAW_P2P,
    "adv_pp_wrong_rank_ok": _RAW_P2P,
    "adv3_pp_correct": _RAW_P2P,
    "adv3_ppv_correct": _RAW_P2P,
    "adv6_sk_correct": ("Megatron's sinkhorn has no autograd (the stand-in in _megatron_ops.py; Megatron runs it "
                        "under torch.no_grad() on the router logits)"),
}
