"""torchtitan-style FeedForward (SwiGLU) under a DTensor TP plan, with w2 done by hand.

w1 and w3 are ColwiseParallel (parallelize_module); w2 is a custom row-parallel projection that
multiplies the local tensors (as a fused kernel would) and wraps its local product back into a
DTensor with DTensor.from_local: the product of local shards is a Partial sum, which
redistributing to Replicate all-reduces.
"""
import torch
import torch.nn.functional as F
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
from torch.distributed.tensor.parallel import ColwiseParallel, parallelize_module

DIM, HIDDEN, BATCH, SEQ = 8, 16, 2, 4


class FeedForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Linear(DIM, HIDDEN, bias=False)
        self.w2 = nn.Parameter(torch.empty(DIM, HIDDEN))
        self.w3 = nn.Linear(DIM, HIDDEN, bias=False)
        self.mesh = None

    def forward(self, x):
        h = F.silu(self.w1(x)) * self.w3(x)
        if self.mesh is None:
            return F.linear(h, self.w2)
        out_local = F.linear(h, self.w2.to_local())
        out = DTensor.from_local(out_local, self.mesh, [Replicate()], run_check=False)  # BUG
        return out.redistribute(self.mesh, [Replicate()]).to_local()


def build(rank, world_size):
    model = FeedForward()
    if world_size > 1:
        mesh = init_device_mesh("cpu", (world_size,))
        parallelize_module(model, mesh, {"w1": ColwiseParallel(), "w3": ColwiseParallel()})
        model.w2 = nn.Parameter(distribute_tensor(model.w2.data, mesh, [Shard(1)]))
        model.mesh = mesh
    return model, {"x": torch.randn(BATCH, SEQ, DIM, requires_grad=True)}
