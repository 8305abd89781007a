"""Hugging Face Llama decoder layer's attention half (transformers/models/llama/modeling_llama.py:
LlamaRotaryEmbedding, apply_rotary_pos_emb with rotate_half, repeat_kv, eager_attention_forward
with its float32 softmax, the 4-D additive attention mask), tensor parallel as Llama's
base_model_tp_plan says: q/k/v_proj "colwise" (heads split: 4 query and 2 key/value heads over 2
ranks), o_proj "rowwise" (its partial output all-reduced), then the residual.
"""
import torch
import torch.distributed as dist
from torch import nn

HIDDEN, HEADS, KV_HEADS, BATCH, SEQ = 8, 4, 2, 2, 4
HEAD_DIM = HIDDEN // HEADS


class _AllReduceForward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.clone()
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


class _AllReduceBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad)
        return grad


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def eager_attention_forward(query, key, value, attention_mask, scaling, num_key_value_groups):
    key_states = repeat_kv(key, num_key_value_groups)
    value_states = repeat_kv(value, num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_output = torch.matmul(attn_weights, value_states)
    return attn_output.transpose(1, 2).contiguous()


class LlamaAttention(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.num_heads = HEADS // world_size
        self.num_key_value_heads = KV_HEADS // world_size
        self.num_key_value_groups = self.num_heads // self.num_key_value_heads
        self.head_dim = HEAD_DIM
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(HIDDEN, self.num_heads * HEAD_DIM, bias=False)
        self.k_proj = nn.Linear(HIDDEN, self.num_key_value_heads * HEAD_DIM, bias=False)
        self.v_proj = nn.Linear(HIDDEN, self.num_key_value_heads * HEAD_DIM, bias=False)
        self.o_proj = nn.Linear(self.num_heads * HEAD_DIM, HIDDEN, bias=False)

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        attn_output = eager_attention_forward(query_states, key_states, value_states, attention_mask,
                                              self.scaling, self.num_key_value_groups)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class LlamaAttentionBlock(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.input_layernorm = LlamaRMSNorm(HIDDEN)
        self.rotary_emb = LlamaRotaryEmbedding(HEAD_DIM)
        self.self_attn = LlamaAttention(world_size)

    def reduce(self, x):
        return x if self.world_size == 1 else _AllReduceForward.apply(x)

    def forward(self, hidden_states, position_ids, attention_mask):
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        if self.world_size > 1:
            hidden_states = _AllReduceBackward.apply(hidden_states)
        attn_output = self.self_attn(hidden_states, position_embeddings, attention_mask)
        hidden_states = self.reduce(attn_output) + residual
        return hidden_states


def build(rank, world_size):
    return LlamaAttentionBlock(world_size), {
        "hidden_states": torch.randn(BATCH, SEQ, HIDDEN, requires_grad=True),
        "position_ids": torch.arange(SEQ).expand(BATCH, SEQ).contiguous(),
        "attention_mask": torch.zeros(BATCH, 1, SEQ, SEQ),
    }
