"""Contractions: matrix products (mm, bmm, their scaled sums, dot) and scaled dot-product attention."""
from __future__ import annotations

import math

from entangle_py.ir.graph import Ref
from entangle_py.semantics.lower.core import (
    dim_term, lowers, Refused, scalar_lit, Term, transpose_text, TupleTerms)


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


    @lowers("aten.dot.default")
    def _h_dot_default(self, n):
        """dot(a, b) of two vectors = mm(a as a row, b as a column), viewed to 0-D."""
        a, b = n.args[:2]
        (k,) = self.shape(a.name)
        row, col = self._shape_list((1, k)), self._shape_list((k, 1))
        return Term(f"(view (mm (view {self.t(a)} {row}) (view {self.t(b)} {col})) {self._shape_list(())})")

    # -- attention: scaled dot-product attention as its math ------------------------------------
    def _sdpa_scores(self, n, q, k, v, p, causal, mask, scale):
        """(scores term, last dim, scale) of a CPU attention call (forward or backward), or Refused:
        scale * q k^T, then the causal mask and attn_mask (see _h_sdpa)."""
        if not all(isinstance(t, Ref) for t in (q, k, v)):
            return Refused(n.target, "query", "not tensors")
        if p != 0 or not isinstance(causal, bool):
            return Refused(n.target, "dropout_p", f"dropout_p={p!r}, is_causal={causal!r}")
        dt = self._dtype(q.name)
        if dt not in ("float32", "float64") or self._dtype(k.name) != dt or self._dtype(v.name) != dt:
            return Refused(n.target, "query", f"a {dt} attention (computed in another precision)")
        qs, ks, vs = (tuple(self.shape(t.name)) for t in (q, k, v))
        if len(qs) < 3 or not (len(qs) == len(ks) == len(vs)) or qs[:-2] != ks[:-2] or ks[:-1] != vs[:-1]:
            return Refused(n.target, "key", f"query {list(qs)}, key {list(ks)}, value {list(vs)}")
        if scale is None:
            if not isinstance(qs[-1], int):
                return Refused(n.target, "scale", f"no scale, a head size {qs[-1]}")
            scale = 1.0 / math.sqrt(qs[-1])
        if isinstance(scale, bool) or not isinstance(scale, (int, float)):
            return Refused(n.target, "scale", f"scale={scale!r}")
        last = len(qs) - 1
        s = f"(scalar \"mul\" (matmul {self.t(q)} {transpose_text(self.t(k), last - 1, last)}) {scalar_lit(scale)})"
        ninf = self._filled("-inf", (), dt)
        if causal:
            lq, lk = qs[-2], ks[-2]
            rows = f"(view (arange 0 1 {dim_term(lq)}) {self._shape_list((lq, 1))})"
            cols = f"(view (arange 0 1 {dim_term(lk)}) {self._shape_list((1, lk))})"
            s = f"(where (binary \"ge\" {rows} {cols}) {s} {ninf})"
        if mask is not None:
            if not isinstance(mask, Ref):
                return Refused(n.target, "attn_mask", f"attn_mask={mask!r}")
            md = self._dtype(mask.name)
            if md == "bool":
                s = f"(where {self.t(mask)} {s} {ninf})"
            elif md == dt:
                s = f"(binary \"add\" {s} {self.t(mask)})"
            else:
                return Refused(n.target, "attn_mask", f"a {md} mask for a {dt} attention")
        return s, last, scale

    @staticmethod
    def _sdpa_dead(s, last, keep):
        """Rows whose scores are all -inf (the kernel's output and gradients are 0 there)."""
        return (f"(unary \"logical_not\" (reduce \"amax\" (unary \"logical_not\" (scalar \"eq\" {s} \"-inf\")) "
                f"(ICons {last} (INil)) {keep}))")

    @lowers("aten._scaled_dot_product_flash_attention_for_cpu.default")
    def _h_sdpa(self, n):
        """(softmax(q k^T * scale (+ mask)) v, log-sum-exp of the scores) as torch's math reference
        computes it (F.scaled_dot_product_attention on CPU): scale = 1 / sqrt(E) when none is given;
        is_causal masks the keys after each query (top-left: key j <= query i); a float mask is
        added, a bool one keeps the scores where it holds (-inf elsewhere).  A row whose scores are
        all -inf has output 0 and log-sum-exp 0 (the kernel's; softmax would give nan).  Refused:
        dropout (random), half precision (the kernel computes in float32 and rounds), q, k and v of
        other batch dims (grouped heads), a symbolic head size without a scale."""
        q, k, v = n.args[:3]
        if not isinstance(n.val, tuple) or len(n.val) != 2:
            return Refused(n.target, "query", "not two results")
        scores = self._sdpa_scores(n, q, k, v, self._arg(n, 3, "dropout_p", 0.0), self._arg(n, 4, "is_causal", False),
                                   n.kwargs.get("attn_mask"), n.kwargs.get("scale"))
        if isinstance(scores, Refused):
            return scores
        s, last, _ = scores
        dt = self._dtype(q.name)
        out = f"(matmul (softmax {s} {last}) {self.t(v)})"
        # a row of -inf scores: output 0 and log-sum-exp 0 (the kernel's, not softmax's nan)
        zero = self._filled("0.0", (), dt)
        out = f"(where {self._sdpa_dead(s, last, 1)} {zero} {out})"
        lse = f"(where {self._sdpa_dead(s, last, 0)} {zero} (reduce \"logsumexp\" {s} (ICons {last} (INil)) 0))"
        return TupleTerms((Term(out), Term(lse)))

    @lowers("aten._scaled_dot_product_flash_attention_for_cpu_backward.default")
    def _h_sdpa_backward(self, n):
        """The gradients (dq, dk, dv) of _h_sdpa's output, as the math backward computes them from
        the probabilities P (0 on a row of -inf scores, as the kernel's exp(s - lse) is there):
        dv = P^T dO, dS = P * (dO v^T - rowsum(dO * out)), dq = scale * dS k, dk = scale * dS^T q.
        The saved log-sum-exp is not read (P is recomputed from the scores); ``out`` is, as the
        kernel reads it.  Refused as the forward is."""
        g, q, k, v, o = n.args[:5]
        if not isinstance(n.val, tuple) or len(n.val) != 3 or not all(isinstance(t, Ref) for t in (g, o)):
            return Refused(n.target, "grad_out", "not tensors, or not three results")
        if tuple(self.shape(g.name)) != tuple(self.shape(o.name)) or self._dtype(g.name) != self._dtype(q.name):
            return Refused(n.target, "grad_out", f"a gradient {list(self.shape(g.name))} of an output "
                                                 f"{list(self.shape(o.name))}")
        scores = self._sdpa_scores(n, q, k, v, self._arg(n, 6, "dropout_p", 0.0), self._arg(n, 7, "is_causal", False),
                                   n.kwargs.get("attn_mask"), n.kwargs.get("scale"))
        if isinstance(scores, Refused):
            return scores
        s, last, scale = scores
        zero = self._filled("0.0", (), self._dtype(q.name))
        prob = f"(where {self._sdpa_dead(s, last, 1)} {zero} (softmax {s} {last}))"
        gt, c = self.t(g), scalar_lit(scale)
        dv = f"(matmul {transpose_text(prob, last - 1, last)} {gt})"
        dprob = f"(matmul {gt} {transpose_text(self.t(v), last - 1, last)})"
        rowdot = f"(reduce \"sum\" (binary \"mul\" {gt} {self.t(o)}) (ICons {last} (INil)) 1)"
        ds = f"(binary \"mul\" {prob} (binary \"sub\" {dprob} {rowdot}))"
        dq = f"(scalar \"mul\" (matmul {ds} {self.t(k)}) {c})"
        dk = f"(scalar \"mul\" (matmul {transpose_text(ds, last - 1, last)} {self.t(q)}) {c})"
        return TupleTerms((Term(dq), Term(dk), Term(dv)))
