"""Data parallel training step's loss reporting, as Megatron's
average_losses_across_data_parallel_group writes it: each rank's losses (LM cross entropy and
a z-loss on its micro-batch) concatenated, all-reduced, divided by the data-parallel size."""
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

VOCAB, HIDDEN, BATCH = 8, 4, 6


def average_losses_across_data_parallel_group(losses, world_size):
    averaged_losses = torch.cat([loss.clone().detach().view(1) for loss in losses])
    if world_size > 1:
        dist.all_reduce(averaged_losses, group=dist.group.WORLD)
        averaged_losses = averaged_losses / world_size
    return averaged_losses


class GPTHead(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.world_size = world_size
        self.output_layer = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, hidden_states, labels):
        logits = self.output_layer(hidden_states)
        lm_loss = F.cross_entropy(logits, labels, reduction="sum") / BATCH  # BUG: normalised by the global batch, then averaged over the ranks again
        z_loss = 1e-4 * torch.logsumexp(logits, dim=-1).pow(2).mean()
        return average_losses_across_data_parallel_group([lm_loss, z_loss], self.world_size)


def build(rank, world_size):
    model = GPTHead(rank, world_size)
    return model, {"hidden_states": torch.randn(BATCH // world_size, HIDDEN),
                   "labels": torch.randint(0, VOCAB, (BATCH // world_size,))}
