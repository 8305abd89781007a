"""PaLM's z-loss (1e-4 * logsumexp(logits)^2, averaged over tokens) with vocab-parallel logits:
each rank takes the logsumexp of its vocabulary slice; the ranks' values are all-gathered
(functional all_gather_tensor) and combined with another logsumexp over the rank dimension.
Returns the z-loss and the per-token log-partition.
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

VOCAB, TOKENS = 8, 5
Z_LOSS_WEIGHT = 1e-4


class ZLoss(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size

    def forward(self, logits):
        lse = torch.logsumexp(logits, dim=-1)
        if self.world_size > 1:
            parts = funcol.all_reduce(lse.unsqueeze(0), "sum", group=dist.group.WORLD)  # BUG
            lse = torch.logsumexp(parts, dim=0)
        z_loss = Z_LOSS_WEIGHT * lse.pow(2).mean()
        return z_loss, lse


def build(rank, world_size):
    return ZLoss(world_size), {"logits": torch.randn(TOKENS, VOCAB // world_size)}
