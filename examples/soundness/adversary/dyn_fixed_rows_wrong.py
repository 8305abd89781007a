"""WRONG under --dynamic: x is replicated and each rank takes rows [4 * rank, 4 * rank + 4) -- half
of the captured 8 -- doubles them and all-gathers; for any other number of rows the output is not
2 * x.  (Right at the captured size: the check claims every size.)"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

N, C = 8, 3
DYNAMIC_DIMS = {"x": [0]}
GLOO_CONSTANTS = {"N": 12}      # the gloo label is taken at another size the capture allows


class M(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.ws = rank, world_size

    def forward(self, x):
        if self.ws == 1:
            return x * 2
        h = x[4 * self.rank:4 * self.rank + 4] * 2         # BUG: 4 is the captured size's half
        return funcol.all_gather_tensor(h, 0, dist.group.WORLD)


def build(rank, world_size):
    return M(rank, world_size), {"x": torch.randn(N, C)}
