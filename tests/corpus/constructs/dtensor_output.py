"""A DTensor program that returns a DTensor (``ColwiseParallel(use_local_output=False)``): each rank's
graph returns its local shard; joint, the output's tangent is a DTensor too (its local shard, port
``tangent:out``, placement recorded as the output's)."""
import torch
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, parallelize_module

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 16, bias=False)
    def forward(self, x):
        return self.fc(x)

def build(rank, world_size):
    m = M()
    if world_size > 1:
        mesh = init_device_mesh("cpu", (world_size,))
        parallelize_module(m, mesh, {"fc": ColwiseParallel(use_local_output=False)})
    return m, {"x": torch.randn(4, 8)}
