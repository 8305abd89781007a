"""Context parallel (2 ranks): a masked mean of per-token losses over a sequence split along dim 1.

Each rank holds [batch, seq / W] token losses and their loss mask.  The global masked mean is the
all-reduced masked sum divided by the all-reduced count of unmasked tokens (the ranks' counts
differ: right padding sits in the last chunks).
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

BATCH, SEQ = 2, 8


class MaskedMean(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size

    def forward(self, token_loss, loss_mask):
        mask = loss_mask.to(token_loss.dtype)
        local_sum = (token_loss * mask).sum()
        local_count = mask.sum()
        if self.world_size > 1:
            total = funcol.all_reduce(local_sum, "sum", dist.group.WORLD)
            count = funcol.all_reduce(local_count, "sum", dist.group.WORLD)
        else:
            total, count = local_sum, local_count
        return total / count


def build(rank, world_size):
    lengths = torch.tensor([7, 3])  # right-padded sequences: the later chunks hold more padding
    loss_mask = torch.arange(SEQ) < lengths[:, None]
    chunk = SEQ // world_size
    return MaskedMean(world_size), {"token_loss": torch.randn(BATCH, chunk),
                                    "loss_mask": loss_mask[:, rank * chunk:(rank + 1) * chunk]}
