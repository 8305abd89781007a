"""FSDP written by hand (the design of torch.distributed.fsdp's FULL_SHARD, with the parameters
sharded by rows): each linear layer's weight is split along dim 0 across the data-parallel
ranks, all-gathered for the forward, and its gradient is averaged over the ranks (divided by
the world size, then reduce-scattered) in the backward.  Each rank's loss is the mean over its
own part of the batch; the gradients of the mean over the whole batch come out sharded.
"""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

IN, HID, OUT, BATCH = 4, 8, 4, 8


class _AllGatherRows(torch.autograd.Function):
    @staticmethod
    def forward(ctx, shard):
        world_size = dist.get_world_size()
        full = torch.empty((shard.shape[0] * world_size,) + tuple(shard.shape[1:]), dtype=shard.dtype)
        dist.all_gather_into_tensor(full, shard.contiguous())
        return full

    @staticmethod
    def backward(ctx, grad_full):
        world_size = dist.get_world_size()
        grad_full = grad_full / world_size
        grad_shard = torch.empty((grad_full.shape[0] // world_size,) + tuple(grad_full.shape[1:]), dtype=grad_full.dtype)
        dist.reduce_scatter_tensor(grad_shard, grad_full.contiguous())
        return grad_shard


class FSDPLinear(nn.Module):
    def __init__(self, in_features, out_features, world_size):
        super().__init__()
        self.world_size = world_size
        self.weight = nn.Parameter(torch.empty(out_features // world_size, in_features))
        self.bias = nn.Parameter(torch.empty(out_features // world_size))

    def forward(self, x):
        if self.world_size == 1:
            return F.linear(x, self.weight, self.bias)
        return F.linear(x, _AllGatherRows.apply(self.weight), _AllGatherRows.apply(self.bias))


class Net(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.fc1 = FSDPLinear(IN, HID, world_size)
        self.fc2 = FSDPLinear(HID, OUT, world_size)

    def forward(self, x, target):
        out = self.fc2(torch.tanh(self.fc1(x)))
        return F.mse_loss(out, target)


def build(rank, world_size):
    return Net(world_size), {"x": torch.randn(BATCH // world_size, IN), "target": torch.randn(BATCH // world_size, OUT)}
