"""Hugging Face GPT-2 MLP (transformers/models/gpt2/modeling_gpt2.py: GPT2MLP over Conv1D, whose
weight is stored [in, out] and applied as addmm(bias, x, weight)), tensor parallel the way a
tp_plan lays it out: c_fc "colwise" (weight columns and bias split), c_proj "rowwise" (weight
rows split; Conv1D's addmm adds the bias, so each rank adds bias / world_size to its partial
product before the output hook all-reduces them).
"""
import math

import torch
import torch.distributed as dist
from torch import nn

N_EMBD, INNER, BATCH, SEQ = 4, 8, 2, 3


class _AllReduceForward(torch.autograd.Function):
    """All-reduce forward, identity backward (what a rowwise layer's output hook does)."""

    @staticmethod
    def forward(ctx, x):
        x = x.clone()
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


class _AllReduceBackward(torch.autograd.Function):
    """Identity forward, all-reduce backward (a colwise layer's input hook)."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad)
        return grad


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class ColwiseConv1D(nn.Module):
    def __init__(self, nf, nx, world_size):
        super().__init__()
        self.world_size = world_size
        self.nf = nf // world_size
        self.weight = nn.Parameter(torch.empty(nx, self.nf))
        self.bias = nn.Parameter(torch.zeros(self.nf))

    def forward(self, x):
        if self.world_size > 1:
            x = _AllReduceBackward.apply(x)
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class RowwiseConv1D(nn.Module):
    def __init__(self, nf, nx, world_size):
        super().__init__()
        self.world_size = world_size
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx // world_size, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        bias = self.bias / self.world_size  # each rank adds its share; the all-reduce sums them
        x = torch.addmm(bias, x.view(-1, x.size(-1)), self.weight)
        if self.world_size > 1:
            x = _AllReduceForward.apply(x)
        return x.view(size_out)


class GPT2MLP(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.c_fc = ColwiseConv1D(INNER, N_EMBD, world_size)
        self.c_proj = RowwiseConv1D(N_EMBD, INNER, world_size)

    def forward(self, hidden_states):
        hidden_states = self.c_fc(hidden_states)
        hidden_states = gelu_new(hidden_states)
        return self.c_proj(hidden_states)


def build(rank, world_size):
    return GPT2MLP(world_size), {"hidden_states": torch.randn(BATCH, SEQ, N_EMBD, requires_grad=True)}
