"""The framework recipes and their injected misconfigurations, as ``Entry``s of the program
corpus (tests/corpus/programs/corpus.py): the label of each is confirmed on real gloo ranks by
``confirm_gloo.py``, and ``tests/test_frameworks.py`` captures and checks them.

``FRAMEWORK`` of an entry: the Python package it needs (an entry whose package is not installed
is skipped by the tests)."""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests" / "corpus" / "programs"))
import corpus  # noqa: E402  (tests/corpus/programs/corpus.py)
from corpus import Entry  # noqa: E402


def _e(script, spec, mode="forward", bug=None, ws=2):
    return Entry(script, str(HERE / f"{script}.py"), str(HERE / spec), "buggy" if bug else "correct", mode, ws, bug)


FRAMEWORK = {"hf": "transformers", "megatron": "megatron.core", "torchtitan": "torchtitan"}


def framework(entry) -> str:
    return FRAMEWORK[entry.name.split("_", 1)[0]]


CORPUS = [
    # Hugging Face transformers: tp_plan
    _e("hf_llama", "hf_llama.toml"),
    _e("hf_llama", "hf_llama_joint.toml", "joint"),
    _e("hf_qwen2", "hf_llama.toml"),
    _e("hf_qwen2", "hf_llama_joint.toml", "joint"),
    _e("hf_llama_down_unreduced", "hf_llama.toml", bug=("hf_llama_down_unreduced.py", "left unreduced")),
    _e("hf_llama_head_colwise", "hf_llama.toml", bug=("hf_llama_head_colwise.py", "logits left sharded")),
    _e("hf_llama_attention_unreduced", "hf_llama.toml",
       bug=("hf_llama_attention_unreduced.py", "the attention's partial sums")),
    # Megatron-core: ColumnParallelLinear / RowParallelLinear, TransformerLayer, sequence parallel
    _e("megatron_mlp", "megatron_mlp.toml"),
    _e("megatron_mlp", "megatron_mlp_joint.toml", "joint"),
    _e("megatron_mlp", "megatron_mlp.toml", ws=4),
    _e("megatron_mlp", "megatron_mlp_joint.toml", "joint", ws=4),
    _e("megatron_mlp_sp", "megatron_mlp_sp.toml"),
    _e("megatron_mlp_sp", "megatron_mlp_sp_joint.toml", "joint"),
    _e("megatron_layer", "megatron_layer.toml"),
    _e("megatron_layer", "megatron_layer_joint.toml", "joint"),
    _e("megatron_layer", "megatron_layer.toml", ws=4),
    _e("megatron_region_correct", "megatron_region.toml"),
    _e("megatron_region_correct", "megatron_region_joint.toml", "joint"),
    _e("megatron_mlp_no_grad_reduce", "megatron_mlp_joint.toml", "joint",
       bug=("megatron_mlp_no_grad_reduce.py", "input gradient not all-reduced")),
    _e("megatron_mlp_sp_fc2_only", "megatron_mlp.toml", bug=("megatron_mlp_sp_fc2_only.py", "sequence-parallel flag")),
    _e("megatron_region_copy", "megatron_region.toml", bug=("_megatron_region.py", "all-reduce is missing")),
    # torchtitan: its sharding entries, run in its SPMD context
    _e("torchtitan_llama3", "torchtitan_llama3.toml"),
    _e("torchtitan_llama3", "torchtitan_llama3_joint.toml", "joint"),
    _e("torchtitan_llama3_no_context", "torchtitan_llama3.toml", bug=("torchtitan_llama3_no_context.py", "outside the SPMD")),
    _e("torchtitan_llama3_w2_unreduced", "torchtitan_llama3.toml",
       bug=("torchtitan_llama3_w2_unreduced.py", "never reduced")),
    _e("torchtitan_llama3_embedding_unreduced", "torchtitan_llama3.toml",
       bug=("torchtitan_llama3_embedding_unreduced.py", "never all-reduced")),
]
BY_ID = {e.id: e for e in CORPUS}


def bug_line(entry) -> str | None:
    """``examples/frameworks/<file>:<line>`` of the entry's ``# BUG`` line."""
    line = corpus.bug_line(entry, HERE)
    return line and f"examples/frameworks/{line}"
