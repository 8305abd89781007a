"""The quick start's MLP with a classic tensor-parallel bug: fc2 is called as a whole layer, so every
rank adds the bias to its partial product before the all-reduce and the sum holds world_size
copies of it.  Only ``forward`` differs from tp_mlp.py.

    entangle capture examples/quickstart/tp_mlp_bias_before_reduce.py --world-size 2 -o buggy.pt
    entangle check seq.pt buggy.pt --spec examples/quickstart/spec.toml
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn.functional as F

import tp_mlp


class MLP(tp_mlp.MLP):
    def forward(self, x):
        h = F.gelu(self.fc1(x))
        y = self.fc2(h)  # BUG: the bias is added on every rank, then summed with the partial products
        if self.world_size > 1:
            y = funcol.all_reduce(y, "sum", dist.group.WORLD)
        return y


def build(rank, world_size):
    return MLP(world_size), {"x": torch.randn(tp_mlp.TOKENS, tp_mlp.HIDDEN)}
