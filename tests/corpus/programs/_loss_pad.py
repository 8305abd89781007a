"""Data-parallel cross-entropy (mean) over labels the program pads itself: targets are set to the
ignore index -100 where the attention mask is 0 (Hugging Face style), inside ``forward``.  Rows
are sharded; the weight is replicated, its gradient all-reduced (copy_to).  Correct: the ranks'
loss sums all-reduced, divided by the all-reduced count of real targets.  Bug ``batch``: divided
by the batch size, padding included.  The spec assumes no_ignored_targets: true of the INPUT
labels (none is -100), not of the padded ones the program computes -- a checker that applies the
assumption to every loss target would accept the bug."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import copy_to, reduce_from

TARGETS = torch.tensor([1, 4, 2, 3, 2, 0, 3, 1])
MASK = torch.tensor([1, 1, 0, 0, 1, 1, 1, 0])


class LossPad(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.weight = nn.Parameter(torch.empty(5, 4))

    def forward(self, x, target, mask):
        target = target.masked_fill(mask == 0, -100)
        if self.ws == 1:
            return F.cross_entropy(F.linear(x, self.weight), target)
        logits = F.linear(x, copy_to(self.weight, self.ws))
        total = reduce_from(F.cross_entropy(logits, target, reduction="sum"), self.ws)
        if self.bug == "batch":
            return total / TARGETS.numel()  # BUG: divided by the batch size, padding targets included
        return total / reduce_from((target != -100).sum(), self.ws)


def make_build(bug=None):
    def build(rank, ws):
        n = TARGETS.numel() // ws
        rows = slice(rank * n, rank * n + n)
        return LossPad(ws, bug), {"x": torch.randn(n, 4, requires_grad=True), "target": TARGETS[rows].clone(),
                                  "mask": MASK[rows].clone()}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_loss_pad.py:<name>`, and `entangle capture tests/corpus/programs/_loss_pad.py:<name>` captures one).
loss_pad_batch = make_build("batch")
loss_pad_correct = make_build()
