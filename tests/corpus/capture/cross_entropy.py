"""A classifier ending in F.cross_entropy (int64 targets): its joint capture must carry a gradient
for every parameter (nll_loss has no autograd kernel on ``meta``; capture traces on fake CPU)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x, target):
        h = F.gelu(self.fc1(x))
        return F.cross_entropy(self.fc2(h), target) + 0.1 * h.var()


def build(rank, world_size):
    return Classifier(), {"x": torch.randn(4, 8), "target": torch.zeros(4, dtype=torch.long)}
