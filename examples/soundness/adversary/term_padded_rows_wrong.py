"""WRONG: each rank holds its 2 rows of the sequential weight plus a padding row (an allocation
rounded up); the relation names only the first 2 rows of each rank's [3, K].  The ranks compute
with w[1:]: the padding row, which the relation leaves free, is read."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

B, K, F = 3, 5, 4     # x [B, K] replicated; weight [F, K], each rank F/2 rows + 1 padding row


class Col(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.ws = world_size
        self.weight = nn.Parameter(torch.empty(F, K) if world_size == 1 else torch.empty(F // world_size + 1, K))

    def forward(self, x):
        if self.ws == 1:
            return x @ self.weight.t()
        w = self.weight[1:]                  # BUG: skips a real row, reads the padding one
        return funcol.all_gather_tensor(x @ w.t(), 1, dist.group.WORLD)


def build(rank, world_size):
    return Col(world_size), {"x": torch.randn(B, K)}
