"""Contractions: matrix products (mm, bmm, their scaled sums)."""
from __future__ import annotations

from entangle_py.semantics.lower.core import lowers, Refused, Term


class ContractionLowering:
    @lowers("aten.mm.default")
    def _h_mm_default(self, n):
        return Term(f"(mm {self.t(n.args[0])} {self.t(n.args[1])})")

    @lowers("aten.mv.default")
    def _h_mv_default(self, n):
        """mv(A, v) = mm(A, v viewed as a column), viewed back to a vector."""
        a, v = n.args[:2]
        col = f"(view {self.t(v)} {self._shape_list(tuple(self.shape(v.name)) + (1,))})"
        return Term(f"(view (mm {self.t(a)} {col}) {self._shape_list(n.val.shape)})")

    @lowers("aten.bmm.default")
    def _h_bmm_default(self, n):
        return Term(f"(bmm {self.t(n.args[0])} {self.t(n.args[1])})")

    @lowers("aten.addmm.default")
    def _h_addmm_default(self, n):
        return self._add_product(n, "mm")

    @lowers("aten.baddbmm.default")
    def _h_baddbmm_default(self, n):
        return self._add_product(n, "bmm")

    def _add_product(self, n, op):
        """beta * input + alpha * (a op b); with beta = 0 the input's contents never matter."""
        inp, a, b = n.args[:3]
        beta, alpha = n.kwargs.get("beta", 1), n.kwargs.get("alpha", 1)
        prod = self._scaled(f"({op} {self.t(a)} {self.t(b)})", a.name, alpha)
        it = self._scaled(self.t(inp), inp.name, beta)
        if prod is None or it is None:
            return Refused(n.target, "alpha", f"alpha={alpha!r}, beta={beta!r} on {self._dtype(a.name)} tensors")
        if beta == 0 and not isinstance(beta, bool):
            return Term(prod)
        return Term(f"(binary \"add\" {prod} {it})")

