"""DTensor tensor parallelism written with ``parallelize_module`` (issue 14 item 7): the ranks'
parameters are DTensors and ``entangle check`` takes their relation from the placements (printed
for review as an inferred relation); the specs below only say what the outputs must be.

* ``mlp``: x + fc2(relu(fc1(x))) with fc1 ``ColwiseParallel`` and fc2 ``RowwiseParallel``
  (no biases, as in Llama).  Bug ``partial_output``: fc2's output placement is ``Partial()``, so
  the row-parallel matmul's partial sums are never all-reduced (a missing redistribution: the
  local tensor of a Partial DTensor used as if replicated).
* ``sp``: the same block behind a layer norm, sequence parallel (``SequenceParallel`` norm on
  sequence-sharded rows, fc1 ``ColwiseParallel(input_layouts=Shard(1))``, fc2
  ``RowwiseParallel(output_layouts=Shard(1))``).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Partial, Replicate, Shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, SequenceParallel, parallelize_module

HIDDEN, FFN, SEQ = 8, 16, 4


class Block(nn.Module):
    def __init__(self, norm):
        super().__init__()
        self.norm = nn.LayerNorm(HIDDEN) if norm else None
        self.fc1 = nn.Linear(HIDDEN, FFN, bias=False)
        self.fc2 = nn.Linear(FFN, HIDDEN, bias=False)

    def forward(self, x):
        h = self.norm(x) if self.norm is not None else x
        return x + self.fc2(F.relu(self.fc1(h)))


def make_build(kind, bug=None):
    def build(rank, world_size):
        model = Block(norm=kind == "sp")
        seq = SEQ
        if world_size > 1:
            mesh = init_device_mesh("cpu", (world_size,))
            if kind == "mlp":
                out = Partial() if bug == "partial_output" else Replicate()  # BUG (partial_output): never all-reduced
                plan = {"fc1": ColwiseParallel(), "fc2": RowwiseParallel(output_layouts=out)}
            else:
                plan = {"norm": SequenceParallel(), "fc1": ColwiseParallel(input_layouts=Shard(1)),
                        "fc2": RowwiseParallel(output_layouts=Shard(1))}
                seq = SEQ // world_size      # each rank holds its rows of the sequence
            model = parallelize_module(model, mesh, plan)
        return model, {"x": torch.randn(2, seq, HIDDEN)}
    return build
