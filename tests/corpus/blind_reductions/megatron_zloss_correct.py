"""PaLM / Megatron-style z-loss over vocab-parallel logits (TP 2).

Each rank holds a slice of the vocabulary (logits [tokens, vocab / W]).  logsumexp over the whole
vocabulary: the max is all-reduced (MAX), each rank sums exp(logits - max) over its slice, the sums
are all-reduced (SUM), lse = log(sum) + max.  z-loss = coeff * mean over tokens of lse^2.
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

TOKENS, VOCAB = 6, 16
Z_COEFF = 1e-4


class VocabParallelZLoss(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size

    def forward(self, logits):
        logits_max = logits.max(dim=-1, keepdim=True).values
        if self.world_size > 1:
            logits_max = funcol.all_reduce(logits_max, "max", dist.group.WORLD)
        sum_exp = torch.exp(logits - logits_max).sum(dim=-1, keepdim=True)
        if self.world_size > 1:
            sum_exp = funcol.all_reduce(sum_exp, "sum", dist.group.WORLD)
        lse = torch.log(sum_exp) + logits_max
        z_loss = Z_COEFF * lse.squeeze(-1).pow(2).mean()
        return z_loss


def build(rank, world_size):
    return VocabParallelZLoss(world_size), {"logits": torch.randn(TOKENS, VOCAB // world_size)}
