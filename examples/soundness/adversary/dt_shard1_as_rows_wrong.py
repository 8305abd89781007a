"""WRONG: a DTensor weight [F, K] placed Shard(1) (each rank holds K/2 input columns); the forward
reads its local [F, K/2] as if it were a block of the transposed weight's rows (x @ local), then
all-gathers the features: x @ W, not x @ W^T."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Shard

B, K, F = 3, 4, 4     # square, so that the misread shapes line up


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size
        w = torch.empty(F, K // world_size)
        if world_size > 1:
            w = DTensor.from_local(w, init_device_mesh("cpu", (world_size,)), [Shard(1)], run_check=False)
        self.weight = nn.Parameter(w)

    def forward(self, x):
        if self.ws == 1:
            return x @ self.weight.t()
        y = x @ self.weight.to_local()                   # BUG: the local block is W[:, cols], not W^T[:, cols]
        return funcol.all_gather_tensor(y, 1, dist.group.WORLD)


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B, K)}
