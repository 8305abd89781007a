"""Ring attention (context parallel, non-causal): q, k, v are split along the sequence.  Each
rank attends its queries to its own key/value block, then passes the key/value block to the next
rank around the ring (batch_isend_irecv) and attends to the block it receives, W - 1 times.
Blocks are merged with their log-sum-exp (the online-softmax update of flash/ring attention):
out = out * exp(lse - new_lse) + block_out * exp(block_lse - new_lse).
"""
import torch
import torch.distributed as dist
from torch import nn

BATCH, HEADS, SEQ, HEAD_DIM = 1, 2, 4, 2


def block_attention(q, k, v, scale):
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale
    lse = torch.logsumexp(scores, dim=-1)
    out = torch.matmul(torch.exp(scores - lse.unsqueeze(-1)), v)
    return out, lse


class RingAttention(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.world_size = rank, world_size

    def ring_exchange(self, k, v):
        send_to, recv_from = (self.rank + 1) % self.world_size, (self.rank - 1) % self.world_size
        k_next, v_next = torch.empty_like(k), torch.empty_like(v)
        ops = [dist.P2POp(dist.isend, k.contiguous(), send_to), dist.P2POp(dist.isend, v.contiguous(), send_to),
               dist.P2POp(dist.irecv, k_next, recv_from), dist.P2POp(dist.irecv, v_next, recv_from)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
        return k_next, v_next

    def forward(self, q, k, v):
        scale = q.shape[-1] ** -0.5
        out, lse = block_attention(q, k, v, scale)
        for _ in range(self.world_size - 1):
            k, v = self.ring_exchange(k, v)
            block_out, block_lse = block_attention(q, k, v, scale)
            new_lse = torch.logaddexp(lse, block_lse)
            out = out + block_out * torch.exp(block_lse - new_lse).unsqueeze(-1)  # BUG
            lse = new_lse
        return out


def build(rank, world_size):
    shape = (BATCH, HEADS, SEQ // world_size, HEAD_DIM)
    return RingAttention(rank, world_size), {"q": torch.randn(shape), "k": torch.randn(shape), "v": torch.randn(shape)}
