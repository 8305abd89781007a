"""A torchtitan-style pretraining loss with the output layer sharded over the vocabulary (what
loss_parallel does for DTensor logits), written on local shards: each rank's logsumexp over its
vocabulary slice, all-gathered and combined by a logsumexp over the ranks, minus the target's
logit (owned by one rank, all-reduced).  Packed pretraining sequences have no padding, so at one
rank this is plain F.cross_entropy."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

VOCAB, DIM, SEQ, BATCH = 8, 4, 3, 2


class Transformer(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.world_size = rank, world_size
        self.norm = nn.RMSNorm(DIM, eps=1e-6)
        self.output = nn.Linear(DIM, VOCAB // world_size, bias=False)

    def forward(self, h, labels):
        pred = self.output(self.norm(h))          # [b, s, v/tp]
        pred = pred.flatten(0, 1)                 # [b*s, v/tp]
        labels = labels.flatten(0, 1)
        if self.world_size == 1:
            return F.cross_entropy(pred, labels)
        shard = pred.size(-1)
        local_lse = torch.logsumexp(pred, dim=-1)                                    # [n]
        all_lse = funcol.all_gather_tensor(local_lse.unsqueeze(0), 0, dist.group.WORLD)  # [tp, n]
        lse = torch.logsumexp(all_lse, dim=0)
        local_labels = labels - self.rank * shard
        owned = (local_labels >= 0) & (local_labels < shard)
        picked = pred.gather(-1, local_labels.clamp(0, shard - 1).unsqueeze(-1)).squeeze(-1)
        target_logit = torch.where(owned, picked, torch.zeros_like(picked))
        target_logit = funcol.all_reduce(target_logit, "sum", dist.group.WORLD)
        return (lse - target_logit).mean()


def build(rank, world_size):
    model = Transformer(rank, world_size)
    return model, {"h": torch.randn(BATCH, SEQ, DIM),
                   "labels": torch.randint(0, VOCAB, (BATCH, SEQ))}
