"""Hugging Face Llama attention (GQA, repeat_kv with expand + reshape, matmul) under a tensor
parallel plan that shards the query heads and o_proj but keeps the key/value projections
replicated (fewer KV heads than it is convenient to split): every rank computes all KV heads,
repeats them to one per query head and keeps the ones of its own query heads."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

HIDDEN, NUM_HEADS, NUM_KV_HEADS, HEAD_DIM, BSZ, Q_LEN = 8, 4, 2, 2, 2, 3


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class LlamaAttention(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.world_size = rank, world_size
        self.num_heads = NUM_HEADS // world_size
        self.num_key_value_groups = NUM_HEADS // NUM_KV_HEADS
        self.scaling = HEAD_DIM ** -0.5
        self.q_proj = nn.Linear(HIDDEN, self.num_heads * HEAD_DIM, bias=False)
        self.k_proj = nn.Linear(HIDDEN, NUM_KV_HEADS * HEAD_DIM, bias=False)
        self.v_proj = nn.Linear(HIDDEN, NUM_KV_HEADS * HEAD_DIM, bias=False)
        self.o_proj = nn.Linear(self.num_heads * HEAD_DIM, HIDDEN, bias=False)

    def forward(self, hidden_states):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, HEAD_DIM).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(bsz, q_len, NUM_KV_HEADS, HEAD_DIM).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(bsz, q_len, NUM_KV_HEADS, HEAD_DIM).transpose(1, 2)

        first_head = self.rank  # BUG: head offset = rank instead of rank * local heads
        key_states = repeat_kv(key_states, self.num_key_value_groups)[:, first_head:first_head + self.num_heads]
        value_states = repeat_kv(value_states, self.num_key_value_groups)[:, first_head:first_head + self.num_heads]

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        attn_output = self.o_proj(attn_output)
        if self.world_size > 1:
            attn_output = funcol.all_reduce(attn_output, "sum", dist.group.WORLD)
        return attn_output


def build(rank, world_size):
    model = LlamaAttention(rank, world_size)
    return model, {"hidden_states": torch.randn(BSZ, Q_LEN, HIDDEN)}
