"""FSDP (torch.distributed.fsdp, FlatParameter) gradient reduction written out for one linear
layer: each rank's gradient of its micro-batch's mean loss, flattened into the flat parameter's
layout (weight then bias), pre-divided by the gradient predivide factor, reduce-scattered, and
post-divided by world_size / predivide (FSDP's _get_gradient_predivide_factor split), so each
rank holds its shard of the data-parallel mean gradient."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

IN, OUT, LOCAL_BATCH = 3, 4, 2


def get_gradient_predivide_factor(world_size):
    factor = 1
    while world_size % factor == 0 and world_size / factor > factor:
        factor *= 2
    return float(factor)


class FlatParamLinear(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.world_size = world_size
        self.weight = nn.Parameter(torch.empty(OUT, IN))
        self.bias = nn.Parameter(torch.empty(OUT))

    def forward(self, x, y):
        # gradient of ((x W^T + b - y)^2).mean() on this rank's batch
        err = torch.addmm(self.bias, x, self.weight.t()) - y
        grad_out = 2.0 * err / err.numel()
        flat_grad = torch.cat([(grad_out.t() @ x).reshape(-1), grad_out.sum(dim=0)])
        if self.world_size == 1:
            return flat_grad
        predivide = get_gradient_predivide_factor(self.world_size)
        postdivide = self.world_size / predivide
        flat_grad = flat_grad / predivide
        sharded_grad = funcol.reduce_scatter_tensor(flat_grad, "sum", 0, dist.group.WORLD)
        return sharded_grad / postdivide


def build(rank, world_size):
    return FlatParamLinear(rank, world_size), {"x": torch.randn(LOCAL_BATCH * 2 // world_size, IN),
                                                "y": torch.randn(LOCAL_BATCH * 2 // world_size, OUT)}
