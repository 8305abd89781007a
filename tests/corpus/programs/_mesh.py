"""2-D mesh DP x TP (world 4, mesh [dp=2, tp=2], row-major like DeviceMesh): the batch is sharded
over dp, the MLP is column/row tensor parallel over tp.  Bug ``dp_group``: the row-parallel
all-reduce uses the dp group instead of the tp group (the wrong mesh dimension).  The weights'
gradients are all-reduced over dp (as DDP does), so every rank holds the model's gradient of its
tp shard."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import copy_to, mesh_groups, reduce_from


class MeshMLP(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        tp = 1 if ws == 1 else 2
        self.dp_group, self.tp_group = mesh_groups(rank, ws // tp, tp) if ws > 1 else (None, None)
        self.fc1 = nn.Parameter(torch.empty(8 // tp, 5))
        self.fc2 = nn.Parameter(torch.empty(5, 8 // tp))

    def forward(self, x):
        # the weights as DDP reads them: identity forward, gradient all-reduced over dp in backward
        fc1, fc2 = copy_to(self.fc1, self.ws, self.dp_group), copy_to(self.fc2, self.ws, self.dp_group)
        h = F.relu(F.linear(copy_to(x, self.ws, self.tp_group), fc1))
        g = self.dp_group if self.bug == "dp_group" else self.tp_group  # BUG (dp_group): wrong mesh dimension
        return reduce_from(F.linear(h, fc2), self.ws, g)


def make_build(bug=None):
    def build(rank, world_size):
        dp = 1 if world_size == 1 else world_size // 2
        return MeshMLP(rank, world_size, bug), {"x": torch.randn(6 // dp, 5)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_mesh.py:<name>`, and `entangle capture tests/corpus/programs/_mesh.py:<name>` captures one).
mesh_dp_tp_correct = make_build()
mesh_dp_tp_wrong_group = make_build(bug='dp_group')
