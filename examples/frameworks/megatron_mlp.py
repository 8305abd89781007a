"""Megatron-core: its MLP block (``ColumnParallelLinear`` fc1, GELU, ``RowParallelLinear`` fc2),
tensor parallel over ``parallel_state.initialize_model_parallel(W)``'s group, as Megatron's own
unit tests build it (``use_cpu_initialization=True``: the weights are made on the CPU, here on
``meta``).  The sequential program is the same block at world size 1 (no process group: the
parallel layers are plain linears).  ``megatron_mlp_sp.py``: the same block with Megatron's
sequence parallelism (``config.sequence_parallel``).  Megatron returns ``(output, bias)``; fc2's bias is added
inside (``add_bias_linear=True``, no bias fusion).

    entangle capture examples/frameworks/megatron_mlp.py -o seq.pt
    entangle capture examples/frameworks/megatron_mlp.py --world-size 2 -o dist.pt
    entangle check seq.pt dist.pt --spec examples/frameworks/megatron_mlp.toml
"""
import torch
from megatron.core.tensor_parallel import ColumnParallelLinear, RowParallelLinear
from megatron.core.transformer.mlp import MLP, MLPSubmodules
from megatron.core.transformer.transformer_config import TransformerConfig

from _megatron import model_parallel

HIDDEN, FFN, SEQ, BATCH = 16, 32, 4, 2


def config(world_size, **kw):
    return TransformerConfig(num_layers=1, tensor_model_parallel_size=world_size, hidden_size=HIDDEN, ffn_hidden_size=FFN, num_attention_heads=4,
                             use_cpu_initialization=True, bias_activation_fusion=False,
                             add_bias_linear=True, **kw)


class Block(torch.nn.Module):
    """The MLP's output with its bias added (Megatron returns them apart for a fused add)."""

    def __init__(self, mlp):
        super().__init__()
        self.mlp = mlp

    def forward(self, x):
        out, bias = self.mlp(x)
        return out if bias is None else out + bias


def make_build(sequence_parallel=False, fc1=ColumnParallelLinear, fc2=RowParallelLinear):
    def build(rank, world_size):
        model_parallel(world_size)
        sp = sequence_parallel and world_size > 1
        mlp = MLP(config(world_size, sequence_parallel=sp), MLPSubmodules(linear_fc1=fc1, linear_fc2=fc2))
        # Megatron's layout: [sequence, batch, hidden]; under sequence parallelism a rank holds its
        # rows of the sequence (fc1 all-gathers them, fc2 reduce-scatters its partial sums)
        rows = SEQ // world_size if sp else SEQ
        return Block(mlp), {"x": torch.randn(rows, BATCH, HIDDEN, requires_grad=True)}
    return build


build = make_build()
