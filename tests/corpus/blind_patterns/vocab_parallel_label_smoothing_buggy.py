"""Label-smoothed cross entropy on vocab-parallel logits (the soft-target form fairseq and
Megatron's label_smoothing use): the vocab-parallel log-softmax (max and sum-of-exp
all-reduced), one-hot targets built on the rank's vocabulary slice with scatter_ and zeroed for
tokens whose target another rank owns, mixed with the uniform distribution, summed over the
vocabulary (all-reduce) and averaged over the tokens."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

VOCAB, HIDDEN, TOKENS = 8, 4, 6
LABEL_SMOOTHING = 0.1


class SmoothedVocabParallelCE(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.world_size = rank, world_size
        self.output_weight = nn.Parameter(torch.empty(VOCAB // world_size, HIDDEN))

    def all_reduce(self, t, op):
        return funcol.all_reduce(t, op, dist.group.WORLD) if self.world_size > 1 else t

    def forward(self, hidden_states, target):
        logits = F.linear(hidden_states, self.output_weight)          # [t, v/tp]
        logits_max = self.all_reduce(logits.max(dim=-1, keepdim=True)[0], "max")
        logits = logits - logits_max
        sum_exp = self.all_reduce(logits.exp().sum(dim=-1, keepdim=True), "sum")
        log_probs = logits - sum_exp.log()

        partition_vocab_size = logits.size(-1)
        vocab_start_index = self.rank * partition_vocab_size
        target_mask = (target < vocab_start_index) | (target >= vocab_start_index + partition_vocab_size)
        masked_target = (target - vocab_start_index).masked_fill(target_mask, 0)
        one_hot = torch.zeros_like(log_probs).scatter_(1, masked_target.unsqueeze(-1), 1.0)
        one_hot = one_hot.masked_fill((target < 0).unsqueeze(-1), 0.0)  # BUG: masks only ignored targets, not the ones another rank owns
        soft_targets = one_hot * (1.0 - LABEL_SMOOTHING) + LABEL_SMOOTHING / VOCAB

        per_token = self.all_reduce(-(soft_targets * log_probs).sum(dim=-1), "sum")
        return per_token.mean()


def build(rank, world_size):
    model = SmoothedVocabParallelCE(rank, world_size)
    return model, {"hidden_states": torch.randn(TOKENS, HIDDEN),
                   "target": torch.randint(0, VOCAB, (TOKENS,))}
