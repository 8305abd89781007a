"""Megatron-LM vocab-parallel cross entropy (megatron/core/tensor_parallel/cross_entropy.py).

Logits are split along the vocabulary.  Forward: the row max all-reduced (MAX) and subtracted,
the target's logit looked up on the rank that holds it and all-reduced, the sum of exponentials
all-reduced; loss = log(sum_exp) - predicted.  Backward (its own): softmax minus the one-hot
target on the owning rank, times the upstream gradient.
"""
import torch
import torch.distributed as dist
from torch import nn

VOCAB, SEQ, BATCH = 12, 3, 2


def _all_reduce(tensor, world_size, op=torch.distributed.ReduceOp.SUM):
    """In place over the tensor-parallel group (nothing to do on one rank)."""
    if world_size > 1:
        torch.distributed.all_reduce(tensor, op=op)


class _VocabParallelCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, vocab_parallel_logits, target, rank, world_size):
        logits_max = torch.max(vocab_parallel_logits, dim=-1)[0]
        _all_reduce(logits_max, world_size, op=torch.distributed.ReduceOp.MAX)
        vocab_parallel_logits = vocab_parallel_logits - logits_max.unsqueeze(dim=-1)

        partition_vocab_size = vocab_parallel_logits.size(-1)
        vocab_start_index = rank * partition_vocab_size
        vocab_end_index = vocab_start_index + partition_vocab_size
        target_mask = (target < vocab_start_index) | (target >= vocab_end_index)
        masked_target = target.clone() - vocab_start_index
        masked_target = masked_target.masked_fill(target_mask, 0)

        logits_2d = vocab_parallel_logits.view(-1, partition_vocab_size)
        masked_target_1d = masked_target.view(-1)
        arange_1d = torch.arange(start=0, end=logits_2d.size()[0])
        predicted_logits_1d = logits_2d[arange_1d, masked_target_1d]
        predicted_logits = predicted_logits_1d.clone().contiguous().view_as(target)
        predicted_logits = predicted_logits.masked_fill(target_mask, 0.0)
        _all_reduce(predicted_logits, world_size)

        exp_logits = torch.exp(vocab_parallel_logits)
        sum_exp_logits = exp_logits.sum(dim=-1)
        _all_reduce(sum_exp_logits, world_size)

        loss = torch.log(sum_exp_logits) - predicted_logits
        softmax = exp_logits / sum_exp_logits.unsqueeze(dim=-1)
        ctx.save_for_backward(softmax, target_mask, masked_target_1d)
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        softmax, target_mask, masked_target_1d = ctx.saved_tensors
        partition_vocab_size = softmax.size(-1)
        grad_2d = softmax.view(-1, partition_vocab_size)
        arange_1d = torch.arange(start=0, end=grad_2d.size()[0])
        softmax_update = 1.0 - target_mask.view(-1).to(softmax.dtype)
        one_hot = torch.zeros_like(grad_2d)
        one_hot[arange_1d, masked_target_1d] = softmax_update
        grad_input = (grad_2d - one_hot).view_as(softmax)
        grad_input = grad_input * grad_output.unsqueeze(dim=-1)
        return grad_input, None, None, None


class LMLoss(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.world_size = rank, world_size

    def forward(self, logits, labels):
        return _VocabParallelCrossEntropy.apply(logits, labels, self.rank, self.world_size)


def build(rank, world_size):
    logits = torch.randn(SEQ, BATCH, VOCAB // world_size, requires_grad=True)
    return LMLoss(rank, world_size), {"logits": logits, "labels": torch.zeros(SEQ, BATCH, dtype=torch.long)}
