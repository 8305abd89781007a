"""Megatron-LM ``pretrain_gpt.loss_func`` under context parallelism: the sequence split over
the CP ranks, per-token losses masked by the loss mask; the masked sum and the token count are
concatenated and all-reduced over the CP group together, and the loss is their quotient (the
ranks' token counts differ: the mask is not even)."""
import torch
import torch.distributed
import torch.nn as nn
import torch.nn.functional as F

SEQ, BATCH, HIDDEN, VOCAB = 8, 2, 16, 8


def loss_func(loss_mask, output_tensor, cp_size, cp_group):
    losses = output_tensor.float()
    loss_mask = loss_mask.view(-1).float()
    total_tokens = loss_mask.sum()
    local_sum = torch.sum(losses.view(-1) * loss_mask)
    loss = torch.cat([local_sum.view(1), total_tokens.view(1)])
    if cp_size > 1:
        torch.distributed.all_reduce(loss, group=cp_group)
    return loss[0] / loss[1]


class GPTModelLoss(nn.Module):
    def __init__(self, cp_size):
        super().__init__()
        self.cp_size = cp_size
        self.output_layer = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, hidden_states, labels, loss_mask):
        # [s/cp, b, h] -> [s/cp, b, v]; per-token losses as Megatron's compute_language_model_loss
        logits = self.output_layer(hidden_states)
        output_tensor = F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1), reduction="none")
        output_tensor = output_tensor.view(labels.shape)
        return loss_func(loss_mask, output_tensor, self.cp_size, torch.distributed.group.WORLD)


def build(rank, world_size):
    local_seq = SEQ // world_size
    return GPTModelLoss(world_size), {
        "hidden_states": torch.randn(local_seq, BATCH, HIDDEN),
        "labels": torch.randint(0, VOCAB, (local_seq, BATCH)),
        "loss_mask": torch.ones(local_seq, BATCH, dtype=torch.bool),
    }
