"""Megatron output layer, column parallel over the vocabulary (gather_output=False), followed by
the log-softmax over the vocabulary computed without gathering the logits (as
megatron.core.tensor_parallel.cross_entropy does: max and sum-of-exp all-reduced)."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

VOCAB, HIDDEN, SEQ, BATCH = 8, 4, 3, 2


class VocabParallelLogSoftmaxHead(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.world_size = rank, world_size
        self.weight = nn.Parameter(torch.empty(VOCAB // world_size, HIDDEN))

    def forward(self, hidden_states):
        vocab_parallel_logits = F.linear(hidden_states, self.weight)  # [s, b, v/tp]
        logits_max = torch.max(vocab_parallel_logits, dim=-1)[0]
        if self.world_size > 1:
            logits_max = funcol.all_reduce(logits_max, "max", dist.group.WORLD)
        vocab_parallel_logits = vocab_parallel_logits - logits_max.unsqueeze(dim=-1)
        sum_exp_logits = vocab_parallel_logits.exp().sum(dim=-1)
        if self.world_size > 1:
            sum_exp_logits = funcol.all_reduce(sum_exp_logits, "max", dist.group.WORLD)  # BUG: the partition sums reduced with MAX (copied from the max all-reduce above)
        return vocab_parallel_logits - torch.log(sum_exp_logits).unsqueeze(dim=-1)


def build(rank, world_size):
    model = VocabParallelLogSoftmaxHead(rank, world_size)
    return model, {"hidden_states": torch.randn(SEQ, BATCH, HIDDEN)}
