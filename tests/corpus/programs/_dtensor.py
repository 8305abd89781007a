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

``bias=True``: both layers with biases (``nn.Linear``'s default).  ColwiseParallel shards fc1's bias
with its rows; RowwiseParallel keeps fc2's replicated and adds ``bias / W`` on every rank to its
partial sums before the all-reduce (reduce-scatter under ``sp``), DTensor's rule for Partial +
Replicate.  ``local=True``: fc2 as a kernel on the ranks' local shards (``to_local()``, as a fused
kernel takes plain tensors), its partial sums reduced by DTensor (``from_local(..., [Partial()])``
then ``redistribute``), the bias added to the sum (Megatron's RowParallelLinear).  Bugs:
``bias_every_rank``, the replicated bias added to each rank's partial sums (W copies of it summed);
``bias_after_reduce``, ``bias / W`` (DTensor's rule for the partial sums) added after the sum.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, SequenceParallel, parallelize_module

HIDDEN, FFN, SEQ = 8, 16, 4


class Block(nn.Module):
    def __init__(self, norm, bias=False):
        super().__init__()
        self.norm = nn.LayerNorm(HIDDEN) if norm else None
        self.fc1 = nn.Linear(HIDDEN, FFN, bias=bias)
        self.fc2 = nn.Linear(FFN, HIDDEN, bias=bias)
        self.local = None        # (mesh, output placement, bug): fc2 run on the local shards

    def forward(self, x):
        h = self.norm(x) if self.norm is not None else x
        a = F.relu(self.fc1(h))
        return x + (self.fc2(a) if self.local is None else self._fc2_local(a))

    def _fc2_local(self, a):
        mesh, out, bug = self.local
        # the bias's gradient: the sum of the output gradient over the rows a rank holds, a Partial
        # sum under sequence parallelism (each rank its rows), the whole sum otherwise
        grads = [Partial()] if out == Shard(1) else [Replicate()]
        w, b = self.fc2.weight.to_local(), self.fc2.bias.to_local(grad_placements=grads)
        if bug == "bias_every_rank":
            y = F.linear(a, w, b)  # BUG (bias_every_rank): the replicated bias added to every rank's partial sums
        else:
            y = F.linear(a, w)
        y = DTensor.from_local(y, mesh, [Partial()]).redistribute(mesh, [out]).to_local()
        if bug == "bias_after_reduce":
            y = y + b / mesh.size()  # BUG (bias_after_reduce): a share of the bias added after the sum
        elif bug != "bias_every_rank":
            y = y + b                 # the bias added once, to the summed rows
        return y


def make_build(kind, bug=None, bias=False, local=False):
    def build(rank, world_size):
        model = Block(norm=kind == "sp", bias=bias)
        seq = SEQ
        if world_size > 1:
            mesh = init_device_mesh("cpu", (world_size,))
            if kind == "mlp":
                out = Partial() if bug == "partial_output" else Replicate()  # BUG (partial_output): never all-reduced
                plan = {"fc1": ColwiseParallel(), "fc2": RowwiseParallel(output_layouts=out)}
            else:
                out = Shard(1)
                plan = {"norm": SequenceParallel(), "fc1": ColwiseParallel(input_layouts=Shard(1)),
                        "fc2": RowwiseParallel(output_layouts=Shard(1))}
                seq = SEQ // world_size      # each rank holds its rows of the sequence
            model = parallelize_module(model, mesh, plan)
            if local:
                model.local = (mesh, out, bug)
        return model, {"x": torch.randn(2, seq, HIDDEN)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_dtensor.py:<name>`, and `entangle capture tests/corpus/programs/_dtensor.py:<name>` captures one).
dtensor_bias_mlp_after_reduce = make_build("mlp", bug="bias_after_reduce", bias=True, local=True)
dtensor_bias_mlp_correct = make_build("mlp", bias=True)
dtensor_bias_mlp_every_rank = make_build("mlp", bug="bias_every_rank", bias=True, local=True)
dtensor_bias_mlp_local_correct = make_build("mlp", bias=True, local=True)
dtensor_bias_sp_correct = make_build("sp", bias=True)
dtensor_bias_sp_every_rank = make_build("sp", bug="bias_every_rank", bias=True, local=True)
dtensor_bias_sp_local_correct = make_build("sp", bias=True, local=True)
dtensor_mlp_correct = make_build("mlp")
dtensor_mlp_partial_output = make_build("mlp", bug="partial_output")
dtensor_sp_correct = make_build("sp")
