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

    def _rms_norm(result, input, weight, epsilon):
        result.copy_(F.rms_norm(input.float(), (input.shape[-1],), eps=epsilon).to(input.dtype) * weight)

    def _fused_add_rms_norm(input, residual, weight, epsilon):
        residual.add_(input)
        input.copy_(F.rms_norm(residual.float(), (input.shape[-1],), eps=epsilon).to(input.dtype) * weight)

    def _silu_and_mul(result, input):
        gate, up = input.chunk(2, dim=-1)
        result.copy_(F.silu(gate) * up)

    for key in ("CPU", "Meta"):
        _lib.impl("rms_norm", _rms_norm, key)
        _lib.impl("fused_add_rms_norm", _fused_add_rms_norm, key)
        _lib.impl("silu_and_mul", _silu_and_mul, key)
