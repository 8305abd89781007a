"""Reductions over dims: sum, mean, max, min, product, log-sum-exp, norms, variance, counts, all / any,
top-k (the ops torch tags as reductions, ir/op_classes.py)."""
from __future__ import annotations

from entangle_py.ir import ops
from entangle_py.ir.graph import TensorMeta, TorchConst
from entangle_py.semantics.lower.core import (
    Decomposed, FLOAT_DTYPES, Identity, INT_DTYPES, int_list, lowers, Refused, scalar_lit, _scalar_text,
    Term, TupleTerms)
from entangle_py.semantics.terms import CASTS, str_lit


class ReductionLowering:
    def _reduce_term(self, n, op, x, dims, keepdim, dtype=None, operand=None, own_dtype=False):
        """(reduce op x dims keepdim) with dims normalised (sorted, non-negative; None or [] is
        every dim); None when the dims are not plain ints or the result's dtype is one the term
        does not give.  A ``dtype`` argument casts x first (as torch does: the cast is in the term).
        ``own_dtype``: the reduction's meaning gives torch's result dtype itself (a logsumexp of
        ints is a float); else the result keeps x's dtype but for torch's one promotion of a
        sum: a sum of bools or of a narrower integer type is the int64 sum of x cast to int64
        (exact: the cast is, and int64 sums wrap alike in any order), the count of a mask.  A
        0-D x reduced by sum, mean, amax, amin is x (or its cast); any other reduction of it reduces
        its one dim."""
        src = self.g.node(x.name).val
        if not isinstance(src, TensorMeta) or not isinstance(n.val, (TensorMeta, tuple)):
            return None
        out = n.val[0] if isinstance(n.val, tuple) else n.val
        if not isinstance(out, TensorMeta):
            return None
        operand = operand or self.t(x)
        have, cast = src.dtype, None
        if dtype is not None:
            if not (isinstance(dtype, TorchConst) and dtype.kind == "dtype" and dtype.value in CASTS):
                return None
            if dtype.value != have:
                have = cast = dtype.value
        if out.dtype != have and not own_dtype:
            if not (op == "sum" and out.dtype == "int64" and have in INT_DTYPES | {"bool"}):
                return None
            cast = "int64"
        if cast:
            operand = f"(unary {str_lit('to_' + cast)} {operand})"
        nd = len(src.shape)
        if nd == 0 and op in ("sum", "mean", "amax", "amin"):     # x itself (same dtype), or its cast
            return Identity(x.name) if cast is None else f"(unary {str_lit('to_' + cast)} {self.t(x)})"
        if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
            dims = list(range(max(nd, 1)))
        elif isinstance(dims, int) and not isinstance(dims, bool):
            dims = [dims]
        if not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
            return None
        dims = sorted({self._dim(d, max(nd, 1)) for d in dims})
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
        """amin = -amax(-x) for floats (negation is exact and reverses the order, NaN stays NaN),
        the form the lemmas know; an integer's negation overflows at its least value: amin."""
        return self._min(n, self._arg(n, 1, "dim", []), self._arg(n, 2, "keepdim", False))

    def _min(self, n, dims, keepdim):
        x = n.args[0]
        if self._dtype(x.name) not in FLOAT_DTYPES:
            return self._reduction(n, "amin", x, dims, keepdim)
        t = self._reduce_term(n, "amax", x, dims, keepdim, operand=f'(unary "neg" {self.t(x)})')
        return t if t is None or isinstance(t, Identity) else Term(f'(unary "neg" {t})')

    @lowers("aten.max.default", "aten.min.default")
    def _h_max_min_default(self, n):
        """The max (min) of every element."""
        if ops.op_name(n.target) == "max":
            return self._reduction(n, "amax", n.args[0], None, False)
        return self._min(n, None, False)

    @lowers("aten.aminmax.default")
    def _h_aminmax_default(self, n):
        dims, keepdim = n.kwargs.get("dim"), n.kwargs.get("keepdim", False)
        if not isinstance(n.val, tuple) or len(n.val) != 2 or not isinstance(keepdim, bool):
            return Refused(n.target, "keepdim", f"keepdim={keepdim!r}")
        lo = self._min(n, dims, keepdim)
        hi = self._reduction(n, "amax", n.args[0], dims, keepdim)
        if lo is None or hi is None:
            return None
        return TupleTerms((lo, hi))

    @lowers("aten.max.dim", "aten.min.dim")
    def _h_max_dim(self, n):
        """values = amax (amin) over the dim; the indices stay opaque (congruence only)."""
        dim = self._arg(n, 1, "dim")
        if not isinstance(dim, int) or isinstance(dim, bool):
            return None
        keepdim = self._arg(n, 2, "keepdim", False)
        if ops.op_name(n.target) == "max":
            t = self._reduction(n, "amax", n.args[0], [dim], keepdim)
        else:
            t = self._min(n, [dim], keepdim)
        if t is None or not isinstance(n.val, tuple):
            return None
        opaque = self._opaque(n)
        return TupleTerms((t,) + tuple(opaque.items[1:]))

    # -- reductions whose meaning is torch's own (terms.REDUCTIONS): the result's dtype is theirs --
    def _own(self, n, op, dims, keepdim, dtype=None):
        """A reduction of n's first argument whose term gives torch's result dtype (own_dtype)."""
        if not isinstance(keepdim, bool):
            return Refused(n.target, "keepdim", f"keepdim={keepdim!r}")
        if dtype is not None and not (isinstance(dtype, TorchConst) and dtype.kind == "dtype" and dtype.value in CASTS):
            return Refused(n.target, "dtype", f"dtype={dtype!r}")
        t = self._reduce_term(n, op, n.args[0], dims, keepdim, dtype, own_dtype=True)
        if t is None:
            return Refused(n.target, "dim", f"dim={dims!r}")
        return t if isinstance(t, Identity) else Term(t)

    @lowers("aten.logsumexp.default")
    def _h_logsumexp_default(self, n):
        dims = self._arg(n, 1, "dim")
        if not dims:            # torch refuses an empty dim list here
            return Refused(n.target, "dim", f"dim={dims!r}")
        return self._own(n, "logsumexp", dims, self._arg(n, 2, "keepdim", False))

    @lowers("aten.prod.default", "aten.prod.dim_int")
    def _h_prod(self, n):
        if n.target.endswith(".default"):
            return self._own(n, "prod", None, False, self._arg(n, 1, "dtype"))
        return self._own(n, "prod", [self._arg(n, 1, "dim")], self._arg(n, 2, "keepdim", False),
                         self._arg(n, 3, "dtype"))

    @lowers("aten.nansum.default")
    def _h_nansum_default(self, n):
        return self._own(n, "nansum", self._arg(n, 1, "dim"), self._arg(n, 2, "keepdim", False),
                         self._arg(n, 3, "dtype"))

    @lowers("aten.linalg_vector_norm.default", "aten.norm.Scalar", "aten.norm.ScalarOpt_dim",
            "aten.norm.ScalarOpt_dim_dtype", "aten.norm.ScalarOpt_dtype")
    def _h_norm(self, n):
        """A vector norm of order p over dims ("norm:<p>"; p None is 2), of x cast to dtype first."""
        vector = ops.op_name(n.target) == "linalg_vector_norm"
        overload = n.target.rsplit(".", 1)[1]
        p = self._arg(n, 1, "ord" if vector else "p", 2)
        p = 2 if p is None else p
        if isinstance(p, bool) or not isinstance(p, (int, float)):
            return Refused(n.target, "ord" if vector else "p", f"order {p!r}")
        with_dim = vector or "dim" in overload
        dims = self._arg(n, 2, "dim") if with_dim else None
        keepdim = self._arg(n, 3, "keepdim", False) if with_dim else False
        dtype = n.kwargs.get("dtype", None if vector or "dtype" not in overload
                             else self._arg(n, 4 if with_dim else 2, "dtype"))
        return self._own(n, f"norm:{_scalar_text(p)}", dims, keepdim, dtype)

    def _var_args(self, n):
        """(dims, correction, keepdim) of var / std / var_mean / std_mean in any overload."""
        overload = n.target.rsplit(".", 1)[1]
        if overload == "correction":
            c = n.kwargs.get("correction", self._arg(n, 2, "correction"))
            return self._arg(n, 1, "dim"), 1 if c is None else c, n.kwargs.get("keepdim", False)
        unbiased = self._arg(n, 2 if overload == "dim" else 1, "unbiased", True)
        dims = self._arg(n, 1, "dim") if overload == "dim" else None
        keepdim = self._arg(n, 3, "keepdim", False) if overload == "dim" else False
        return dims, 1 if unbiased else 0, keepdim

    def _spread(self, n):
        """(the variance or standard deviation over dims with its correction ("var:<c>",
        "std:<c>"), dims, keepdim), or Refused."""
        dims, c, keepdim = self._var_args(n)
        if isinstance(c, bool) or not isinstance(c, (int, float)):
            return Refused(n.target, "correction", f"correction={c!r}")
        return self._own(n, f"{ops.op_name(n.target)[:3]}:{_scalar_text(c)}", dims, keepdim), dims, keepdim

    @lowers("aten.var.correction", "aten.var.dim", "aten.var.default",
            "aten.std.correction", "aten.std.dim", "aten.std.default")
    def _h_var_std(self, n):
        got = self._spread(n)
        return got if isinstance(got, Refused) else got[0]

    @lowers("aten.var_mean.correction", "aten.var_mean.dim", "aten.var_mean.default",
            "aten.std_mean.correction", "aten.std_mean.dim", "aten.std_mean.default")
    def _h_var_std_mean(self, n):
        """(variance or standard deviation, mean) over the same dims."""
        if not isinstance(n.val, tuple) or len(n.val) != 2:
            return Refused(n.target, "self", "not two results")
        got = self._spread(n)
        if isinstance(got, Refused):
            return got
        spread, dims, keepdim = got
        mean = self._own(n, "mean", dims, keepdim)
        if isinstance(spread, Refused):
            return spread
        return mean if isinstance(mean, Refused) else TupleTerms((spread, mean))

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

