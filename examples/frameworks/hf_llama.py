"""Hugging Face transformers: a 2-layer Llama with its built-in tensor-parallel plan
(``config.base_model_tp_plan``: q/k/v and gate/up ``colwise``, o and down ``rowwise``; the head
``lm_head`` ``colwise_gather_output``), applied as ``from_pretrained(..., tp_plan="auto")`` does:
``prepare_distribute_model`` builds the mesh, ``maybe_distribute_model`` shards the parameters and
installs the styles' forwards.  Tiny config in code, no download (``HF_HUB_OFFLINE=1``).

    entangle capture examples/frameworks/hf_llama.py -o seq.pt
    entangle capture examples/frameworks/hf_llama.py --world-size 2 -o dist.pt
    entangle check seq.pt dist.pt --spec examples/frameworks/hf_llama.toml
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402
from transformers.distributed import DistributedConfig  # noqa: E402

MODEL = LlamaForCausalLM
# examples/frameworks/confirm_gloo.py: the rotary table's copy HF keeps for dynamic scaling is a
# buffer the forward never reads (so no graph, nor the spec, names it): every rank holds the same
GLOO_DERIVE = {"buffer:model.rotary_emb.original_inv_freq": lambda seq, rank, world_size: seq}
BATCH, SEQ = 2, 8


def config():
    # 4 query and 4 key/value heads: the heads split evenly over 2 and 4 ranks
    return LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=32,
                       use_cache=False, tie_word_embeddings=False)


def build(rank, world_size, plan=None):
    model = MODEL(config())
    if world_size > 1:
        dc = DistributedConfig(tp_size=world_size, tp_plan=plan)
        dc, _, mesh = MODEL.prepare_distribute_model(dc)
        model = MODEL.maybe_distribute_model(model, dc, mesh)
    ids = torch.arange(BATCH * SEQ).reshape(BATCH, SEQ) % config().vocab_size
    return model, {"input_ids": ids}
