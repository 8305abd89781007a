"""Data parallelism as users write it: the model wrapped in torch.nn.parallel.DistributedDataParallel
(real DDP on gloo, its capture stand-in in entangle: parameters broadcast from rank 0, gradients
all-reduced and divided by the group's size).  Each rank holds its rows of the batch; the step
returns the loss DDP back-propagates and the predictions (detached: only the loss has a tangent,
1 on every rank, as ``loss.backward()`` gives).  DDP averages the ranks' gradients, so a correct
loss is one whose mean over the ranks is the global loss.

Bugs (each one a gradient bug: the forward is the same):
``loss_sum``: the loss is the local SUM over the rank's rows, not their mean, so the averaged
gradient is the global mean's times the local batch size (loss scaled by the wrong factor);
``head_outside``: only the body is wrapped in DDP, so the head's gradient is never averaged;
``uneven_mean``: ranks hold different numbers of rows (7 rows: torch.chunk) and each takes the mean
of its own, so DDP's mean of the ranks' means weighs the rows of a smaller rank more (the correct
``uneven`` twin divides the local sum by the global batch / W).

The body is two layers deep (linear, relu, linear) beside a linear head: the checker carries DDP's
1 / W back through each layer's backward (the products, relu's mask)."""
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

EVEN, UNEVEN = 8, 7


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 3))
        self.head = nn.Linear(5, 1)

    def forward(self, x):
        return self.body(x).sum(-1) + self.head(x).squeeze(-1)


def wrap(net, bug):
    if bug == "head_outside":
        net.body = DDP(net.body)  # BUG (head_outside): the head is not inside the DDP wrapper
        return net
    return DDP(net)


class Step(nn.Module):
    def __init__(self, ws, bug, uneven):
        super().__init__()
        self.ws, self.bug, self.rows = ws, bug, UNEVEN if uneven else EVEN
        self.net = wrap(Net(), bug) if ws > 1 else Net()

    def forward(self, x, t):
        pred = self.net(x)
        err = (pred - t).pow(2)
        if self.bug == "loss_sum":
            loss = err.sum()  # BUG (loss_sum): the local sum, not the mean
        elif self.bug == "uneven_mean":
            loss = err.mean()  # BUG (uneven_mean): the mean of the rank's own rows, averaged by DDP
        elif self.rows == UNEVEN:
            loss = err.sum() / (self.rows / self.ws)     # DDP's 1 / W makes it the global mean
        else:
            loss = err.mean()
        return {"loss": loss, "pred": pred.detach()}


def make_build(bug=None, uneven=False):
    def build(rank, world_size):
        rows = len(torch.arange(UNEVEN if uneven else EVEN).chunk(world_size)[rank])
        return Step(world_size, bug, uneven), {"x": torch.randn(rows, 5), "t": torch.randn(rows)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_ddp.py:<name>`, and `entangle capture tests/corpus/programs/_ddp.py:<name>` captures one).
ddp_correct = make_build()
ddp_head_outside = make_build(bug="head_outside")
ddp_loss_sum = make_build(bug="loss_sum")
ddp_uneven_correct = make_build(uneven=True)
ddp_uneven_mean = make_build(bug="uneven_mean", uneven=True)
