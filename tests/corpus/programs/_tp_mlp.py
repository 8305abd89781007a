"""Megatron TP MLP written with nn.Linear: column-parallel fc1 (bias sharded), relu, row-parallel
fc2 (bias replicated, added after the all-reduce).  On a 3-D input nn.Linear lowers to
view -> addmm -> view in G_s and mm -> all_reduce -> add in G_d.

``funcol_all_reduce``: the row-parallel partial sums are all-reduced with a bare
``funcol.all_reduce`` instead of the region's autograd.Function.  The forward is the same; the
backward of funcol.all_reduce all-reduces the output gradient as well, so fc2's and fc1's weight
gradients come out W times too large (joint mode only)."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
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
        elif self.bug == "funcol_all_reduce":
            y = funcol.all_reduce(y, "sum", dist.group.WORLD)  # BUG: its backward all-reduces the gradient again
        else:
            y = reduce_from(y, self.ws)
        return y + self.fc2.bias


def make_build(shape, hidden, ffn, bug=None):
    def build(rank, world_size):
        return TPMLP(world_size, hidden, ffn, bug), {"x": torch.randn(*shape, hidden, requires_grad=True)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_tp_mlp.py:<name>`, and `entangle capture tests/corpus/programs/_tp_mlp.py:<name>` captures one).
tp_mlp2d_correct = make_build((5,), 6, 8)
tp_mlp2d_funcol_all_reduce = make_build((5,), 6, 8, bug='funcol_all_reduce')
tp_mlp2d_missing_allreduce = make_build((5,), 6, 8, bug='missing_allreduce')
tp_mlp3d_bias_before_reduce = make_build((3, 5), 6, 8, bug='bias_before_reduce')
tp_mlp3d_correct = make_build((3, 5), 6, 8)
