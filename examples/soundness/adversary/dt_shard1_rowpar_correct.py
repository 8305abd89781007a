"""CORRECT twin of dt_shard1_as_rows_wrong: the Shard(1) weight is used row-parallel: each rank
multiplies its columns of x by its local block and the partial products are all-reduced."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Shard

B, K, F = 3, 4, 4


class M(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.ws = rank, world_size
        w = torch.empty(F, K // world_size)
        if world_size > 1:
            w = DTensor.from_local(w, init_device_mesh("cpu", (world_size,)), [Shard(1)], run_check=False)
        self.weight = nn.Parameter(w)

    def forward(self, x):
        if self.ws == 1:
            return x @ self.weight.t()
        n = K // self.ws
        y = x[:, self.rank * n:(self.rank + 1) * n] @ self.weight.to_local().t()
        return funcol.all_reduce(y, "sum", dist.group.WORLD)


def build(rank, world_size):
    return M(rank, world_size), {"x": torch.randn(B, K)}
