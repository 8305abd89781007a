"""A query projection with QK-norm over the whole projected width (OLMo-2 style q_norm) under a
torchtitan-style TP plan: wq ColwiseParallel, wo RowwiseParallel (parallelize_module,
use_local_output=True).  Each rank holds a slice of q's width, so the RMS statistic needs the
sum of squares of every rank's slice: it is all-reduced (functional collective) before the
division by the full width.  The norm's weight is sharded with q's width.
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

DIM, QDIM, BATCH, SEQ = 8, 8, 2, 3
EPS = 1e-6


class ShardedRMSNorm(nn.Module):
    def __init__(self, full_dim, world_size):
        super().__init__()
        self.full_dim = full_dim
        self.world_size = world_size
        self.weight = nn.Parameter(torch.empty(full_dim // world_size))

    def forward(self, x):
        sq = x.pow(2).sum(-1, keepdim=True)
        if self.world_size > 1:
            sq = funcol.all_reduce(sq, "sum", dist.group.WORLD)
        variance = sq / self.full_dim
        return self.weight * (x * torch.rsqrt(variance + EPS))


class QKNormProjection(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.wq = nn.Linear(DIM, QDIM, bias=False)
        self.q_norm = ShardedRMSNorm(QDIM, world_size)
        self.wo = nn.Linear(QDIM, DIM, bias=False)

    def forward(self, x):
        return self.wo(self.q_norm(self.wq(x)))


def build(rank, world_size):
    model = QKNormProjection(world_size)
    if world_size > 1:
        mesh = init_device_mesh("cpu", (world_size,))
        parallelize_module(model, mesh, {"wq": ColwiseParallel(), "wo": RowwiseParallel()})
    return model, {"x": torch.randn(BATCH, SEQ, DIM)}
