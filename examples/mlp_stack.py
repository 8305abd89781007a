"""A stack of N Megatron MLP blocks (examples/mlp.py) in sequence: the checker benchmark's model.

Each block is the tensor-parallel MLP of examples/mlp.py (column-parallel fc1, gelu, row-parallel
fc2 + all-reduce), reused as is; block ``i`` reads block ``i - 1``'s output.  Capture script
(``build(rank, world_size)``); the number of blocks is the module attribute ``LAYERS``, which
``benchmarks/bench_check_mlp.py`` sets before capturing.  FFN is divisible by 1, 2, 4 and 8 so
the same model runs at every benchmarked parallel degree.

    entangle capture examples/mlp_stack.py --world-size 8 -o /tmp/dist.pt
"""
import torch
import torch.nn as nn

from mlp import BATCH, HIDDEN, MLP, SEQ

LAYERS = 4
FFN = 40     # FFN/8 = 5 stays distinct from BATCH, SEQ, HIDDEN


class MLPStack(nn.Module):
    def __init__(self, world_size, layers):
        super().__init__()
        self.layers = nn.ModuleList(MLP(world_size, ffn=FFN) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def build(rank, world_size):
    model = MLPStack(world_size, LAYERS)
    x = torch.randn(BATCH, SEQ, HIDDEN, requires_grad=True)
    return model, {"x": x}


def spec_text(layers):
    """The input relation (and expected output relation) of an N-block stack, as spec TOML."""
    lines = ['[inputs]', '"input:x" = "replicate"']
    for i in range(layers):
        lines += [f'"param:layers.{i}.fc1.weight" = "shard(0)"', f'"param:layers.{i}.fc1.bias" = "shard(0)"',
                  f'"param:layers.{i}.fc2.weight" = "shard(1)"', f'"param:layers.{i}.fc2.bias" = "replicate"']
    lines += ['', '[outputs]', 'check = ["out"]', '', '[expect]', '"out" = "replicate"', '']
    return "\n".join(lines)
