"""DeepSpeed ZeRO stage 3 written out (deepspeed/runtime/zero/stage3.py's design): every
parameter is a flat tensor partitioned evenly across the data-parallel ranks.  Before a layer
runs, its partitions are all-gathered into the full weight; in the backward the weight's
gradient is reduce-scattered, so each rank keeps the gradient of its own partition.  The batch
is split across ranks; each rank's loss is its squared error summed over its samples and divided
by the global batch size, so the ranks' losses add up to the mean over the whole batch.
"""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

IN, HID, OUT, BATCH = 4, 6, 3, 8


class _GatherParam(torch.autograd.Function):
    @staticmethod
    def forward(ctx, partition, shape):
        world_size = dist.get_world_size()
        flat = torch.empty(partition.numel() * world_size, dtype=partition.dtype)
        dist.all_gather_into_tensor(flat, partition.contiguous())
        return flat.view(shape)

    @staticmethod
    def backward(ctx, grad_full):
        world_size = dist.get_world_size()
        grad_flat = grad_full.contiguous().view(-1)
        grad_partition = torch.empty(grad_flat.numel() // world_size, dtype=grad_flat.dtype)
        dist.reduce_scatter_tensor(grad_partition, grad_flat)
        return grad_partition, None


class Zero3MLP(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.w1 = nn.Parameter(torch.empty(HID * IN // world_size))
        self.w2 = nn.Parameter(torch.empty(OUT * HID // world_size))

    def full(self, partition, shape):
        if self.world_size == 1:
            return partition.view(shape)
        return _GatherParam.apply(partition, shape)

    def forward(self, x, y):
        h = F.relu(F.linear(x, self.full(self.w1, (HID, IN))))
        pred = F.linear(h, self.full(self.w2, (OUT, HID)))
        global_batch = x.shape[0] * self.world_size
        return (pred - y).pow(2).sum() / global_batch


def build(rank, world_size):
    x = torch.randn(BATCH // world_size, IN)
    y = torch.randn(BATCH // world_size, OUT)
    return Zero3MLP(world_size), {"x": x, "y": y}
