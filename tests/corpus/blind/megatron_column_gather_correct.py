"""Megatron-LM ColumnParallelLinear with gather_output=True (a TP output projection whose result
every rank needs whole), as in megatron/core/tensor_parallel/layers.py and mappings.py.

copy_to_tensor_model_parallel_region: identity forward, all-reduce of the input's gradient
backward.  gather_from_tensor_model_parallel_region: all-gather along the last dim forward, the
rank's slice of the gradient backward.
"""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

HIDDEN, OUT, BATCH, SEQ = 6, 8, 2, 3


class _CopyToModelParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_):
        return input_

    @staticmethod
    def backward(ctx, grad_output):
        grad_output = grad_output.clone()
        dist.all_reduce(grad_output)
        return grad_output


class _GatherFromModelParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_):
        world_size = dist.get_world_size()
        tensor_list = [torch.empty_like(input_) for _ in range(world_size)]
        dist.all_gather(tensor_list, input_.contiguous())
        return torch.cat(tensor_list, dim=-1).contiguous()

    @staticmethod
    def backward(ctx, grad_output):
        world_size, rank = dist.get_world_size(), dist.get_rank()
        return torch.split(grad_output, grad_output.size(-1) // world_size, dim=-1)[rank].contiguous()


class ColumnParallelLinear(nn.Module):
    def __init__(self, input_size, output_size, world_size, gather_output=True):
        super().__init__()
        self.world_size = world_size
        self.gather_output = gather_output
        self.output_size_per_partition = output_size // world_size
        self.weight = nn.Parameter(torch.empty(self.output_size_per_partition, input_size))
        self.bias = nn.Parameter(torch.empty(self.output_size_per_partition))

    def forward(self, input_):
        if self.world_size > 1:
            input_ = _CopyToModelParallelRegion.apply(input_)
        output_parallel = F.linear(input_, self.weight, self.bias)
        if self.gather_output and self.world_size > 1:
            return _GatherFromModelParallelRegion.apply(output_parallel)
        return output_parallel


class Head(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.proj = ColumnParallelLinear(HIDDEN, OUT, world_size)

    def forward(self, x):
        return torch.tanh(self.proj(x))


def build(rank, world_size):
    return Head(world_size), {"x": torch.randn(SEQ, BATCH, HIDDEN, requires_grad=True)}
