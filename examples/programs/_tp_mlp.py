"""Megatron TP MLP written with nn.Linear: column-parallel fc1 (bias sharded), relu, row-parallel
fc2 (bias replicated, added after the all-reduce).  On a 3-D input nn.Linear lowers to
view -> addmm -> view in G_s and mm -> all_reduce -> add in G_d."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import copy_to, reduce_from


class TPMLP(nn.Module):
    def __init__(self, ws, hidden, ffn, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.fc1 = nn.Linear(hidden, ffn // ws)
        self.fc2 = nn.Linear(ffn // ws, hidden)

    def forward(self, x):
        x = copy_to(x, self.ws)
        h = F.relu(self.fc1(x))
        if self.ws == 1:
            return self.fc2(h)
        if self.bug == "bias_before_reduce":
            return reduce_from(self.fc2(h), self.ws)  # BUG: the replicated bias is added on every rank, then summed
        y = F.linear(h, self.fc2.weight)
        if self.bug == "missing_allreduce":
            y = y  # BUG: the row-parallel partial sums are never all-reduced
        else:
            y = reduce_from(y, self.ws)
        return y + self.fc2.bias


def make_build(shape, hidden, ffn, bug=None):
    def build(rank, world_size):
        return TPMLP(world_size, hidden, ffn, bug), {"x": torch.randn(*shape, hidden, requires_grad=True)}
    return build
