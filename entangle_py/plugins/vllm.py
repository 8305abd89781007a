"""vLLM's custom ops (namespace ``_C``), as vLLM's CPU/CUDA kernels define them (csrc/ops.h):
out-style ops write their result into the first argument(s)."""
from entangle_py.lazy import torch

from entangle_py.plugins._registry import custom_op


def _rms(x, weight, epsilon):
    # vLLM normalises in float32 and casts back before scaling by the weight
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + epsilon)).to(x.dtype) * weight


@custom_op("_C.rms_norm.default", "rms_norm(Tensor(a!) result, Tensor input, Tensor weight, float epsilon) -> ()")
def rms_norm(result, input, weight, epsilon):
    return (_rms(input, weight, epsilon),)


@custom_op("_C.fused_add_rms_norm.default",
           "fused_add_rms_norm(Tensor(a!) input, Tensor(b!) residual, Tensor weight, float epsilon) -> ()")
def fused_add_rms_norm(input, residual, weight, epsilon):
    """residual <- input + residual; input <- rms_norm(that)."""
    s = input + residual
    return (_rms(s, weight, epsilon), s)


@custom_op("_C.silu_and_mul.default", "silu_and_mul(Tensor(a!) result, Tensor input) -> ()")
def silu_and_mul(result, input):
    d = input.shape[-1] // 2
    return (torch.nn.functional.silu(input[..., :d]) * input[..., d:],)


@custom_op("_C.gelu_and_mul.default", "gelu_and_mul(Tensor(a!) out, Tensor input) -> ()")
def gelu_and_mul(out, input):
    d = input.shape[-1] // 2
    return (torch.nn.functional.gelu(input[..., :d]) * input[..., d:],)


def _rotate(x, cos, sin, is_neox):
    if is_neox:      # halves: (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin)
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    x1, x2 = x[..., 0::2], x[..., 1::2]          # GPT-J: interleaved pairs
    return torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).flatten(-2)


@custom_op("_C.rotary_embedding.default",
           "rotary_embedding(Tensor positions, Tensor(a!) query, Tensor(b!)? key, int head_size, "
           "Tensor cos_sin_cache, bool is_neox) -> ()")
def rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox):
    """query/key [tokens, heads * head_size]; cache [max_position, rot_dim] = [cos | sin]; the
    first rot_dim of each head rotate, the rest pass through."""
    rot = cos_sin_cache.shape[-1]
    cos, sin = cos_sin_cache[positions].chunk(2, dim=-1)           # [tokens, rot / 2]
    cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)                # [tokens, 1, rot / 2]

    def apply(t):
        shape = t.shape
        t = t.reshape(shape[0], -1, head_size)
        out = torch.cat([_rotate(t[..., :rot], cos.to(t.dtype), sin.to(t.dtype), is_neox), t[..., rot:]], dim=-1)
        return out.reshape(shape)
    return (apply(query), apply(key) if key is not None else None)
