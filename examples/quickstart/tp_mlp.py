"""Quick start: a two-layer MLP, tensor parallel over the ranks (Megatron style).

A capture script defines ``build(rank, world_size) -> (model, inputs)``: the model as rank ``rank``
of ``world_size`` holds it, and the named inputs of one forward call (``model(**inputs)``).
``world_size == 1`` is the single-device program, the specification.

* fc1 is column parallel: each rank holds FFN / world_size rows of its weight and bias.
* fc2 is row parallel: each rank holds FFN / world_size columns of its weight; the partial
  products are summed over the ranks (all-reduce), then the bias, held whole by every rank, is added.

    entangle capture examples/quickstart/tp_mlp.py -o seq.pt
    entangle capture examples/quickstart/tp_mlp.py --world-size 2 -o dist.pt
    entangle check seq.pt dist.pt --spec examples/quickstart/spec.toml
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

TOKENS, HIDDEN, FFN = 4, 8, 16


class MLP(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.fc1 = nn.Linear(HIDDEN, FFN // world_size)
        self.fc2 = nn.Linear(FFN // world_size, HIDDEN)

    def forward(self, x):
        h = F.gelu(self.fc1(x))
        y = F.linear(h, self.fc2.weight)
        if self.world_size > 1:
            y = funcol.all_reduce(y, "sum", dist.group.WORLD)
        return y + self.fc2.bias


def build(rank, world_size):
    return MLP(world_size), {"x": torch.randn(TOKENS, HIDDEN)}
