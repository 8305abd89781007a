"""Megatron's vocab-parallel cross entropy (megatron.core.tensor_parallel.cross_entropy, forward)
under a Hugging Face causal-LM loss: labels shifted left and padded with -100, ignored tokens
left out of the mean."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

VOCAB, HIDDEN, SEQ, BATCH = 8, 4, 5, 2
IGNORE_INDEX = -100


class VocabParallelLMLoss(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.world_size = rank, world_size
        self.lm_head = nn.Parameter(torch.empty(VOCAB // world_size, HIDDEN))

    def forward(self, hidden_states, labels):
        labels = F.pad(labels, (0, 1), value=IGNORE_INDEX)
        target = labels[..., 1:].contiguous()                         # [b, s]
        vocab_parallel_logits = F.linear(hidden_states, self.lm_head)  # [b, s, v/tp]

        logits_max = torch.max(vocab_parallel_logits, dim=-1)[0]
        if self.world_size > 1:
            logits_max = funcol.all_reduce(logits_max, "max", dist.group.WORLD)
        vocab_parallel_logits = vocab_parallel_logits - logits_max.unsqueeze(dim=-1)

        partition_vocab_size = vocab_parallel_logits.size()[-1]
        vocab_start_index = self.rank * partition_vocab_size
        vocab_end_index = vocab_start_index + partition_vocab_size
        target_mask = (target < vocab_start_index) | (target >= vocab_end_index)
        masked_target = target.clone() - vocab_start_index
        masked_target[target_mask] = 0

        logits_2d = vocab_parallel_logits.view(-1, partition_vocab_size)
        masked_target_1d = masked_target.view(-1)
        arange_1d = torch.arange(start=0, end=logits_2d.size()[0], device=logits_2d.device)
        predicted_logits_1d = logits_2d[arange_1d, masked_target_1d]
        predicted_logits = predicted_logits_1d.clone().contiguous().view_as(target)
        predicted_logits[target_mask] = 0.0
        if self.world_size > 1:
            predicted_logits = funcol.all_reduce(predicted_logits, "sum", dist.group.WORLD)

        sum_exp_logits = vocab_parallel_logits.exp().sum(dim=-1)
        if self.world_size > 1:
            sum_exp_logits = funcol.all_reduce(sum_exp_logits, "sum", dist.group.WORLD)
        per_token_loss = torch.log(sum_exp_logits) - predicted_logits

        loss_mask = (target != IGNORE_INDEX).to(per_token_loss.dtype)
        return (per_token_loss * loss_mask).sum() / loss_mask.sum()


def build(rank, world_size):
    model = VocabParallelLMLoss(rank, world_size)
    return model, {"hidden_states": torch.randn(BATCH, SEQ, HIDDEN),
                   "labels": torch.randint(0, VOCAB, (BATCH, SEQ))}
