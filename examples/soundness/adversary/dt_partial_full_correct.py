"""CORRECT twin of dt_partial_local_wrong: the Partial weight is reduced (full_tensor) before use."""
import torch
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial

B, K, F = 3, 4, 5


class M(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size
        w = torch.empty(F, K)
        if world_size > 1:
            w = DTensor.from_local(w, init_device_mesh("cpu", (world_size,)), [Partial()], run_check=False)
        self.weight = nn.Parameter(w)

    def forward(self, x):
        w = self.weight if self.ws == 1 else self.weight.full_tensor()
        return x @ w.t()


def build(rank, world_size):
    return M(world_size), {"x": torch.randn(B, K)}
