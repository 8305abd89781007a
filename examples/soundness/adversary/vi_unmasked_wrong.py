"""WRONG: vocab-parallel embedding that forgets the mask: each rank looks up ids - start in its
own shard of the table with no masking, then all-reduces.  On real ranks an id owned by another
rank indexes outside the local shard (torch raises); valid_indices must not excuse a lookup the
distributed program itself makes out of range."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

V, H, N = 8, 5, 6


class Emb(nn.Module):
    def __init__(self, rank, ws):
        super().__init__()
        self.ws, self.start = ws, rank * (V // ws)
        self.weight = nn.Parameter(torch.empty(V // ws, H))

    def forward(self, ids):
        if self.ws == 1:
            return F.embedding(ids, self.weight)
        out = F.embedding(ids - self.start, self.weight)      # BUG: no mask of foreign ids
        return funcol.all_reduce(out, "sum", dist.group.WORLD)


def build(rank, world_size):
    return Emb(rank, world_size), {"ids": torch.randint(0, V, (N,))}
