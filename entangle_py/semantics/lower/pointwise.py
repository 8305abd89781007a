"""Pointwise ops: each element of the result a function of the operands' elements at its position."""
from __future__ import annotations

from entangle_py.ir import ops
from entangle_py.semantics import opcall
from entangle_py.ir.graph import Node, Ref, TensorMeta
from entangle_py.semantics.lower.core import (
    fill_text, Identity, INT_DTYPES, lowers, Refused, scalar_lit, _scalar_text, Term, term_list)
from entangle_py.semantics.terms import (
    CASTS, const_positive, INT_SCALAR_OPS, MASKED_FILL, str_lit, THRESHOLD_BACKWARD)

# The ops with a scalar form, by target -> the term's op: x op c for a number c is (scalar op x c)
# ((iscalar op x c) for integers), x op y for tensors (binary op x y), with add / sub's alpha as a
# scaling of y and div's rounding_mode in the op (see _rounded).  Every other pointwise op is a
# call of its own (opcall.py), whatever its arity.
SCALAR_FORM = {f"aten.{op}.{ov}": op for op, ovs in {
    "add": ("Tensor", "Scalar"), "sub": ("Tensor", "Scalar"), "mul": ("Tensor", "Scalar"),
    "div": ("Tensor", "Scalar", "Tensor_mode", "Scalar_mode"),
    "pow": ("Tensor_Tensor", "Tensor_Scalar"), "eq": ("Tensor", "Scalar"), "lt": ("Tensor", "Scalar"),
    "gt": ("Tensor", "Scalar"), "le": ("Tensor", "Scalar"), "ge": ("Tensor", "Scalar"), "ne": ("Tensor", "Scalar"),
}.items() for ov in ovs}


