"""Reductions over dims (sum, mean, max, min, counts, all / any, top-k)."""
from __future__ import annotations

from entangle_py.ir import ops
from entangle_py.ir.graph import TensorMeta
from entangle_py.semantics.lower.core import (
    Decomposed, FLOAT_DTYPES, Identity, INT_DTYPES, int_list, lowers, Refused, scalar_lit, Term,
    TupleTerms)
from entangle_py.semantics.terms import str_lit


class ReductionLowering:
    def _reduce_term(self, n, op, x, dims, keepdim, dtype=None, operand=None):
        """(reduce op x dims keepdim) with dims normalised (sorted, non-negative); None when the
        result's dtype differs from the input's (a cast we do not model) or the dims are not plain
        ints.  torch's one promotion of a sum is modelled: a sum of bools or of a narrower integer
        type is the int64 sum of x cast to int64 (exact: the cast is, and int64 sums wrap alike in
        any order), the count of a mask; so is a 0-D one (the cast alone)."""
        src = self.g.node(x.name).val
        if not isinstance(src, TensorMeta) or not isinstance(n.val, (TensorMeta, tuple)):
            return None
        out = n.val[0] if isinstance(n.val, tuple) else n.val
        if not isinstance(out, TensorMeta):
            return None
        operand = operand or self.t(x)
        if out.dtype != src.dtype:      # also covers a dtype= argument
            if not (op == "sum" and out.dtype == "int64" and src.dtype in INT_DTYPES | {"bool"}):
                return None
            operand = f'(unary "to_int64" {operand})'
        nd = len(src.shape)
        if nd == 0:     # a reduction of a 0-D tensor is the tensor (same dtype), or its cast
            return Identity(x.name) if out.dtype == src.dtype else operand
        if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
            dims = list(range(nd))
        elif isinstance(dims, int) and not isinstance(dims, bool):
            dims = [dims]
        if not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
            return None
        dims = sorted({self._dim(d, nd) for d in dims})
        if any(not 0 <= d < max(nd, 1) for d in dims):
            return None
        lst = int_list(dims)
        return f"(reduce {str_lit(op)} {operand} {lst} {1 if keepdim else 0})"

    def _reduction(self, *args):
        t = self._reduce_term(*args)
        return t if t is None or isinstance(t, Identity) else Term(t)

    @lowers("aten.sum.dim_IntList")
    def _h_sum_dim_IntList(self, n):
        return self._reduction(n, "sum", n.args[0], self._arg(n, 1, "dim"), self._arg(n, 2, "keepdim", False),
                               n.kwargs.get("dtype"))

    @lowers("aten.sum.default")
    def _h_sum_default(self, n):
        return self._reduction(n, "sum", n.args[0], None, False, self._arg(n, 1, "dtype"))

    @lowers("aten.mean.dim")
    def _h_mean_dim(self, n):
        t = self._reduce_term(n, "mean", n.args[0], self._arg(n, 1, "dim"), self._arg(n, 2, "keepdim", False),
                              n.kwargs.get("dtype"))
        return self._mean_as_sum(n, t, self._arg(n, 1, "dim")) if isinstance(t, str) else t

    @lowers("aten.mean.default")
    def _h_mean_default(self, n):
        t = self._reduce_term(n, "mean", n.args[0], None, False, self._arg(n, 1, "dtype"))
        return self._mean_as_sum(n, t, None) if isinstance(t, str) else t

    def _mean_as_sum(self, n, mean_term, dims):
        """mean = sum / count, with the sum a tensor of its own (``<node>:sum``), as torch's own
        decomposition computes it: a sum of partial sums can then be related to it.  Only for a
        static count; a symbolic one keeps the plain mean."""
        x = n.args[0]
        src = self.shape(x.name)
        dims = range(len(src)) if dims is None or dims == [] else ([dims] if isinstance(dims, int) else dims)
        count = 1
        for d in dims:
            count = count * src[d] if isinstance(src[d], int) else None
            if count is None:
                return Term(mean_term)
        sum_term = mean_term.replace('(reduce "mean"', '(reduce "sum"', 1)
        return Decomposed("sum", Term(sum_term), f"(scalar \"div\" {{inner}} {scalar_lit(count)})")

    @lowers("aten.amax.default")
    def _h_amax_default(self, n):
        return self._reduction(n, "amax", n.args[0], self._arg(n, 1, "dim", []), self._arg(n, 2, "keepdim", False))

    @lowers("aten.amin.default")
    def _h_amin_default(self, n):
        """amin = -amax(-x) for floats (negation is exact and reverses the order, NaN stays NaN);
        an integer's negation overflows at its least value: other dtypes stay opaque."""
        x = n.args[0]
        if self._dtype(x.name) not in FLOAT_DTYPES:
            return None
        t = self._reduce_term(n, "amax", x, self._arg(n, 1, "dim", []), self._arg(n, 2, "keepdim", False),
                              operand=f'(unary "neg" {self.t(x)})')
        return t if t is None or isinstance(t, Identity) else Term(f'(unary "neg" {t})')

    @lowers("aten.max.dim")
    def _h_max_dim(self, n):
        """values = amax over the dim; the indices stay opaque (congruence only)."""
        dim = self._arg(n, 1, "dim")
        if not isinstance(dim, int) or isinstance(dim, bool):
            return None
        t = self._reduction(n, "amax", n.args[0], [dim], self._arg(n, 2, "keepdim", False))
        if t is None or not isinstance(n.val, tuple):
            return None
        opaque = self._opaque(n)
        return TupleTerms((t,) + tuple(opaque.items[1:]))

    @lowers("aten.topk.default")
    def _h_topk_default(self, n):
        """(values, indices) of topk along dim d: the row-wise op ``topk`` (terms.py: torch.topk on
        each row alone; which of equal values it picks is torch's, per row) on x with d moved last
        by a transpose (and back).  A 0-D x with k = 1 is a row of one element, viewed back."""
        x = n.args[0]
        k, dim = self._arg(n, 1, "k"), self._arg(n, 2, "dim", -1)
        largest, srt = self._arg(n, 3, "largest", True), self._arg(n, 4, "sorted", True)
        if not isinstance(k, int) or isinstance(k, bool) or k < 0:
            return Refused(n.target, "k", f"k={k!r}")
        if not isinstance(largest, bool) or not isinstance(srt, bool):
            return Refused(n.target, "largest", f"largest={largest!r}, sorted={srt!r}")
        if not isinstance(dim, int) or isinstance(dim, bool) or not isinstance(n.val, tuple):
            return Refused(n.target, "dim", f"dim={dim!r}")
        shape = tuple(self.shape(x.name))
        nd = len(shape)
        xt, back = self.t(x), None
        if nd == 0:
            if k != 1:
                return Refused(n.target, "k", f"k={k} on a 0-D tensor")
            xt, back = f"(view {xt} {self._shape_list((1,))})", self._shape_list(())
            d = last = 0
        else:
            d, last = self._dim(dim, nd), nd - 1
            if d != last:
                xt = f"(transpose {xt} {d} {last})"
        items = []
        for i in (0, 1):
            t = f"(rowwise {str_lit(f'topk:{k}:{int(largest)}:{int(srt)}:{i}')} {xt})"
            if d != last:
                t = f"(transpose {t} {d} {last})"
            if back is not None:
                t = f"(view {t} {back})"
            items.append(Term(t))
        return TupleTerms(tuple(items))

    @lowers("aten.count_nonzero.default", "aten.count_nonzero.dim_IntList")
    def _h_count_nonzero(self, n):
        """count_nonzero(x, dims) = the int64 sum of (x != 0) over dims, written with the cast to
        bool (x != 0; NaN counts) as a sum of bools is lowered; no dim (None, []) is every dim;
        a 0-D x is its one element's count."""
        x = n.args[0]
        dims = self._arg(n, 1, "dim")
        if not isinstance(n.val, TensorMeta) or n.val.dtype != "int64":
            return None
        nd = self.ndim(x.name)
        dims = [] if dims is None else [dims] if isinstance(dims, int) and not isinstance(dims, bool) else dims
        if not isinstance(dims, (list, tuple)) or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
            return Refused(n.target, "dim", f"dim={dims!r}")
        if any(not -max(nd, 1) <= d < max(nd, 1) for d in dims):
            return Refused(n.target, "dim", f"dim={dims!r} of a {nd}-D tensor")
        mask = f'(unary "to_int64" (unary "to_bool" {self.t(x)}))'
        if nd == 0:
            return Term(mask)
        lst = int_list(sorted({self._dim(d, nd) for d in dims}) if dims else list(range(nd)))
        return Term(f'(reduce "sum" {mask} {lst} 0)')

    @lowers("aten.all.default", "aten.all.dim", "aten.all.dims", "aten.any.default", "aten.any.dim", "aten.any.dims")
    def _h_all_any(self, n):
        """all(x, dims) = not amax(not x, dims) over bools (an empty reduction is amax's identity,
        false: all of nothing is true); any(x, dims) = amax(x != 0, dims) (any of nothing is
        false); no dim reduced (a 0-D x, dims = []) is x != 0, a cast to bool.  A uint8 result
        (of a uint8 tensor) is declined."""
        is_all = ops.op_name(n.target) == "all"
        x = n.args[0]
        if not isinstance(n.val, TensorMeta) or n.val.dtype != "bool":
            return None
        nd = self.ndim(x.name)
        keepdim = self._arg(n, 2, "keepdim", False)
        overload = n.target.rsplit(".", 1)[1]
        if overload == "default":
            dims, keepdim = list(range(nd)), False
        elif overload == "dim":
            dims = [self._arg(n, 1, "dim")]
        else:
            dims = self._arg(n, 1, "dim")
            dims = list(range(nd)) if dims is None else list(dims)
        if not isinstance(keepdim, bool) or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
            return Refused(n.target, "dim", f"dim={dims!r}, keepdim={keepdim!r}")
        if nd == 0 or not dims:
            return Term(f"(unary \"to_bool\" {self.t(x)})")
        dims = sorted({self._dim(d, nd) for d in dims})
        lst = int_list(dims)
        if not is_all:
            return Term(f"(reduce \"amax\" (unary \"to_bool\" {self.t(x)}) {lst} {1 if keepdim else 0})")
        return Term(f"(unary \"logical_not\" (reduce \"amax\" (unary \"logical_not\" {self.t(x)}) {lst} "
                    f"{1 if keepdim else 0}))")

