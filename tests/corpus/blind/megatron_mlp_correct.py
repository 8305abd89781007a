"""Megatron-LM style tensor-parallel MLP: ColumnParallelLinear -> GeLU -> RowParallelLinear.

Mappings as in megatron/core/tensor_parallel/mappings.py: copy_to_tensor_model_parallel_region
(identity forward, all-reduce backward) before the column-parallel layer and
reduce_from_tensor_model_parallel_region (all-reduce forward, identity backward) after the
row-parallel product; the row-parallel bias is added once, after the reduction.
"""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

HIDDEN, FFN, BATCH, SEQ = 8, 16, 2, 4


class _CopyToModelParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_):
        return input_

    @staticmethod
    def backward(ctx, grad_output):
        grad = grad_output.clone()
        dist.all_reduce(grad)
        return grad


class _ReduceFromModelParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_):
        out = input_.clone()
        dist.all_reduce(out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


def copy_to_tensor_model_parallel_region(x, world_size):
    return x if world_size == 1 else _CopyToModelParallelRegion.apply(x)


def reduce_from_tensor_model_parallel_region(x, world_size):
    return x if world_size == 1 else _ReduceFromModelParallelRegion.apply(x)


class ColumnParallelLinear(nn.Module):
    def __init__(self, in_features, out_features, world_size):
        super().__init__()
        self.world_size = world_size
        self.weight = nn.Parameter(torch.empty(out_features // world_size, in_features))
        self.bias = nn.Parameter(torch.empty(out_features // world_size))

    def forward(self, x):
        x = copy_to_tensor_model_parallel_region(x, self.world_size)
        return F.linear(x, self.weight, self.bias)


class RowParallelLinear(nn.Module):
    def __init__(self, in_features, out_features, world_size):
        super().__init__()
        self.world_size = world_size
        self.weight = nn.Parameter(torch.empty(out_features, in_features // world_size))
        self.bias = nn.Parameter(torch.empty(out_features))

    def forward(self, x):
        output_parallel = F.linear(x, self.weight)
        output = reduce_from_tensor_model_parallel_region(output_parallel, self.world_size)
        return output + self.bias


class ParallelMLP(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.dense_h_to_4h = ColumnParallelLinear(HIDDEN, FFN, world_size)
        self.dense_4h_to_h = RowParallelLinear(FFN, HIDDEN, world_size)

    def forward(self, hidden_states):
        intermediate = F.gelu(self.dense_h_to_4h(hidden_states))
        return self.dense_4h_to_h(intermediate)


def build(rank, world_size):
    model = ParallelMLP(world_size)
    x = torch.randn(SEQ, BATCH, HIDDEN, requires_grad=True)
    return model, {"hidden_states": x}
