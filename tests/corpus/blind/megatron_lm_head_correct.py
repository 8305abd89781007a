"""Megatron-LM output layer with parallel_output=False: a ColumnParallelLinear over the
vocabulary whose logits are gathered (all-gather along the last dim) and fed to the ordinary
cross entropy, flattened to [s * b, vocab] as GPTModel.compute_language_model_loss does.
"""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

HIDDEN, VOCAB, SEQ, BATCH = 4, 8, 4, 2


class _CopyToModelParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_):
        return input_

    @staticmethod
    def backward(ctx, grad_output):
        grad_output = grad_output.clone()
        dist.all_reduce(grad_output)
        return grad_output


def _gather_along_last_dim(input_):
    world_size = dist.get_world_size()
    tensor_list = [torch.empty_like(input_) for _ in range(world_size)]
    dist.all_gather(tensor_list, input_.contiguous())
    output = torch.cat(tensor_list, dim=-1).contiguous()
    return output


def _split_along_last_dim(input_):
    world_size, rank = dist.get_world_size(), dist.get_rank()
    return torch.split(input_, input_.size(-1) // world_size, dim=-1)[rank].contiguous()


class _GatherFromModelParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_):
        return _gather_along_last_dim(input_)

    @staticmethod
    def backward(ctx, grad_output):
        return _split_along_last_dim(grad_output)


class OutputLayer(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.weight = nn.Parameter(torch.empty(VOCAB // world_size, HIDDEN))

    def forward(self, hidden_states, labels):
        if self.world_size > 1:
            hidden_states = _CopyToModelParallelRegion.apply(hidden_states)
        logits = F.linear(hidden_states, self.weight)
        if self.world_size > 1:
            logits = _GatherFromModelParallelRegion.apply(logits)
        return F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1))


def build(rank, world_size):
    hidden = torch.randn(SEQ, BATCH, HIDDEN, requires_grad=True)
    return OutputLayer(world_size), {"hidden_states": hidden, "labels": torch.zeros(SEQ, BATCH, dtype=torch.long)}
