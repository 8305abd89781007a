"""Hugging Face causal-LM loss with num_items_in_batch under data parallelism (2 ranks).

Labels are shifted by one (the token at t predicts t + 1), padded positions are -100.  The loss is
the sum of the per-token cross-entropies divided by the number of targets that count over the
whole data-parallel batch: the count of shifted labels != -100, all-reduced, as the Trainer's
gradient-accumulation fix computes it.  The batch is split along dim 0.
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn.functional as F
from torch import nn

BATCH, SEQ, VOCAB = 4, 5, 7
IGNORE_INDEX = -100


class CausalLMLoss(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size

    def forward(self, logits, labels):
        # the ranks hold different numbers of targets: the count must be all-reduced
        shift_logits = logits[:, :-1, :].contiguous()
        shift_labels = labels[:, 1:].contiguous()
        loss_sum = F.cross_entropy(shift_logits.view(-1, VOCAB), shift_labels.view(-1),
                                   ignore_index=IGNORE_INDEX, reduction="sum")
        num_items_in_batch = (shift_labels != IGNORE_INDEX).sum()
        if self.world_size > 1:
            num_items_in_batch = funcol.all_reduce(num_items_in_batch, "sum", dist.group.WORLD)
            loss_sum = funcol.all_reduce(loss_sum, "sum", dist.group.WORLD)
        return loss_sum / num_items_in_batch


def build(rank, world_size):
    labels = torch.tensor([[IGNORE_INDEX, 2, 5, IGNORE_INDEX, IGNORE_INDEX],
                           [IGNORE_INDEX, 0, 1, 6, 3],
                           [4, 4, IGNORE_INDEX, 2, 1],
                           [IGNORE_INDEX, IGNORE_INDEX, IGNORE_INDEX, 3, 0]])
    rows = BATCH // world_size
    return CausalLMLoss(world_size), {"logits": torch.randn(rows, SEQ, VOCAB),
                                      "labels": labels[rank * rows:(rank + 1) * rows]}
