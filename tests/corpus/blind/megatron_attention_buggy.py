"""Megatron-LM ParallelAttention (self-attention, causal), tensor parallel over heads.

query_key_value is a ColumnParallelLinear whose output, per head, is [q; k; v] (Megatron's fused
layout), so a rank's shard is a contiguous block of heads; dense is a RowParallelLinear
(all-reduce, then the bias).  Shapes are Megatron's [sq, b, np, hn].
"""
import math

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

HIDDEN, HEADS, SEQ, BATCH = 8, 4, 4, 2


class _CopyToModelParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_):
        return input_

    @staticmethod
    def backward(ctx, grad_output):
        grad_output = grad_output.clone()
        dist.all_reduce(grad_output)
        return grad_output


class _ReduceFromModelParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_):
        input_ = input_.clone()
        dist.all_reduce(input_)
        return input_

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class ParallelAttention(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.num_attention_heads = HEADS
        self.hidden_size_per_partition = HIDDEN // world_size
        self.num_attention_heads_per_partition = HEADS // world_size
        self.hidden_size_per_attention_head = self.hidden_size_per_partition // self.num_attention_heads  # BUG
        self.query_key_value = nn.Linear(HIDDEN, 3 * self.hidden_size_per_partition)
        self.dense_weight = nn.Parameter(torch.empty(HIDDEN, self.hidden_size_per_partition))
        self.dense_bias = nn.Parameter(torch.empty(HIDDEN))

    def forward(self, hidden_states):
        if self.world_size > 1:
            hidden_states = _CopyToModelParallelRegion.apply(hidden_states)
        mixed_x_layer = self.query_key_value(hidden_states)
        hn = self.hidden_size_per_attention_head
        new_tensor_shape = mixed_x_layer.size()[:-1] + (-1, 3 * hn)
        mixed_x_layer = mixed_x_layer.view(*new_tensor_shape)
        query_layer, key_layer, value_layer = torch.split(mixed_x_layer, hn, dim=-1)

        sq, b, np_, _ = query_layer.shape
        sk = key_layer.size(0)
        q = query_layer.reshape(sq, b * np_, hn).transpose(0, 1)
        k = key_layer.reshape(sk, b * np_, hn).transpose(0, 1)
        norm_factor = math.sqrt(hn)
        scores = torch.bmm(q, k.transpose(1, 2)) / norm_factor
        scores = scores.view(b, np_, sq, sk)
        causal = torch.ones(sq, sk, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(causal, -10000.0)
        probs = F.softmax(scores, dim=-1)

        v = value_layer.reshape(sk, b * np_, hn).transpose(0, 1)
        context = torch.bmm(probs.view(b * np_, sq, sk), v)
        context = context.view(b, np_, sq, hn).permute(2, 0, 1, 3).contiguous()
        context = context.view(sq, b, np_ * hn)

        output_parallel = F.linear(context, self.dense_weight)
        if self.world_size > 1:
            output_parallel = _ReduceFromModelParallelRegion.apply(output_parallel)
        return output_parallel + self.dense_bias


def build(rank, world_size):
    return ParallelAttention(world_size), {"hidden_states": torch.randn(SEQ, BATCH, HIDDEN, requires_grad=True)}
