"""CORRECT twin of vi_unmasked_wrong: each rank masks the ids it does not own, looks up the others in
its shard, zeroes the masked rows and all-reduces (Megatron's VocabParallelEmbedding)."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

V, H, N = 8, 5, 6


class Emb(nn.Module):
    def __init__(self, rank, ws):
        super().__init__()
        self.ws, self.start, self.end = ws, rank * (V // ws), (rank + 1) * (V // ws)
        self.weight = nn.Parameter(torch.empty(V // ws, H))

    def forward(self, ids):
        if self.ws == 1:
            return F.embedding(ids, self.weight)
        mask = (ids < self.start) | (ids >= self.end)
        out = F.embedding((ids - self.start).masked_fill(mask, 0), self.weight).masked_fill(mask.unsqueeze(-1), 0.0)
        return funcol.all_reduce(out, "sum", dist.group.WORLD)


def build(rank, world_size):
    return Emb(rank, world_size), {"ids": torch.randint(0, V, (N,))}
