"""Bug: ``down_proj`` under a style of the user's own, ``RowwiseParallel(output_layouts=Partial())``
(registered next to HF's styles, to keep the MLP's output partial): nothing reduces it, so each
rank adds its partial sums to the residual stream.  See hf_llama.py; spec hf_llama.toml."""
from torch.distributed.tensor import Partial
from transformers.distributed.tensor_parallel import ALL_PARALLEL_STYLES, RowwiseParallel

import hf_llama
from hf_llama import GLOO_DERIVE  # noqa: F401  (confirm_gloo.py)

ALL_PARALLEL_STYLES.register("rowwise_partial", RowwiseParallel(output_layouts=Partial()))  # BUG (down_unreduced): partial sums left unreduced


def build(rank, world_size):
    return hf_llama.build(rank, world_size, plan={"model.layers.*.mlp.down_proj": "rowwise_partial"})
