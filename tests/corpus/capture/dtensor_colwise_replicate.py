"""One DTensor linear layer, ``ColwiseParallel(output_layouts=Replicate())``: each rank computes
its columns of ``x @ W.T`` and DTensor all-gathers them.  Its backward splits the output gradient
along the columns and each rank takes its own part (``split(...)[rank]``): the graph of each rank
differs only in that index, which ranks traced one after another in one process used to get
wrong (issue 23: rank 1 took rank 0's part).  tests/test_capture_isolation.py runs each rank's
captured graph against that rank on gloo."""
import torch
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate
from torch.distributed.tensor.parallel import ColwiseParallel, parallelize_module


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 8, bias=False)

    def forward(self, x):
        return self.fc(x)


def build(rank, world_size):
    model = Net()
    if world_size > 1:
        mesh = init_device_mesh("cpu", (world_size,))
        model = parallelize_module(model, mesh, {"fc": ColwiseParallel(output_layouts=Replicate())})
    return model, {"x": torch.randn(3, 4, requires_grad=True)}
