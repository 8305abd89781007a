"""Losses: nll_loss and its backward."""
from __future__ import annotations

import math

from entangle_py.ir.graph import Ref
from entangle_py.semantics.lower.core import (
    FLOAT_DTYPES, INT_DTYPES, lowers, Refused, _scalar_text, Term, TupleTerms)
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

