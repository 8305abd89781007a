"""Bug: the head's plan entry says ``colwise`` (each rank keeps its columns of the vocabulary)
where the logits are read whole (``colwise_gather_output``, HF's entry).  See hf_llama.py; spec
hf_llama.toml."""
import hf_llama
from hf_llama import GLOO_DERIVE  # noqa: F401  (confirm_gloo.py)


def build(rank, world_size):
    return hf_llama.build(rank, world_size, plan={"lm_head": "colwise"})  # BUG (head_colwise): logits left sharded
