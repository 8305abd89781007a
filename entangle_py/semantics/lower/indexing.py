"""Indexing: lookups, gathers, scatters, index writes and their backward ops."""
from __future__ import annotations

from entangle_py.ir import ops
from entangle_py.ir.graph import Ref, TensorMeta
from entangle_py.semantics.lower.core import (
    fill_text, Free, Identity, lowers, Refused, _same_size, Term, term_list, transpose_text)
from entangle_py.semantics.terms import CASTS, MASKED_FILL, str_lit


class IndexingLowering:
    @lowers("aten.index_add.default")
    def _h_index_add_default(self, n):
        """index_add(x, d, ids, src, alpha): x plus alpha times the slices of src along d added
        into zeros at their ids (``scatter``, embedding's backward, on the rows of x moved to the
        front: ids outside [0, size) are undefined there as here).  x of at most 2 dims of static
        size along d, ids a 1-D integer tensor, src of x's dtype; else refused."""
        x, dim, ids, src = n.args[:4]
        alpha = self._arg(n, 4, "alpha", 1)
        if not all(isinstance(a, Ref) for a in (x, ids, src)):
            return Refused(n.target, "self", "an argument that is not a tensor")
        xs, is_, ss = (tuple(self.shape(a.name)) for a in (x, ids, src))
        if len(xs) > 2 or not isinstance(dim, int) or isinstance(dim, bool):
            return Refused(n.target, "dim", f"dim={dim!r} of a {len(xs)}-D tensor (at most 2-D)")
        d = self._dim(dim, max(len(xs), 1))
        if len(is_) != 1 or self._dtype(ids.name) not in ("int64", "int32"):
            return Refused(n.target, "index", "not a 1-D tensor of integer ids")
        if len(ss) != len(xs) or self._dtype(src.name) != self._dtype(x.name) or not isinstance((xs or (1,))[d], int):
            return Refused(n.target, "source", f"slices of shape {list(ss)} into a tensor of shape {list(xs)}")
        k, rows = is_[0], (xs or (1,))[d]
        g = self.t(src)
        if len(xs) == 2:            # the slices along d as rows [k, width]
            g = f"(transpose {g} 0 1)" if d == 1 else g
        else:                       # a 1-D (0-D) x: each element a row of width 1
            g = f"(view {g} {self._shape_list((k, 1))})"
        table = f"(scatter {g} {self.t(ids)} {rows})"
        table = (f"(transpose {table} 0 1)" if d == 1 else table) if len(xs) == 2 else \
            f"(view {table} {self._shape_list(xs)})"
        if alpha != 1 or isinstance(alpha, bool):
            table = self._scaled(table, x.name, alpha)
            if table is None:
                return Refused(n.target, "alpha", f"alpha={alpha!r} in {self._dtype(x.name)} arithmetic")
        return Term(f"(binary \"add\" {self.t(x)} {table})")

    @lowers("aten.index_copy.default")
    def _h_index_copy_default(self, n):
        """index_copy(x, d, ids, src): x with its slices along d at ids replaced by src's.  Where
        two ids are equal, which slice is kept is the device's choice (CUDA's is not fixed), so
        the result is a function of the arguments only at distinct ids.  Ids shown distinct
        (``_distinct_ids``: an arange, a 1-D tensor's nonzero, topk's indices of a 1-D tensor):
        the rows ``iput`` writes, along d moved to the front and back, exact.  Any other ids: a
        value the checker does not know (``Free``, a leaf equal to nothing, not even another
        index_copy of the same arguments), so nothing is ever proven from the write order."""
        x, dim, ids, src = (list(n.args) + [None] * 4)[:4]
        if (all(isinstance(a, Ref) for a in (x, ids, src)) and isinstance(dim, int) and not isinstance(dim, bool)
                and isinstance(n.val, TensorMeta)):
            xs, ss = tuple(self.shape(x.name)), tuple(self.shape(src.name))
            if (xs and -len(xs) <= dim < len(xs) and len(ss) == len(xs) and self.ndim(ids.name) == 1
                    and self._dtype(ids.name) == "int64" and self._dtype(src.name) == self._dtype(x.name)
                    and n.val.dtype == self._dtype(x.name) and self._distinct_ids(ids.name)):
                d = self._dim(dim, len(xs))
                put = f"(iput {transpose_text(self.t(x), 0, d)} {self.t(ids)} {transpose_text(self.t(src), 0, d)})"
                return Term(transpose_text(put, 0, d))
        return Free(f"{n.target} (ids not shown distinct: which write wins is the device's)")

    def _distinct_ids(self, name) -> bool:
        """``name`` (1-D, int64) holds ids that are all different: an int64 arange of integer
        bounds (start + i * step, step != 0), a reshape of a 1-D tensor's nonzero, or topk's
        indices of a 1-D tensor (``ops.DISTINCT_INDICES``), through identities."""
        src = self._source(name)
        if src.target in ops.ARANGES:
            return src.val.dtype == "int64" and isinstance(self._h_arange(src), Term)
        if src.target in ops.RESHAPES and src.args and isinstance(src.args[0], Ref):
            return self._distinct_rows(src.args[0].name)
        return self.ndim(name) == 1 and self._distinct_along(Ref(name)) == 0

    @lowers("aten.gather.default")
    def _h_gather_default(self, n):
        """gather(x, last dim, idx) with idx x's shape but 1 on the last dim: the pick of
        idx's one column, viewed back.  ``pick`` wraps negative indices where gather raises: the
        two agree wherever the program runs.  Other gathers are opaque."""
        x, dim, idx = n.args[:3]
        xs = tuple(self.shape(x.name))
        if not isinstance(idx, Ref) or len(xs) == 0 or self._dim(dim, len(xs)) != len(xs) - 1:
            return None
        if tuple(self.shape(idx.name)) != xs[:-1] + (1,) or self._dtype(idx.name) not in ("int64", "int32"):
            return None
        col = f"(view {self.t(idx)} {self._shape_list(xs[:-1])})"
        return Term(f"(view (pick {self.t(x)} {col}) {self._shape_list(n.val.shape)})")

    @lowers("aten.index_select.default")
    def _h_index_select_default(self, n):
        """index_select(x, d, ids) with 1-D integer ids: the rows ``take`` looks up, along d (moved
        to the front and back).  ``take`` wraps negative ids where index_select raises: the two
        agree wherever the program runs.  A 0-D index (which keeps a dim of 1) or a 0-D x stays
        opaque."""
        x, dim, idx = n.args[:3]
        if not isinstance(x, Ref) or not isinstance(idx, Ref) or not isinstance(dim, int):
            return None
        nd = self.ndim(x.name)
        if nd == 0 or self.ndim(idx.name) != 1 or self._dtype(idx.name) not in ("int64", "int32"):
            return None
        d = self._dim(dim, nd)
        if d == 0:
            return Term(f"(take {self.t(x)} {self.t(idx)})")
        return Term(f"(transpose (take (transpose {self.t(x)} 0 {d}) {self.t(idx)}) 0 {d})")

    @lowers("aten.scatter_add.default")
    def _h_scatter_add_default(self, n):
        """scatter_add(x, last dim, idx, src) into a float buffer of zeros (``ops.ZERO_FILLS``)
        with idx and src of x's shape but 1 on the last dim: src's one column placed at idx's
        (``place``, the gradient of a pick), viewed back.  Anything else is refused: several
        indices per row may collide (their order of addition is the device's), and a buffer that
        is not zeros is not a placement."""
        return self._one_column_into_zeros(n, "scatter_add")

    @lowers("aten.scatter.src")
    def _h_scatter_src(self, n):
        """scatter(x, last dim, idx, src) -- the gradient of topk's values, of a max/min along a
        dim -- under the same conditions as scatter_add: into a float buffer of zeros, one int64
        index column per row, so each row is written once at one position and the rest stays zero:
        the write equals the addition into zeros (``place``; v and 0 + v differ at most in the sign
        of a zero).  Anything else is refused: with several columns two indices of a row may be
        equal (which write wins is the device's), and into a buffer that is not zeros the old
        values show.  Several columns are written as the sum of their placements where the indices
        are positions all different in every row along dim (``ops.DISTINCT_INDICES``: topk's
        indices; each position is written once), along any dim (moved last by a transpose)."""
        x, dim = n.args[:2]
        along = self._distinct_along(n.args[2])
        if (along is not None and isinstance(x, Ref) and isinstance(dim, int) and not isinstance(dim, bool)
                and -len(self.shape(x.name)) <= dim < len(self.shape(x.name))
                and self._dim(dim, len(self.shape(x.name))) == along):
            return self._distinct_columns_into_zeros(n)
        return self._one_column_into_zeros(n, "scatter")

    def _distinct_along(self, idx):
        """The dim along which ``idx`` holds positions all different in every row (an output of
        ``ops.DISTINCT_INDICES``, through identities), or None."""
        if not isinstance(idx, Ref):
            return None
        g = self._source(idx.name)
        if g.target != ops.GETITEM or len(g.args) < 2 or not isinstance(g.args[0], Ref):
            return None
        src = self.g.node(g.args[0].name)
        fact = ops.DISTINCT_INDICES.get(src.target)
        if fact is None or g.args[1] != fact[0] or not src.args or not isinstance(src.args[0], Ref):
            return None
        dim = self._arg(src, fact[1], "dim", fact[2])
        nd = len(self.shape(src.args[0].name))
        if not isinstance(dim, int) or isinstance(dim, bool) or nd == 0 or not -nd <= dim < nd:
            return None
        if len(self.shape(idx.name)) != nd:
            return None
        return self._dim(dim, nd)

    def _distinct_columns_into_zeros(self, n):
        x, dim, idx, src = n.args[:4]
        if not all(isinstance(a, Ref) for a in (x, idx, src)):
            return Refused(n.target, "index", "a scatter of non-tensor operands")
        xs, ids = tuple(self.shape(x.name)), tuple(self.shape(idx.name))
        if not isinstance(dim, int) or isinstance(dim, bool) or not -len(xs) <= dim < len(xs):
            return Refused(n.target, "dim", f"dim={dim!r}")
        d, last = self._dim(dim, len(xs)), len(xs) - 1
        k, width = ids[d], xs[d]
        if (tuple(self.shape(src.name)) != ids or ids[:d] + ids[d + 1:] != xs[:d] + xs[d + 1:]
                or self._dtype(idx.name) != "int64" or not isinstance(width, int) or not isinstance(k, int)
                or k < 1):
            return Refused(n.target, "index", "indices and values not of the buffer's shape but along dim")
        xdt = self._dtype(x.name)
        if not self._float_zeros(x.name) or self._dtype(src.name) != xdt or n.val.dtype != xdt:
            return Refused(n.target, "self", "a scatter into a buffer that is not float zeros of src's dtype")
        st, it = self.t(src), self.t(idx)
        moved = list(xs)
        if d != last:
            st, it = f"(transpose {st} {d} {last})", f"(transpose {it} {d} {last})"
            moved[d], moved[last] = moved[last], moved[d]
        col = self._shape_list(moved[:-1])
        parts = [f"(place (view (slice {st} {last} (DLit {j}) (DLit {j + 1})) {col}) "
                 f"(view (slice {it} {last} (DLit {j}) (DLit {j + 1})) {col}) {width})" for j in range(k)]
        t = parts[0]
        for p in parts[1:]:
            t = f"(binary \"add\" {t} {p})"
        return Term(t if d == last else f"(transpose {t} {d} {last})")

    def _one_column_into_zeros(self, n, what):
        x, dim, idx, src = n.args[:4]
        if not all(isinstance(a, Ref) for a in (x, idx, src)):
            return Refused(n.target, "index", f"a {what} of non-tensor operands")
        xs = tuple(self.shape(x.name))
        if len(xs) == 0 or not isinstance(dim, int) or self._dim(dim, len(xs)) != len(xs) - 1:
            return Refused(n.target, "dim", f"dim={dim!r}: only along the last dim")
        lead, width = xs[:-1], xs[-1]
        if (tuple(self.shape(idx.name)) != lead + (1,) or tuple(self.shape(src.name)) != lead + (1,)
                or self._dtype(idx.name) != "int64" or not isinstance(width, int)):
            return Refused(n.target, "index", "not one int64 index column of the buffer's leading shape")
        xdt = self._dtype(x.name)
        if not self._float_zeros(x.name) or self._dtype(src.name) != xdt or n.val.dtype != xdt:
            return Refused(n.target, "self", f"a {what} into a buffer that is not float zeros of src's dtype")
        col = self._shape_list(lead)
        return Term(f"(view (place (view {self.t(src)} {col}) (view {self.t(idx)} {col}) {width}) "
                    f"{self._shape_list(xs)})")

    @lowers("aten.embedding.default")
    def _h_embedding_default(self, n):
        # The forward value of embedding is weight[ids] (padding_idx only affects gradients).
        # ``take`` has index semantics (negative ids wrap); embedding raises on them instead, so
        # the two agree wherever the program runs.
        w, ids = n.args[:2]
        return Term(f"(take {self.t(w)} {self.t(ids)})")

    @lowers("aten.index.Tensor")
    def _h_index_Tensor(self, n):
        x, idx = n.args[:2]
        if not isinstance(idx, (list, tuple)) or not all(isinstance(i, Ref) for i in idx):
            return None
        if not all(self._dtype(i.name) in ("int64", "int32") for i in idx):
            return None
        if len(idx) == 1:
            return Term(f"(take {self.t(x)} {self.t(idx[0])})")
        if len(idx) == 2 and self._is_row_pick(n):
            picked = self._pick_operands(n)
            if picked is not None:   # rows of a flattened [..., V] tensor by a flattened index
                return Term(f"(view (pick {self.var(picked[0])} {self.var(picked[1])}) "
                            f"{self._shape_list(n.val.shape)})")
            return Term(f"(pick {self.t(x)} {self.t(idx[1])})")
        return None

    def _is_row_pick(self, n) -> bool:
        """index.Tensor(x, [arange(0, rows), t]) with x 2-D and t 1-D of length rows."""
        if n.target != "aten.index.Tensor" or len(n.args) < 2:
            return False
        x, idx = n.args[:2]
        if not isinstance(x, Ref) or not isinstance(idx, (list, tuple)) or len(idx) != 2:
            return False
        if not all(isinstance(i, Ref) for i in idx):
            return False
        xs = self.shape(x.name)
        if len(xs) != 2 or tuple(self.shape(idx[1].name)) != (xs[0],):
            return False
        return self._is_arange(idx[0].name, xs[0])

    def _is_arange(self, name, length) -> bool:
        a = self._source(name)
        args = list(a.args)
        step = a.kwargs.get("step", 1)
        if a.target == "aten.arange.default":
            start, end = 0, args[0] if args else None
        elif a.target == "aten.arange.start":
            start, end = (args + [None, None])[:2]
        elif a.target == "aten.arange.start_step":
            start, end, step = (args + [None, None, 1])[:3]
        else:
            return False
        v = a.val
        return (start == 0 and step == 1 and isinstance(v, TensorMeta) and v.dtype in ("int64", "int32")
                and tuple(v.shape) == (length,) and _same_size(end, length))

    def _pick_operands(self, n):
        """(L, I) when ``n`` = x[arange, t] with x = reshape(L, [-1, L.shape[-1]]) and
        t = reshape(I, [-1]), I of L's leading shape: then n = flatten(pick(L, I))."""
        if not self._is_row_pick(n):
            return None
        x, t = n.args[0], n.args[1][1]
        xn, tn = self._source(x.name), self._source(t.name)
        if xn.target not in ops.RESHAPES or tn.target not in ops.RESHAPES:
            return None
        L, I = xn.args[0].name, tn.args[0].name
        ls, is_ = tuple(self.shape(L)), tuple(self.shape(I))
        if len(ls) < 1 or ls[-1] != self.shape(x.name)[1] or is_ != ls[:-1]:
            return None
        if self._dtype(I) not in ("int64", "int32"):
            return None
        return L, I

    @lowers(ops.NONZERO)
    def _h_nonzero(self, n):
        return Term(f"(nonzero {self.t(n.args[0])})")

    def _distinct_rows(self, name) -> bool:
        """``name`` is the nonzero result of a 1-D tensor: positions that never repeat."""
        src = self._source(name)
        return (src.target == ops.NONZERO and isinstance(src.args[0], Ref)
                and self.ndim(src.args[0].name) == 1)

    @lowers("aten.index_put.default")
    def _h_index_put_default(self, n):
        # x[i] = v at the distinct positions of a 1-D tensor's nonzero (iput); x[mask] = c with a
        # boolean mask on x's leading dims and a declared constant c: masked_fill(x, mask reshaped
        # to broadcast from the right, c)
        x, indices, values = n.args[:3]
        accumulate = self._arg(n, 3, "accumulate", False)
        if not isinstance(x, Ref) or not isinstance(indices, (list, tuple)) or len(indices) != 1:
            return None
        mask = indices[0]
        if (isinstance(mask, Ref) and isinstance(values, Ref) and self._distinct_rows(mask.name)
                and self._dtype(values.name) == self._dtype(x.name) and isinstance(accumulate, bool)):
            put = f"(iput {self.t(x)} {self.t(mask)} {self.t(values)})"
            if not accumulate:
                return Term(put)
            # added at distinct positions (index's backward): x plus the values written into zeros
            zeros = self._filled(fill_text(0, n.val.dtype), n.val.shape, n.val.dtype)
            return Term(f"(binary \"add\" {self.t(x)} (iput {zeros} {self.t(mask)} {self.t(values)}))")
        if accumulate:
            return None
        if not isinstance(mask, Ref) or self._dtype(mask.name) != "bool":
            return None
        vv = self.g.node(values.name).val if isinstance(values, Ref) else None
        if not isinstance(vv, TensorMeta) or tuple(vv.shape) != ():
            return None
        c = self._const_value(values, n.val.dtype)
        text = fill_text(c, n.val.dtype) if c is not None else None
        if text is None:
            return None       # an undeclared (or unrepresentable) value: congruence only
        xs, ms = tuple(self.shape(x.name)), tuple(self.shape(mask.name))
        if len(ms) > len(xs) or ms != xs[:len(ms)]:
            return None
        mt = self.t(mask)
        if len(ms) < len(xs):
            mt = f"(view {mt} {self._shape_list(ms + (1,) * (len(xs) - len(ms)))})"
        return Term(f"(binary {str_lit(MASKED_FILL + text)} {self.t(x)} {mt})")

    @lowers("aten.slice_scatter.default")
    def _h_slice_scatter_default(self, n):
        """slice_scatter(x, src, dim, start, end, step): x with its slice [start:end] along dim
        replaced by src cast to x's dtype -- the concat of x's part before it, src and x's part
        after it (step 1 and a static size along dim; otherwise declined).  Into a float buffer
        of zeros (``ops.ZERO_FILLS``): src zero-padded (``zpad``)."""
        x, src = n.args[:2]
        dim, start = self._arg(n, 2, "dim", 0), self._arg(n, 3, "start")
        end, step = self._arg(n, 4, "end"), self._arg(n, 5, "step", 1)
        if step != 1 or not isinstance(src, Ref) or not isinstance(x, Ref):
            return None
        xs, ss = tuple(self.shape(x.name)), tuple(self.shape(src.name))
        d = self._dim(dim, len(xs))
        if not isinstance(xs[d], int) or not all(isinstance(v, (int, type(None))) and not isinstance(v, bool)
                                                 for v in (start, end)):
            return None
        s, e = slice(start, end).indices(xs[d])[:2]
        e = max(e, s)
        if len(ss) != len(xs) or ss[d] != e - s or any(ss[i] != xs[i] for i in range(len(xs)) if i != d):
            return None
        st = self.t(src)
        xdt = self._dtype(x.name)
        if self._dtype(src.name) != xdt:
            if xdt not in CASTS:
                return None
            st = f"(unary {str_lit('to_' + xdt)} {st})"
        elif s == 0 and e == xs[d]:
            return Identity(src.name)
        if self._float_zeros(x.name) and (s, e) != (0, xs[d]):
            # into a buffer of zeros: src padded with zeros, like slice_backward (floats only,
            # as there: concat-zpad-rsum sums padded parts)
            return Term(f"(zpad {st} {d} {s} {xs[d] - e})")
        parts = ([f"(slice {self.t(x)} {d} (DLit 0) (DLit {s}))"] if s > 0 else []) + [st] + \
                ([f"(slice {self.t(x)} {d} (DLit {e}) (DLit {xs[d]}))"] if e < xs[d] else [])
        if len(parts) == 1:
            return Term(parts[0])
        return Term(f"(concat {term_list(parts)} {d})")

    @lowers("aten.embedding_dense_backward.default")
    def _h_embedding_dense_backward_default(self, n):
        """The gradient of embedding(weight, ids): ``(scatter grad ids num_weights)``, each row of
        grad added into row ids[p] of a zero table; with padding_idx p, that table with row p zeroed
        (a concat around a zero row).  scale_grad_by_freq other than False is refused."""
        grad, ids = n.args[:2]
        num = self._arg(n, 2, "num_weights")
        pad = self._arg(n, 3, "padding_idx", -1)
        freq = self._arg(n, 4, "scale_grad_by_freq", False)
        if freq is not False:
            return Refused(n.target, "scale_grad_by_freq", f"scale_grad_by_freq={freq!r}")
        if not isinstance(num, int) or isinstance(num, bool) or num < 0:
            return Refused(n.target, "num_weights", f"num_weights={num!r} (not a constant)")
        # F.embedding makes a negative padding_idx a row; -1 here means none
        if not isinstance(pad, int) or isinstance(pad, bool) or not -1 <= pad < num:
            return Refused(n.target, "padding_idx", f"padding_idx={pad!r} of {num} rows")
        if not isinstance(grad, Ref) or not isinstance(ids, Ref) or self._dtype(ids.name) not in ("int64", "int32"):
            return Refused(n.target, "indices", "not a tensor of integer ids")
        gs, is_ = tuple(self.shape(grad.name)), tuple(self.shape(ids.name))
        if len(gs) != len(is_) + 1 or gs[:-1] != is_ or tuple(n.val.shape) != (num, gs[-1]):
            return Refused(n.target, "grad_output", f"gradient of shape {list(gs)} for ids of shape {list(is_)}")
        if self._dtype(grad.name) != n.val.dtype:
            return Refused(n.target, "grad_output", "a gradient of another dtype than the result")
        table = f"(scatter {self.t(grad)} {self.t(ids)} {num})"
        if pad == -1:
            return Term(table)
        # padding_idx p: row p gets no gradient, the table's other rows are kept
        row = self._filled("0.0", [1, gs[-1]], n.val.dtype)
        # nested to the right, (before, (row, after)): a rank's block holding the padding row then
        # flattens and regroups with the blocks of the others (concat-flatten-last, -group-*)
        if pad + 1 < num:
            row = f"(concat {term_list([row, f'(slice {table} 0 (DLit {pad + 1}) (DLit {num}))'])} 0)"
        if pad > 0:
            row = f"(concat {term_list([f'(slice {table} 0 (DLit 0) (DLit {pad}))', row])} 0)"
        return Term(row)

