"""Megatron-LM vocab-parallel cross-entropy (TP 2) with ignored targets (-100), mean over the
targets that count.

The rank holds logits [tokens, vocab / W] for its vocabulary range [start, end).  As in
_VocabParallelCrossEntropy: the max is all-reduced, a target outside the range (including -100)
is masked to 0 and its predicted logit zeroed, the predicted logits and the sums of exp are
all-reduced.  Ignored targets then contribute nothing and are not counted in the mean.
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

TOKENS, VOCAB = 8, 12
IGNORE_INDEX = -100


class VocabParallelCrossEntropy(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.world_size = rank, world_size
        self.per_partition = VOCAB // world_size

    def forward(self, logits, target):
        logits_max = logits.max(dim=-1).values
        if self.world_size > 1:
            logits_max = funcol.all_reduce(logits_max, "max", dist.group.WORLD)
        logits = logits - logits_max.unsqueeze(-1)
        start = self.rank * self.per_partition
        end = start + self.per_partition
        target_mask = (target < start) | (target >= end)
        masked_target = (target - start).masked_fill(target_mask, 0)
        predicted = logits.gather(-1, masked_target.unsqueeze(-1)).squeeze(-1)
        predicted = predicted.masked_fill(target == IGNORE_INDEX, 0.0)  # BUG: only ignored targets zeroed, not other ranks' targets
        sum_exp = logits.exp().sum(dim=-1)
        if self.world_size > 1:
            predicted = funcol.all_reduce(predicted, "sum", dist.group.WORLD)
            sum_exp = funcol.all_reduce(sum_exp, "sum", dist.group.WORLD)
        per_token = torch.log(sum_exp) - predicted
        valid = target != IGNORE_INDEX
        per_token = per_token.masked_fill(~valid, 0.0)
        return per_token.sum() / valid.sum()


def build(rank, world_size):
    target = torch.tensor([3, IGNORE_INDEX, 11, 0, 6, IGNORE_INDEX, 5, 9])
    return VocabParallelCrossEntropy(rank, world_size), {
        "logits": torch.randn(TOKENS, VOCAB // world_size), "target": target}
