"""Sequence-parallel transformer MLP block (Megatron-LM with --sequence-parallel).

Activations are sequence-first, [SEQ, BATCH, HIDDEN], and between blocks each rank holds a shard
of the sequence: x is [SEQ / W, BATCH, HIDDEN] on rank r.  The block is

    out = x + fc2(gelu(fc1(all_gather_seq(layernorm(x)))))      # fc2 ends in a reduce-scatter

* LayerNorm runs on the sequence shard (its weight and bias are replicated);
* fc1 (column-parallel) all-gathers the sequence first (gather_from_sp);
* fc2 (row-parallel) reduce-scatters along the sequence (reduce_scatter_to_sp) and then adds its
  replicated bias; the residual add is again on the sequence shard.

At world_size 1 there is no collective: the sequential block on the whole sequence.

Regenerate graphs/seqpar_block_tp2::

    python examples/seqpar_block.py
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from mlp import ColumnParallelLinear, RowParallelLinear

# Pairwise distinct, also after sharding (SEQ/2 = 5, FFN/2 = 14).
SEQ, BATCH, HIDDEN, FFN = 10, 3, 8, 28


class SequenceParallelMLPBlock(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.ln = nn.LayerNorm(HIDDEN)
        self.fc1 = ColumnParallelLinear(HIDDEN, FFN, world_size, sequence_parallel=True)
        self.fc2 = RowParallelLinear(FFN, HIDDEN, world_size, sequence_parallel=True)

    def forward(self, x):                 # x: [SEQ / W, BATCH, HIDDEN]
        h = self.ln(x)
        h = F.gelu(self.fc1(h))           # [SEQ, BATCH, FFN / W]
        y = self.fc2(h)                   # [SEQ / W, BATCH, HIDDEN]
        return x + y


def build(rank, world_size):
    if SEQ % world_size:
        raise ValueError(f"SEQ = {SEQ} is not divisible by world size {world_size}")
    model = SequenceParallelMLPBlock(world_size)
    x = torch.randn(SEQ // world_size, BATCH, HIDDEN, requires_grad=True)
    return model, {"x": x}


SPEC = """\
# Input relation of the sequence-parallel MLP block (examples/seqpar_block.py).
# Activations are [seq, batch, hidden]; the block input and output are sharded along the sequence.
[inputs]
"input:x" = "shard(0)"
"param:ln.weight" = "replicate"
"param:ln.bias" = "replicate"
"param:fc1.weight" = "shard(0)"
"param:fc1.bias" = "shard(0)"
"param:fc2.weight" = "shard(1)"
"param:fc2.bias" = "replicate"

[outputs]
check = ["out"]

[expect]
"out" = "shard(0)"
"""

GRAPHS = [
    ("seqpar_block_tp2", 2, False, False, SPEC),
]

if __name__ == "__main__":
    from entangle_py.frontend.capture import regenerate_examples
    regenerate_examples(__file__, GRAPHS)
