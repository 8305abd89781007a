"""Hugging Face transformers: a 2-layer Qwen2 (biased q/k/v projections, grouped-query attention)
with its built-in tensor-parallel plan, applied as ``from_pretrained(..., tp_plan="auto")``
applies it: see hf_llama.py.  Spec: hf_llama.toml (forward), hf_llama_joint.toml (joint)."""
import hf_llama
from transformers import Qwen2Config, Qwen2ForCausalLM

hf_llama.MODEL = Qwen2ForCausalLM


def config():
    # 4 query heads and 2 key/value heads: 2 ranks split both (4 ranks would split the KV heads
    # below one per rank)
    return Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                       use_cache=False, tie_word_embeddings=False)


hf_llama.config = config
build = hf_llama.build
GLOO_DERIVE = hf_llama.GLOO_DERIVE
