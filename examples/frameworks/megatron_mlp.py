"""Megatron-core: its MLP block (``ColumnParallelLinear`` fc1, GELU, ``RowParallelLinear`` fc2),
tensor parallel over ``parallel_state.initialize_model_parallel(W)``'s group, as Megatron's own
unit tests build it (``use_cpu_initialization=True``: the weights are made on the CPU, here on
``meta``).  The sequential program is the same block at world size 1 (no process group: the
parallel layers are plain linears).  Megatron returns ``(output, bias)``; fc2's bias is added
inside (``add_bias_linear=True``, no bias fusion).

    entangle capture examples/frameworks/megatron_mlp.py -o seq.pt
    entangle capture examples/frameworks/megatron_mlp.py --world-size 2 -o dist.pt
    entangle check seq.pt dist.pt --spec examples/frameworks/megatron_mlp.toml
"""
import os

# as Megatron's launch scripts set it for tensor parallelism (its linear layers otherwise warn once,
# marking a function attribute, which TorchDynamo does not trace)
os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from megatron.core import parallel_state  # noqa: E402
from megatron.core.tensor_parallel import ColumnParallelLinear, RowParallelLinear  # noqa: E402
from megatron.core.transformer.mlp import MLP, MLPSubmodules  # noqa: E402
from megatron.core.transformer.transformer_config import TransformerConfig  # noqa: E402

HIDDEN, FFN, SEQ, BATCH = 16, 32, 4, 2


def config(**kw):
    return TransformerConfig(num_layers=1, hidden_size=HIDDEN, ffn_hidden_size=FFN, num_attention_heads=4,
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


def model_parallel(world_size):
    """Megatron's groups for tensor parallelism of ``world_size``.  Its parallel layers need a
    process group even at TP 1: the sequential program (world size 1, where capture starts none)
    gets a one-rank gloo group of its own, which communicates nothing."""
    if world_size == 1 and not dist.is_initialized():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    parallel_state.destroy_model_parallel()
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=world_size)


def build(rank, world_size):
    model_parallel(world_size)
    mlp = MLP(config(), MLPSubmodules(linear_fc1=ColumnParallelLinear, linear_fc2=RowParallelLinear))
    # Megatron's layout: [sequence, batch, hidden]
    return Block(mlp), {"x": torch.randn(SEQ, BATCH, HIDDEN, requires_grad=True)}
