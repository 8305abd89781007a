"""Stand-ins for vLLM's ``_C`` custom ops (csrc/ops.h schemas), registered with torch.library so
that programs written against vLLM's kernels run (gloo) and capture without vLLM installed.
Their bodies are vLLM's documented semantics, written independently of entangle's plugin."""
import torch
import torch.nn.functional as F

if not hasattr(torch.ops._C, "silu_and_mul"):
    _lib = torch.library.Library("_C", "FRAGMENT")
    _lib.define("rms_norm(Tensor(a!) result, Tensor input, Tensor weight, float epsilon) -> ()")
    _lib.define("fused_add_rms_norm(Tensor(a!) input, Tensor(b!) residual, Tensor weight, float epsilon) -> ()")
    _lib.define("silu_and_mul(Tensor(a!) result, Tensor input) -> ()")

    _lib.define("gelu_and_mul(Tensor(a!) out, Tensor input) -> ()")
    _lib.define("rotary_embedding(Tensor positions, Tensor(a!) query, Tensor(b!)? key, int head_size, "
                "Tensor cos_sin_cache, bool is_neox) -> ()")

    def _rms_norm(result, input, weight, epsilon):
        result.copy_(F.rms_norm(input.float(), (input.shape[-1],), eps=epsilon).to(input.dtype) * weight)

    def _fused_add_rms_norm(input, residual, weight, epsilon):
        residual.add_(input)
        input.copy_(F.rms_norm(residual.float(), (input.shape[-1],), eps=epsilon).to(input.dtype) * weight)

    def _silu_and_mul(result, input):
        gate, up = input.chunk(2, dim=-1)
        result.copy_(F.silu(gate) * up)

    def _gelu_and_mul(out, input):
        d = input.shape[-1] // 2
        out.copy_(F.gelu(input[..., :d]) * input[..., d:])

    def _rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox):
        # vLLM csrc/pos_encoding_kernels: per token, per head, rotate the first rot_dim entries
        rot = cos_sin_cache.shape[1]
        half = rot // 2
        for t in (query, key):
            if t is None:
                continue
            v = t.view(t.shape[0], -1, head_size)
            for i in range(half):
                cos = cos_sin_cache[positions, i].unsqueeze(-1)
                sin = cos_sin_cache[positions, half + i].unsqueeze(-1)
                a, b = (i, half + i) if is_neox else (2 * i, 2 * i + 1)
                x, y = v[:, :, a].clone(), v[:, :, b].clone()
                v[:, :, a] = x * cos - y * sin
                v[:, :, b] = y * cos + x * sin

    for key in ("CPU", "Meta"):
        _lib.impl("rms_norm", _rms_norm, key)
        _lib.impl("fused_add_rms_norm", _fused_add_rms_norm, key)
        _lib.impl("silu_and_mul", _silu_and_mul, key)
        _lib.impl("gelu_and_mul", _gelu_and_mul, key)
        _lib.impl("rotary_embedding", _rotary_embedding, key)
