"""Megatron-core: one GPT ``TransformerLayer`` from its local (no Transformer Engine) layer spec
(``get_gpt_layer_local_spec``: layer norms, fused-QKV ``ColumnParallelLinear``, Megatron's
``DotProductAttention`` with a causal mask, ``RowParallelLinear`` projection, the MLP), tensor
parallel over ``parallel_state``'s group; ``SEQUENCE_PARALLEL = True`` in a script importing this
module turns on Megatron's sequence parallelism (``config.sequence_parallel``: each rank holds its
rows of the sequence outside the attention and MLP).  Built as Megatron's unit tests build it
(``use_cpu_initialization=True``).

    entangle capture examples/frameworks/megatron_layer.py -o seq.pt
    entangle capture examples/frameworks/megatron_layer.py --world-size 2 -o dist.pt
    entangle check seq.pt dist.pt --spec examples/frameworks/megatron_layer.toml
"""
import torch
from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
from megatron.core.transformer.transformer_config import TransformerConfig
from megatron.core.transformer.transformer_layer import TransformerLayer

from _megatron import model_parallel

HIDDEN, HEADS, FFN, SEQ, BATCH = 16, 4, 32, 4, 2


def config(world_size, sequence_parallel=False, **kw):
    return TransformerConfig(num_layers=1, tensor_model_parallel_size=world_size, hidden_size=HIDDEN, ffn_hidden_size=FFN, num_attention_heads=HEADS,
                             use_cpu_initialization=True, bias_activation_fusion=False, masked_softmax_fusion=False,
                             bias_dropout_fusion=False, apply_rope_fusion=False, attention_dropout=0.0,
                             hidden_dropout=0.0, sequence_parallel=sequence_parallel, **kw)


class Layer(torch.nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        out, _context = self.layer(x, attention_mask=None)
        return out


def make_build(sequence_parallel=False, **kw):
    def build(rank, world_size):
        model_parallel(world_size)
        sp = sequence_parallel and world_size > 1
        layer = TransformerLayer(config(world_size, sequence_parallel=sp, **kw), get_gpt_layer_local_spec().submodules,
                                 layer_number=1)
        rows = SEQ // world_size if sp else SEQ       # [sequence, batch, hidden]: a rank's rows under SP
        return Layer(layer), {"x": torch.randn(rows, BATCH, HIDDEN, requires_grad=True)}
    return build


build = make_build()
