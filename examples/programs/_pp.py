"""Pipeline parallelism, two stages on two ranks: rank 0 runs stage 1 (fc1, relu) and sends the
activation to rank 1 (broadcast from 0); rank 1 runs stage 2 (fc2) and sends the result back
(broadcast from 1), so both ranks return the output.  Every rank holds both stages' weights
(replicated); each uses its own.  Bug ``wrong_peer``: rank 1 receives the activation from itself
(broadcast src 1), i.e. its own empty buffer, the wrong peer."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F


class TwoStage(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        self.fc1 = nn.Parameter(torch.empty(7, 4))
        self.fc2 = nn.Parameter(torch.empty(3, 7))

    def forward(self, x):
        if self.ws == 1:
            return F.linear(F.relu(F.linear(x, self.fc1)), self.fc2)
        if self.rank == 0:
            h = F.relu(F.linear(x, self.fc1))
        else:
            h = x.new_zeros(x.shape[0], 7)
        src = 1 if self.bug == "wrong_peer" else 0  # BUG (wrong_peer): the activation comes from rank 1
        h = funcol.broadcast(h, src, dist.group.WORLD)
        if self.rank == 1:
            y = F.linear(h, self.fc2)
        else:
            y = x.new_zeros(x.shape[0], 3)
        return funcol.broadcast(y, 1, dist.group.WORLD)


def make_build(bug=None):
    def build(rank, world_size):
        return TwoStage(rank, world_size, bug), {"x": torch.randn(5, 4)}
    return build
