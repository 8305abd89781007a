"""Context parallelism with all-gathered keys and values (the Llama 3 paper's CP for causal
attention): the sequence is split into contiguous chunks, each rank keeps its queries, gathers
every rank's keys and values (functional all_gather_tensor along the sequence dim) and applies
the causal mask at its queries' global positions (its chunk's offset plus the local index).
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn.functional as F
from torch import nn

BATCH, HEADS, SEQ, HEAD_DIM = 1, 2, 8, 2


class AllGatherKVAttention(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.world_size = rank, world_size

    def forward(self, q, k, v):
        s_local = q.shape[2]
        if self.world_size > 1:
            k = funcol.all_gather_tensor(k.contiguous(), gather_dim=2, group=dist.group.WORLD)
            v = funcol.all_gather_tensor(v.contiguous(), gather_dim=2, group=dist.group.WORLD)
        q_pos = self.rank * s_local + torch.arange(s_local)
        k_pos = torch.arange(k.shape[2])
        mask = k_pos.unsqueeze(0) <= q_pos.unsqueeze(1)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def build(rank, world_size):
    shape = (BATCH, HEADS, SEQ // world_size, HEAD_DIM)
    return AllGatherKVAttention(rank, world_size), {"q": torch.randn(shape), "k": torch.randn(shape), "v": torch.randn(shape)}