class PointwiseLowering:
    """Pointwise ops (ir/op_classes.py: what torch calls pointwise).  Each is a call of the op with
    its constant arguments (``_pointwise``), except the normal forms the lemmas are written over:
    the scalar forms of arithmetic and comparisons, casts, ``where``, masked fills and a few names."""

    def _pointwise(self, n):
        """A call of one of torch's pointwise ops on its tensor operands, every constant argument
        in its op text exactly (opcall.py): ``(unary text x)``, ``(binary text x y)`` or
        ``(pointwise text (Cons x ...))``; its meaning is the op itself, so its dtype promotion is
        torch's.  An argument the text cannot say (a symbolic size, a generator, a number where
        the op takes a tensor) is refused by name; an op of several results too."""
        if not isinstance(n.val, TensorMeta):
            return Refused(n.target, "self", "a pointwise op of several results")
        try:
            text, tensors = opcall.render(n.target, n.args, n.kwargs, lambda v: isinstance(v, Ref))
        except opcall.Unexpressible as e:
            return Refused(n.target, e.arg, e.why)
        operands = [self.t(x) for x in tensors]
        if len(operands) == 1:
            return Term(f"(unary {str_lit(text)} {operands[0]})")
        if len(operands) == 2:
            return Term(f"(binary {str_lit(text)} {operands[0]} {operands[1]})")
        return Term(f"(pointwise {str_lit(text)} {term_list(operands)})")

    @lowers("aten.gelu.default")
    def _h_gelu_default(self, n):
        """gelu is the named unary op "gelu", or "gelu_tanh" with the tanh approximation."""
        approx = self._arg(n, 1, "approximate", "none")
        if approx not in ("none", "tanh") or len(n.args) != 1 or set(n.kwargs) - {"approximate"}:
            return None
        return Term(f"(unary {str_lit('gelu_tanh' if approx == 'tanh' else 'gelu')} {self.t(n.args[0])})")
    @lowers(ops.TO_COPY)
    def _to_copy(self, n):
        a = n.args
        src = self.g.node(a[0].name).val
        if isinstance(src, TensorMeta) and src.dtype == n.val.dtype:
            return Identity(a[0].name)
        if isinstance(src, TensorMeta) and n.val.dtype in CASTS and set(n.kwargs) <= {"dtype", "layout", "device"}:
            return Term(f"(unary {str_lit('to_' + n.val.dtype)} {self.t(a[0])})")
        return None

    @lowers("aten.bitwise_not.default")
    def _h_bitwise_not_default(self, n):
        """~mask of a bool mask is its logical not (an int's bitwise complement: the call)."""
        x = n.args[0]
        if not isinstance(x, Ref) or self._dtype(x.name) != "bool" or not isinstance(n.val, TensorMeta):
            return None
        return Term(f"(unary \"logical_not\" {self.t(x)})")

    def _binary_op(self, n):
        if len(n.args) < 2:
            return None
        return self._binary(n, _rounded(SCALAR_FORM[n.target], n))

    @lowers("aten.rsub.Tensor", "aten.rsub.Scalar")
    def _rsub(self, n):
        a = n.args
        alpha = n.kwargs.get("alpha", a[2] if len(a) > 2 else 1)
        if alpha != 1 or not isinstance(a[0], Ref):
            return Refused(n.target, "alpha", f"alpha={alpha!r}")
        if isinstance(a[1], Ref):
            return Term(f"(binary \"sub\" {self.t(a[1])} {self.t(a[0])})")
        return Term(f"(scalar \"rsub\" {self.t(a[0])} {scalar_lit(a[1])})")

    def _binary(self, n: Node, op: str):
        x, y = n.args[0], n.args[1]
        alpha = n.kwargs.get("alpha", n.args[2] if len(n.args) > 2 and n.op.endswith(("add", "sub")) else 1)
        if isinstance(x, Ref) and isinstance(y, Ref):
            yt = self._scaled(self.t(y), y.name, alpha)
            if yt is None:
                return Refused(n.target, "alpha", f"alpha={alpha!r} on a {self._dtype(y.name)} tensor")
            return Term(f"(binary {str_lit(op)} {self.t(x)} {yt})")
        if isinstance(x, Ref) and isinstance(y, (int, float, bool)):
            c = y * alpha if alpha != 1 else y
            xd = self._dtype(x.name)
            if op in ("mul", "div") and c == 1 and not isinstance(c, bool) and xd == n.val.dtype:
                return Identity(x.name)      # x * 1 is x, exactly (same dtype)
            if type(c) is int and xd in INT_DTYPES:
                if op not in INT_SCALAR_OPS:
                    return Refused(n.target, "other", f"{op} of a {xd} tensor and the integer {c}")
                if op == "mul" and c == 0 and xd == n.val.dtype:
                    return Term(self._filled("0", n.val.shape, n.val.dtype))   # an integer times 0 is 0
                # integer tensor op integer constant: the constant is an i64 lemmas compute with
                return Term(f"(iscalar {str_lit(op)} {self.t(x)} {c})")
            if xd == "bool" and op not in _COMPARISONS:
                return Refused(n.target, "other", f"{op} of a bool tensor and a number")
            if op == "mul" and xd == n.val.dtype and self._float_zeros(x.name) and const_positive(_scalar_text(c)):
                # a float buffer of zeros times a positive constant is that buffer of zeros,
                # +0.0 exactly (a rank's zero gradient through the backward of x * c).  Folded
                # here: a lemma (scalar mul zeros c) = zeros puts the product in the zeros' class,
                # where x * a * b = x * (ab) then multiplies its constants without end
                return Term(self._filled("0.0", n.val.shape, n.val.dtype))
            return Term(f"(scalar {str_lit(op)} {self.t(x)} {scalar_lit(c)})")
        return None

    @lowers("aten.where.self")
    def _h_where_self(self, n):
        """where(condition, self, other): the term's meaning is torch.where itself (broadcasting of
        all three, the result of torch's promotion of self and other), so every dtype is exact; a
        condition that is not bool (torch refuses it) is declined (opaque)."""
        if len(n.args) != 3 or n.kwargs:
            return None
        c, x, y = n.args
        if not all(isinstance(v, Ref) for v in (c, x, y)) or self._dtype(c.name) != "bool":
            return None
        return Term(f"(where {self.t(c)} {self.t(x)} {self.t(y)})")

    @lowers("aten.masked_fill.Scalar")
    def _h_masked_fill_Scalar(self, n):
        x, mask, c = n.args[:3]
        text = fill_text(c, n.val.dtype) if isinstance(c, (int, float)) else None
        if text is None:
            return None
        return Term(f"(binary {str_lit(MASKED_FILL + text)} {self.t(x)} {self.t(mask)})")

    @lowers("aten.native_dropout_backward.default")
    def _h_native_dropout_backward_default(self, n):
        grad, mask, scale = n.args[:3]
        if not isinstance(scale, (int, float)) or isinstance(scale, bool):
            return Refused(n.target, "scale", f"scale={scale!r}")
        return Term(f"(scalar \"mul\" (binary \"mul\" {self.t(grad)} {self.t(mask)}) {scalar_lit(scale)})")

    @lowers("aten.masked_fill.Tensor")
    def _h_masked_fill_Tensor(self, n):
        x, mask, value = n.args[:3]
        c = self._const_value(value, n.val.dtype)
        text = fill_text(c, n.val.dtype) if c is not None else None
        if text is None:
            return None
        return Term(f"(binary {str_lit(MASKED_FILL + text)} {self.t(x)} {self.t(mask)})")

    # -- pointwise backward ops ---------------------------------------------------------------
    @lowers("aten.gelu_backward.default")
    def _h_gelu_backward_default(self, n):
        grad, x = n.args[:2]
        approx = self._arg(n, 2, "approximate", "none")
        if approx not in ("none", "tanh"):
            return None
        op = "gelu_tanh_backward" if approx == "tanh" else "gelu_backward"
        return Term(f"(binary {str_lit(op)} {self.t(grad)} {self.t(x)})")

    @lowers("aten.threshold_backward.default")
    def _h_threshold_backward_default(self, n):
        grad, x, c = n.args[:3]
        if not isinstance(c, (int, float)) or isinstance(c, bool):
            return None
        return Term(f"(binary {str_lit(THRESHOLD_BACKWARD + _scalar_text(float(c)))} {self.t(grad)} {self.t(x)})")

_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}


def _rounded(op: str, n: Node) -> str:
    """div with rounding_mode 'floor' / 'trunc' is another op (div_floor / div_trunc)."""
    if op != "div":
        return op
    mode = n.kwargs.get("rounding_mode", n.args[2] if len(n.args) > 2 else None)
    return {None: "div", "floor": "div_floor", "trunc": "div_trunc"}[mode]

