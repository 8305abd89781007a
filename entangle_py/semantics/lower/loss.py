"""Losses: nll_loss, mse_loss and their backward ops."""
from __future__ import annotations

import math

from entangle_py.ir.graph import Ref
from entangle_py.semantics.lower.core import (
    Decomposed, FLOAT_DTYPES, INT_DTYPES, int_list, lowers, Refused, scalar_lit, _scalar_text, Term,
    TupleTerms)
from entangle_py.semantics.terms import str_lit


class LossLowering:
    @staticmethod
    def _nll_loss_refused(n, weight, reduction, c):
        """The arguments of nll_loss (forward or backward) its terms cannot express: a class
        weight, a reduction other than none / mean / sum, a non-integer ignore index."""
        if weight is not None:
            return Refused(n.target, "weight", "a class weight")
        if reduction not in (0, 1, 2) or isinstance(reduction, bool):
            return Refused(n.target, "reduction", f"reduction={reduction!r}")
        if not isinstance(c, int) or isinstance(c, bool):
            return Refused(n.target, "ignore_index", f"ignore_index={c!r}")
        return None

    @lowers("aten.nll_loss_forward.default")
    def _h_nll_loss_forward_default(self, n):
        """(output, total_weight) of nll_loss over log-probabilities L [C] or [N, C] and class
        targets t: each target's term is -L[..., t] (``tpick``: zero where t is the ignore index,
        which also leaves the count, ``tcount``); reduction none / sum / mean (sum over count)."""
        x, t = n.args[:2]
        weight = self._arg(n, 2, "weight")
        reduction = self._arg(n, 3, "reduction", 1)
        c = self._arg(n, 4, "ignore_index", -100)
        refused = self._nll_loss_refused(n, weight, reduction, c)
        if refused:
            return refused
        xs, ts = tuple(self.shape(x.name)), tuple(self.shape(t.name))
        if len(xs) not in (1, 2) or ts != xs[:-1] or self._dtype(t.name) not in INT_DTYPES:
            return Refused(n.target, "target", f"targets {ts} for log-probabilities {xs}")
        dt = n.val[0].dtype
        if dt not in FLOAT_DTYPES or self._dtype(x.name) != dt:
            return Refused(n.target, "self", f"nll_loss of {self._dtype(x.name)} to {dt}")
        numel = math.prod(ts)
        count_text = _scalar_text(numel) if isinstance(numel, int) else ""
        xt, tt = self.t(x), self.t(t)
        each = f"(unary \"neg\" (tpick {xt} {tt} {c}))"
        count = f"(tcount {xt} {tt} {c} {str_lit(count_text)})"
        total = f"(reduce \"sum\" {each} (ICons 0 (INil)) 0)" if ts else each
        if reduction == 0:
            out = each
            tw = self._filled("0.0", [], dt) if ts else count
        else:
            out = total if reduction == 2 else f"(binary \"div\" {total} {count})"
            tw = count
        return TupleTerms((Term(out), Term(tw)))

    @lowers("aten.nll_loss_backward.default")
    def _h_nll_loss_backward_default(self, n):
        """The gradient of nll_loss over log-probabilities L [C] or [N, C] given the output's
        gradient g: each target's term is -L[..., t], so -g (none: g per target; sum: g; mean:
        g / total_weight, as torch's kernel divides) placed at the target along the class dim,
        zero rows where t is the ignore index (``tplace``).  total_weight is read by the mean
        only (torch's kernel ignores it otherwise); a class weight is refused."""
        g, x, t = (self._arg(n, i, name) for i, name in enumerate(("grad_output", "self", "target")))
        weight = self._arg(n, 3, "weight")
        reduction = self._arg(n, 4, "reduction", 1)
        c = self._arg(n, 5, "ignore_index", -100)
        tw = self._arg(n, 6, "total_weight")
        if not all(isinstance(a, Ref) for a in (g, x, t)):
            return Refused(n.target, "self", "a gradient of non-tensor operands")
        refused = self._nll_loss_refused(n, weight, reduction, c)
        if refused:
            return refused
        xs, ts, gs = (tuple(self.shape(a.name)) for a in (x, t, g))
        if len(xs) not in (1, 2) or ts != xs[:-1] or self._dtype(t.name) not in INT_DTYPES:
            return Refused(n.target, "target", f"targets {ts} for log-probabilities {xs}")
        width = xs[-1]
        if not isinstance(width, int):
            return Refused(n.target, "self", f"a class dim of symbolic size {width}")
        dt = n.val.dtype
        if dt not in FLOAT_DTYPES or self._dtype(x.name) != dt or self._dtype(g.name) != dt:
            return Refused(n.target, "grad_output", f"gradient {self._dtype(g.name)} of nll_loss of "
                                                    f"{self._dtype(x.name)} to {dt}")
        if gs != (ts if reduction == 0 else ()):
            return Refused(n.target, "grad_output", f"a gradient of shape {list(gs)} for reduction={reduction}")
        gt = self.t(g)
        if reduction != 0 and ts:         # one gradient for every target
            gt = f"(expand {gt} {self._shape_list(ts)})"
        if reduction == 1:
            if not isinstance(tw, Ref) or tuple(self.shape(tw.name)) != () or self._dtype(tw.name) != dt:
                return Refused(n.target, "total_weight", f"total_weight={tw!r}")
            gt = f"(binary \"div\" {gt} {self.t(tw)})"
        return Term(f"(tplace (unary \"neg\" {gt}) {self.t(t)} {c} {width})")


    def _mse_operands(self, n, x, y, reduction):
        """(x - y, the broadcast shape, its element count) of an mse_loss, or Refused."""
        if not isinstance(x, Ref) or not isinstance(y, Ref):
            return Refused(n.target, "target", "operands that are not tensors")
        if reduction not in (0, 1, 2) or isinstance(reduction, bool):
            return Refused(n.target, "reduction", f"reduction={reduction!r}")
        dts = {self._dtype(x.name), self._dtype(y.name), n.val.dtype}
        if len(dts) != 1 or not dts <= {"float32", "float64"}:     # half: the kernel computes in float32
            return Refused(n.target, "self", f"an mse_loss of {sorted(dts)} (one float32 or float64 dtype)")
        xs, ys = tuple(self.shape(x.name)), tuple(self.shape(y.name))
        k = max(len(xs), len(ys))
        xs1, ys1 = (1,) * (k - len(xs)) + xs, (1,) * (k - len(ys)) + ys
        if not all(isinstance(a, int) and isinstance(b, int) and (a == b or 1 in (a, b)) for a, b in zip(xs1, ys1)):
            return Refused(n.target, "target", f"shapes {list(xs)} and {list(ys)}")
        shape = tuple(a if b == 1 else b for a, b in zip(xs1, ys1))
        return f"(binary \"sub\" {self.t(x)} {self.t(y)})", shape, math.prod(shape)

    @lowers("aten.mse_loss.default")
    def _h_mse_loss_default(self, n):
        """(x - y) ** 2 (broadcast), then none / mean / sum as torch's decomposition: the mean is the
        sum over every element (a tensor of its own, ``<node>:sum``) divided by the count."""
        x, y = n.args[:2]
        reduction = self._arg(n, 2, "reduction", 1)
        got = self._mse_operands(n, x, y, reduction)
        if isinstance(got, Refused):
            return got
        diff, shape, count = got
        sq = f"(scalar \"pow\" {diff} \"2.0\")"
        if reduction == 0:
            return Term(sq)
        if not shape:
            total = sq
        else:
            total = f"(reduce \"sum\" {sq} {int_list(range(len(shape)))} 0)"
        if reduction == 2 or not shape:
            return Term(total if reduction == 2 else f"(scalar \"div\" {total} {scalar_lit(count)})")
        return Decomposed("sum", Term(total), f"(scalar \"div\" {{inner}} {scalar_lit(count)})")

    @lowers("aten.mse_loss_backward.default")
    def _h_mse_loss_backward_default(self, n):
        """The gradient of mse_loss: norm * (x - y) * g with norm = 2 / (the element count) for the
        mean, 2 otherwise, as torch's decomposition computes it; x and y of the result's shape."""
        g, x, y = n.args[:3]
        reduction = self._arg(n, 3, "reduction")
        got = self._mse_operands(n, x, y, reduction)
        if isinstance(got, Refused):
            return got
        diff, shape, count = got
        if (not isinstance(g, Ref) or tuple(self.shape(x.name)) != shape or tuple(n.val.shape) != shape
                or self._dtype(g.name) != n.val.dtype):
            return Refused(n.target, "grad_output", "a gradient of an operand that broadcasts")
        norm = 2.0 / count if reduction == 1 else 2.0
        if reduction == 1 and count == 0:
            return Refused(n.target, "self", "the mean of no elements")
        return Term(f"(binary \"mul\" (scalar \"mul\" {diff} {scalar_lit(norm)}) {self.t(g)})")
