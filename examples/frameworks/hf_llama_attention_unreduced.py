"""Bug: the attention's output projection ``o_proj`` given the plan entry of a style the user
registered for the MLP's ``down_proj`` (``RowwiseParallel(output_layouts=Partial())``, meant to
defer the reduction to a fused add that was never written): each rank adds its partial sums of
the attention output to the residual stream.  See hf_llama.py; spec hf_llama.toml."""
from torch.distributed.tensor import Partial
from transformers.distributed.tensor_parallel import ALL_PARALLEL_STYLES, RowwiseParallel

import hf_llama
from hf_llama import GLOO_DERIVE  # noqa: F401  (confirm_gloo.py)

ALL_PARALLEL_STYLES.register("rowwise_partial", RowwiseParallel(output_layouts=Partial()))


def build(rank, world_size):
    return hf_llama.build(rank, world_size, plan={"model.layers.*.self_attn.o_proj": "rowwise_partial"})  # BUG (attention_unreduced): the attention's partial sums
