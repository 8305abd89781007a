"""Megatron-LM sequence parallelism around a TP MLP (megatron/core/tensor_parallel/mappings.py).

The residual stream is split along the sequence (dim 0 of [s, b, h]).  LayerNorm runs on the
local sequence chunk; gather_from_sequence_parallel_region (all-gather along dim 0; backward
reduce-scatter) feeds the column-parallel fc1, and reduce_scatter_to_sequence_parallel_region
(reduce-scatter along dim 0; backward all-gather) takes fc2's partial sums back to the sequence
split.  LayerNorm's and fc2's bias gradients are each rank's part (Megatron all-reduces them in
the optimizer: allreduce_layernorm_grads).
"""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

HIDDEN, FFN, SEQ, BATCH = 4, 8, 4, 2


def _split_along_first_dim(input_):
    world_size, rank = dist.get_world_size(), dist.get_rank()
    local = input_.size(0) // world_size
    return input_[rank * local:(rank + 1) * local].contiguous()


def _gather_along_first_dim(input_):
    world_size = dist.get_world_size()
    output = torch.empty((input_.size(0) * world_size,) + tuple(input_.shape[1:]), dtype=input_.dtype)
    dist.all_gather_into_tensor(output, input_.contiguous())
    return output


def _reduce_scatter_along_first_dim(input_):
    world_size = dist.get_world_size()
    output = torch.empty((input_.size(0) // world_size,) + tuple(input_.shape[1:]), dtype=input_.dtype)
    dist.reduce_scatter_tensor(output, input_.contiguous())
    return output


class _GatherFromSequenceParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_):
        return _gather_along_first_dim(input_)

    @staticmethod
    def backward(ctx, grad_output):
        return _reduce_scatter_along_first_dim(grad_output)


class _ReduceScatterToSequenceParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_):
        return _reduce_scatter_along_first_dim(input_)

    @staticmethod
    def backward(ctx, grad_output):
        return _gather_along_first_dim(grad_output)


class SequenceParallelMLPBlock(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.ln = nn.LayerNorm(HIDDEN)
        self.fc1_weight = nn.Parameter(torch.empty(FFN // world_size, HIDDEN))
        self.fc1_bias = nn.Parameter(torch.empty(FFN // world_size))
        self.fc2_weight = nn.Parameter(torch.empty(HIDDEN, FFN // world_size))
        self.fc2_bias = nn.Parameter(torch.empty(HIDDEN))

    def forward(self, hidden_states):
        residual = hidden_states
        x = self.ln(hidden_states)
        if self.world_size > 1:
            x = _GatherFromSequenceParallelRegion.apply(x)
        x = F.gelu(F.linear(x, self.fc1_weight, self.fc1_bias))
        x = F.linear(x, self.fc2_weight)
        if self.world_size > 1:
            x = _ReduceScatterToSequenceParallelRegion.apply(x)
        return residual + x + self.fc2_bias


def build(rank, world_size):
    x = torch.randn(SEQ // world_size, BATCH, HIDDEN, requires_grad=True)
    return SequenceParallelMLPBlock(world_size), {"hidden_states": x}
