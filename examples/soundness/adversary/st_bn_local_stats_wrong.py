"""WRONG: data parallelism over a batch norm in training mode (SyncBatchNorm's classic bug): each
rank updates its running mean from its own rows of the batch, while the sequential program uses
the whole batch.  The normalised output is not checked; the running statistics are state."""
import torch
import torch.nn as nn

N, C = 8, 3     # x [N, C] sharded along N


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("running_mean", torch.zeros(C))

    def forward(self, x):
        with torch.no_grad():
            self.running_mean.mul_(0.9).add_(0.1 * x.mean(0))    # BUG: the rank's rows only
        return x * 2


def build(rank, world_size):
    return M(), {"x": torch.randn(N // world_size, C)}
