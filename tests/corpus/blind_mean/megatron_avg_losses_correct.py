"""Megatron-LM: the GPT output layer's LM loss and a z-loss on a data-parallel shard of the batch,
reported averaged over the data-parallel group with Megatron's
``average_losses_across_data_parallel_group`` (torch.cat of the detached losses, in-place
all-reduce, divide by the group size)."""
import torch
import torch.distributed
import torch.nn as nn
import torch.nn.functional as F

GLOBAL_BATCH, HIDDEN, VOCAB = 8, 16, 8
Z_LOSS_COEF = 1e-4


def average_losses_across_data_parallel_group(losses, group):
    """Reduce a tensor of losses across all GPUs."""
    averaged_losses = torch.cat([loss.clone().detach().view(1) for loss in losses])
    torch.distributed.all_reduce(averaged_losses, group=group)
    averaged_losses = averaged_losses / group.size()
    return averaged_losses


class GPTOutputLoss(nn.Module):
    def __init__(self, data_parallel_size):
        super().__init__()
        self.data_parallel_size = data_parallel_size
        self.final_layernorm = nn.LayerNorm(HIDDEN)
        self.output_layer = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, hidden_states, labels):
        logits = self.output_layer(self.final_layernorm(hidden_states))
        lm_loss = F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1))
        z_loss = Z_LOSS_COEF * torch.logsumexp(logits, dim=-1).pow(2).mean()
        if self.data_parallel_size > 1:
            return average_losses_across_data_parallel_group(
                [lm_loss, z_loss], torch.distributed.group.WORLD)
        return torch.cat([loss.clone().detach().view(1) for loss in (lm_loss, z_loss)])


def build(rank, world_size):
    micro_batch = GLOBAL_BATCH // world_size
    return GPTOutputLoss(world_size), {
        "hidden_states": torch.randn(micro_batch, HIDDEN),
        "labels": torch.randint(0, VOCAB, (micro_batch,)),
    }
