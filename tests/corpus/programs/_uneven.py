"""Column-parallel linear with an uneven split (5 output features: 3 on rank 0, 2 on rank 1) and
the output gathered to every rank: all_gather needs equal sizes, so each rank pads its columns to
3, gathers, and cuts each rank's block back to that rank's size.  Bug ``local_size``: every block is
cut to the LOCAL rank's size (rank 0 keeps rank 1's padding column, rank 1 drops a column of
rank 0)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import gather_split

OUT, HIDDEN = 5, 6


def sizes(ws):
    return [len(c) for c in torch.arange(OUT).chunk(ws)]


class UnevenColumn(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        self.weight = nn.Parameter(torch.empty(sizes(ws)[rank], HIDDEN))

    def forward(self, x):
        y = F.linear(x, self.weight)
        if self.ws == 1:
            return y
        n = sizes(self.ws)
        pad = max(n)
        y = F.pad(y, (0, pad - y.shape[-1]))
        g = gather_split(y, 1, self.rank, self.ws)
        if self.bug == "local_size":
            return torch.cat([g[:, r * pad:r * pad + n[self.rank]] for r in range(self.ws)], dim=1)  # BUG: local size for every block
        return torch.cat([g[:, r * pad:r * pad + n[r]] for r in range(self.ws)], dim=1)


def make_build(bug=None):
    def build(rank, world_size):
        return UnevenColumn(rank, world_size, bug), {"x": torch.randn(4, HIDDEN)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_uneven.py:<name>`, and `entangle capture tests/corpus/programs/_uneven.py:<name>` captures one).
uneven_gather_correct = make_build()
uneven_gather_local_size = make_build(bug='local_size')
