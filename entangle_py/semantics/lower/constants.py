"""Tensors made from sizes and numbers alone: fills, positions (arange) and random draws."""
from __future__ import annotations

import struct

from entangle_py.ir import ops
from entangle_py.ir.graph import Ref, TensorMeta, TorchConst
from entangle_py.semantics.lower.core import (
    DRAW, draw_key, fill_text, Identity, lowers, ref, Refused, scalar_lit, Term, TupleTerms)
from entangle_py.semantics.terms import str_lit


class ConstantLowering:
    # -- positions: arange ------------------------------------------------------------------
    @lowers("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
    def _h_arange(self, n):
        """arange(start, end, step) with integer-valued bounds: (arange start step length), the
        length read from the output's shape; another dtype is the int64 positions cast, exact
        while every value is a number of that dtype.  Fractional or symbolic bounds, or values
        past exactness: declined (opaque for the overloads in OPAQUE_PURE, else no semantics)."""
        if n.target == "aten.arange.default":
            start, end, step = 0, self._arg(n, 0, "end"), 1
        elif n.target == "aten.arange.start":
            start, end, step = self._arg(n, 0, "start"), self._arg(n, 1, "end"), 1
        else:
            start, end, step = self._arg(n, 0, "start"), self._arg(n, 1, "end"), self._arg(n, 2, "step", 1)
        vals = []
        for v in (start, end, step):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not v.is_integer()):
                return None
            vals.append(int(v))
        start, end, step = vals
        if not isinstance(n.val, TensorMeta) or len(n.val.shape) != 1 or step == 0:
            return None
        length = n.val.shape[0]
        if not isinstance(length, int):
            return None
        term = f"(arange {start} {step} (DLit {length}))"
        dtype = n.val.dtype
        if dtype == "int64":
            return Term(term)
        exact = _ARANGE_EXACT.get(dtype)
        last = start + step * (length - 1) if length else start
        if exact is None or max(abs(start), abs(last)) > exact:
            return None
        return Term(f"(unary {str_lit('to_' + dtype)} {term})")

    @lowers("aten.native_dropout.default")
    def _h_native_dropout_default(self, n):
        """Evaluation mode (train False, or p = 0): the value is the input, the mask all true.
        Training mode draws the keep-mask (output 1, a ``Draw``: a tensor of its own, never a
        function of x's values) and the value is x * mask * (1 / (1 - p)), as torch computes it."""
        x = n.args[0]
        p = self._arg(n, 1, "p")
        train = self._arg(n, 2, "train")
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not isinstance(train, (bool, type(None))):
            return Refused(n.target, "p", f"p={p!r}, train={train!r}")
        if not train or p == 0:
            return TupleTerms((Identity(x.name), self._opaque(n).items[1]))
        if not 0 < p < 1:
            return Refused(n.target, "p", f"p={p!r} (a mask that drops everything, or no probability)")
        mask = ref(draw_key(n))
        scale = _in_dtype(1 / (1 - p), self._dtype(x.name))    # torch's kernel rounds it to x's dtype
        return TupleTerms((Term(f"(scalar \"mul\" (binary \"mul\" {self.t(x)} {mask}) {scalar_lit(scale)})"),
                           DRAW))

    @lowers(*sorted(t for t in ops.RANDOM_DRAWS if t != ops.DROPOUT))
    def _draw(self, n):
        """A random tensor (rand, randn, randint, randperm, bernoulli(x, p), uniform): a ``Draw``,
        whatever tensor its shape comes from.  A generator argument is refused: the draw would not
        come from the rank's default stream, the only one capture records."""
        if n.kwargs.get("generator") is not None:
            return Refused(n.target, "generator", "a draw from a generator of its own")
        if not isinstance(n.val, TensorMeta):
            return None
        return DRAW

    # -- constants: zeros, ones, full and their new_ / _like forms -----------------------------
    # target -> (position of the fill value, or the value itself; position of the size, None for
    # the _like forms, whose size is their input's, () for a 0-D tensor)
    _FILLS = {
        "aten.zeros.default": (0, 0), "aten.ones.default": (1, 0), "aten.full.default": ((1,), 0),
        "aten.new_zeros.default": (0, 1), "aten.new_ones.default": (1, 1), "aten.new_full.default": ((2,), 1),
        "aten.zeros_like.default": (0, None), "aten.ones_like.default": (1, None),
        "aten.full_like.default": ((1,), None),
        "aten.scalar_tensor.default": ((0,), ()),
    }

    _FILL_KWARGS = {"dtype", "layout", "device", "pin_memory", "memory_format"}

    @lowers(*_FILLS)
    def _h_fill(self, n):
        """A tensor of one number (``cst``) of the output's shape and dtype: what size (or the
        input's shape, for the _like forms) and dtype= (or the input's dtype, for the new_ and _like
        forms) give it; the device, a dense layout and the memory format do not change a value.  A
        fill value that is not a number of the dtype (or symbolic), or a sparse layout: declined
        (opaque)."""
        value, at = self._FILLS[n.target]
        if isinstance(value, tuple):
            value = self._arg(n, value[0], "fill_value")
        meta = n.val
        if not isinstance(meta, TensorMeta) or not set(n.kwargs) <= self._FILL_KWARGS:
            return None
        layout = n.kwargs.get("layout")
        if layout is not None and not (isinstance(layout, TorchConst) and layout.value == "strided"):
            return None
        dtype = n.kwargs.get("dtype")
        if dtype is not None and not (isinstance(dtype, TorchConst) and dtype.value == meta.dtype):
            return None
        if at == ():
            if tuple(meta.shape) != ():
                return None
        elif at is not None:
            size = self._arg(n, at, "size")
            if not isinstance(size, (list, tuple)) or len(size) != len(meta.shape):
                return None
            if any(isinstance(a, int) and a != b for a, b in zip(size, meta.shape)):
                return None
        elif not isinstance(n.args[0], Ref) or tuple(self.shape(n.args[0].name)) != tuple(meta.shape):
            return None
        if not isinstance(value, (int, float)):        # bool is an int
            return None
        text = fill_text(value, meta.dtype)
        if text is None:
            return None
        return Term(self._filled(text, meta.shape, meta.dtype))

# arange of another dtype is the int64 positions cast: exact while every value is an integer of
# that dtype (floats: at most their mantissa's range; int32: in range)
_ARANGE_EXACT = {"int32": 2**31 - 1, "float64": 2**53, "float32": 2**24, "bfloat16": 2**8, "float16": 2**11}


def _in_dtype(v: float, dtype: str) -> float:
    """``v`` rounded to a float dtype (to nearest, ties to even), as a kernel that multiplies by a
    scalar of the tensor's dtype rounds it; float64 and other dtypes keep it."""
    if dtype in ("float32", "float16"):
        code = "f" if dtype == "float32" else "e"
        return struct.unpack(code, struct.pack(code, v))[0]
    if dtype == "bfloat16":
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    return v

