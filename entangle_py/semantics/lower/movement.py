"""Views and data movement: every element of the result is an element of the operand (or a zero / constant of a pad)."""
from __future__ import annotations

from entangle_py.ir import ops
from entangle_py.ir.graph import Ref
from entangle_py.semantics.lower.core import (
    fill_text, FLOAT_DTYPES, Identity, lowers, permute_text, Refused, Term, term_list, transpose_text,
    TupleTerms)


class MovementLowering:
    @lowers("aten.t.default")
    def _h_t_default(self, n):
        x = n.args[0]
        return Term(f"(transpose {self.t(x)} 0 1)") if self.ndim(x.name) == 2 else Identity(x.name)

    @lowers("aten.transpose.int")
    def _h_transpose_int(self, n):
        x, a, b = n.args[:3]
        nd = self.ndim(x.name)
        a, b = self._dim(a, nd), self._dim(b, nd)
        return Identity(x.name) if a == b else Term(transpose_text(self.t(x), a, b))

    @lowers("aten.permute.default")
    def _h_permute_default(self, n):
        x, dims = n.args[:2]
        nd = self.ndim(x.name)
        dims = [self._dim(d, nd) for d in dims]
        return Identity(x.name) if dims == list(range(nd)) else Term(permute_text(self.t(x), dims))

    @lowers(*sorted(ops.RESHAPES), "aten.unsqueeze.default", "aten.squeeze.dim", "aten.squeeze.dims",
            "aten.squeeze.default", "aten.flatten.using_ints")
    def _reshape_to_output(self, n):
        x = n.args[0]
        picked = self._pick_operands(self._source(x.name))
        if picked is not None and tuple(self.shape(picked[1])) == tuple(n.val.shape):
            # the flat row pick reshaped back to the index's shape: the pick itself
            return Term(f"(pick {self.var(picked[0])} {self.var(picked[1])})")
        if tuple(self.shape(x.name)) == tuple(n.val.shape):
            return Identity(x.name)
        return Term(f"(view {self.t(x)} {self._shape_list(n.val.shape)})")

    @lowers("aten.expand.default")
    def _h_expand_default(self, n):
        # an expand to x's own shape stays a term (expand-self makes it x): beside a wider one,
        # it says how a rank's share of the broadcast is laid out (expand-split-bcast)
        x = n.args[0]
        return Term(f"(expand {self.t(x)} {self._shape_list(n.val.shape)})")

    @lowers("aten.repeat.default")
    def _h_repeat_default(self, n):
        """repeat(x, r): x with leading 1s to len(r) dims, each dim i tiled r[i] times = a size-1
        dim inserted before every tiled dim, expanded to r[i], the pairs merged by a view."""
        x, reps = n.args[:2]
        shape = list(self.shape(x.name))
        if (not isinstance(reps, (list, tuple)) or len(reps) < len(shape)
                or not all(isinstance(r, int) and not isinstance(r, bool) and r >= 0 for r in reps)):
            return Refused(n.target, "repeats", f"repeats={reps!r}")
        full = [1] * (len(reps) - len(shape)) + shape
        inner, big = [], []
        for r, size in zip(reps, full):
            if r != 1:
                inner.append(1)
                big.append(r)
            inner.append(size)
            big.append(size)
        t = self.t(x)
        if inner != shape:
            t = f"(view {t} {self._shape_list(inner)})"
        if big != inner:
            t = f"(expand {t} {self._shape_list(big)})"
        if list(n.val.shape) != big:
            t = f"(view {t} {self._shape_list(n.val.shape)})"
        return Identity(x.name) if t == self.t(x) else Term(t)

    @lowers("aten.slice.Tensor")
    def _h_slice_Tensor(self, n):
        x = n.args[0]
        dim = self._arg(n, 1, "dim", 0)
        start = self._arg(n, 2, "start", None)
        end = self._arg(n, 3, "end", None)
        step = self._arg(n, 4, "step", 1)
        if not all(isinstance(v, (int, type(None))) and not isinstance(v, bool) for v in (start, end, step)):
            return None
        shape = self.shape(x.name)
        d = self._dim(dim, len(shape))
        size = shape[d]
        if not isinstance(size, int) or step is None or step < 1:
            return None
        if step != 1:
            return self._strided_slice(x, d, start, end, step)
        s, e = slice(start, end).indices(size)[:2]
        e = max(e, s)
        if s == 0 and e == size:
            return Identity(x.name)
        return Term(f"(slice {self.t(x)} {d} (DLit {s}) (DLit {e}))")

    def _strided_slice(self, x, d, start, end, k):
        """x[..., a:b:k] along d (k > 1), in data movement only: the n picked elements are column
        j of the window x[..., a - j : a - j + k n] viewed as [..., n, k] (j the least shift that
        keeps the window inside the dim); when no shift fits, the first n - 1 that way and the
        last one sliced, concatenated."""
        shape = list(self.shape(x.name))
        size = shape[d]
        a, b, _ = slice(start, end, k).indices(size)
        count = len(range(a, b, k))
        xt = self.t(x)

        def picked(m):          # the first m (>= 2) picked elements, when a shift fits
            j = max(0, a + k * m - size)
            if j > a:
                return None
            lo = a - j
            window = f"(slice {xt} {d} (DLit {lo}) (DLit {lo + k * m}))"
            split = self._shape_list(shape[:d] + [m, k] + shape[d + 1:])
            col = f"(slice (view {window} {split}) {d + 1} (DLit {j}) (DLit {j + 1}))"
            return f"(view {col} {self._shape_list(shape[:d] + [m] + shape[d + 1:])})"

        if count == 0:
            return Term(f"(slice {xt} {d} (DLit 0) (DLit 0))")
        if count == 1:
            return Term(f"(slice {xt} {d} (DLit {a}) (DLit {a + 1}))")
        whole = picked(count)
        if whole is not None:
            return Term(whole)
        last = a + k * (count - 1)
        head = picked(count - 1) if count > 2 else f"(slice {xt} {d} (DLit {a}) (DLit {a + 1}))"
        return Term(f"(concat (Cons {head} (Cons (slice {xt} {d} (DLit {last}) (DLit {last + 1})) (Nil))) {d})")

    def _split_parts(self, n, sizes):
        x, dim = n.args[0], self._arg(n, 2, "dim", 0)
        d = self._dim(dim, self.ndim(x.name))
        items, off = [], 0
        for s in sizes:
            items.append(Term(f"(slice {self.t(x)} {d} (DLit {off}) (DLit {off + s}))"))
            off += s
        return TupleTerms(tuple(items))

    @lowers("aten.split_with_sizes.default")
    def _h_split_with_sizes_default(self, n):
        sizes = n.args[1]
        if not all(isinstance(s, int) for s in sizes):
            return None
        return self._split_parts(n, sizes)

    @lowers("aten.split.Tensor")
    def _h_split_Tensor(self, n):
        x, size = n.args[0], n.args[1]
        dim = self._arg(n, 2, "dim", 0)
        total = self.shape(x.name)[self._dim(dim, self.ndim(x.name))]
        if not isinstance(total, int) or not isinstance(size, int):
            return None
        return self._split_parts(n, [min(size, total - i) for i in range(0, total, size)])

    @lowers("aten.unbind.int")
    def _h_unbind_int(self, n):
        """unbind(x, d): each index i along d selected (a dim of static size; else declined)."""
        x, dim = n.args[0], self._arg(n, 1, "dim", 0)
        shape = tuple(self.shape(x.name))
        if not shape or not isinstance(dim, int) or isinstance(dim, bool) or not isinstance(n.val, tuple):
            return None
        d = self._dim(dim, len(shape))
        if not isinstance(shape[d], int) or len(n.val) != shape[d]:
            return None
        return TupleTerms(tuple(
            Term(f"(view (slice {self.t(x)} {d} (DLit {i}) (DLit {i + 1})) {self._shape_list(v.shape)})")
            for i, v in enumerate(n.val)))

    @lowers("aten.flip.default")
    def _h_flip_default(self, n):
        """flip(x, dims): along each dim, the concat of its size-1 slices in reverse order (data
        movement only; the term nests a copy of each dim's concat in every slice of the next, so
        flipped dims of more than FLIP_MAX elements together, or of a symbolic size: declined, opaque)."""
        x, dims = n.args[:2]
        shape = tuple(self.shape(x.name))
        if not isinstance(dims, (list, tuple)) or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
            return Refused(n.target, "dims", f"dims={dims!r}")
        t, total = self.t(x), 1
        for d in sorted({self._dim(d, max(len(shape), 1)) for d in dims}):
            if not shape:
                break                    # a 0-D tensor is its own flip
            size = shape[d]
            if not isinstance(size, int):
                return None
            total *= max(size, 1)
            if total > FLIP_MAX:
                return None
            if size < 2:
                continue
            lst = term_list([f"(slice {t} {d} (DLit {i}) (DLit {i + 1}))" for i in reversed(range(size))])
            t = f"(concat {lst} {d})"
        return Identity(x.name) if t == self.t(x) else Term(t)

    @lowers("aten.cat.default")
    def _h_cat_default(self, n):
        parts = n.args[0]
        dim = self._arg(n, 1, "dim", 0)
        d = self._dim(dim, len(n.val.shape))
        if len(n.val.shape) != 1:      # torch skips 1-D empty parts of a cat of other ranks
            parts = [p for p in parts if tuple(self.shape(p.name)) != (0,)]
        if not parts or any(self._dtype(p.name) != n.val.dtype for p in parts):
            return Refused(n.target, "tensors", "a cat that promotes dtypes or has no part")
        return Term(f"(concat {term_list([self.t(p) for p in parts])} {d})")

    @lowers("aten.stack.default")
    def _h_stack_default(self, n):
        """stack(ts, d) = concat of each t viewed with a size-1 dim inserted at d."""
        parts = n.args[0]
        d = self._dim(self._arg(n, 1, "dim", 0), len(n.val.shape))
        if not parts or any(self._dtype(p.name) != n.val.dtype for p in parts):
            return Refused(n.target, "tensors", "a stack that promotes dtypes or has no part")
        shapes = [list(self.shape(p.name)) for p in parts]
        lst = term_list([f"(view {self.t(p)} {self._shape_list(s[:d] + [1] + s[d:])})" for p, s in zip(parts, shapes)])
        return Term(f"(concat {lst} {d})")

    @lowers("aten.constant_pad_nd.default")
    def _h_constant_pad_nd_default(self, n):
        """pad = (left, right) per dim from the last one back: a negative side cuts (a slice), a
        positive one adds a constant block (``cst`` of the tensor's dtype) by a concat."""
        x, pad = n.args[:2]
        value = self._arg(n, 2, "value", 0)
        shape = list(self.shape(x.name))
        dt = n.val.dtype
        if (not isinstance(pad, (list, tuple)) or len(pad) % 2 or len(pad) > 2 * len(shape)
                or not all(isinstance(p, int) and not isinstance(p, bool) for p in pad)):
            return Refused(n.target, "pad", f"pad={pad!r}")
        text = fill_text(value, dt) if isinstance(value, (int, float)) else None
        if text is None or self._dtype(x.name) != dt:
            return Refused(n.target, "value", f"value={value!r} for a {dt} tensor")
        t = self.t(x)
        for i in range(len(pad) // 2):
            d = len(shape) - 1 - i
            left, right, size = pad[2 * i], pad[2 * i + 1], shape[d]
            if not isinstance(size, int):
                return Refused(n.target, "self", f"a pad of a dim of symbolic size {size}")
            lo, hi = max(-left, 0), size - max(-right, 0)
            if hi < lo:
                return Refused(n.target, "pad", f"pad={pad!r} cuts more than dim {d} holds")
            if (lo, hi) != (0, size):
                t = f"(slice {t} {d} (DLit {lo}) (DLit {hi}))"
            shape[d] = hi - lo
            parts = []
            for width, at_end in ((max(left, 0), False), (max(right, 0), True)):
                if width == 0:
                    continue
                parts.append((at_end, self._filled(text, shape[:d] + [width] + shape[d + 1:], dt)))
            if parts:
                items = [b for e, b in parts if not e] + [t] + [b for e, b in parts if e]
                t = f"(concat {term_list(items)} {d})"
            shape[d] += max(left, 0) + max(right, 0)
        if t == self.t(x):
            return Identity(x.name)
        return Term(t)

    @lowers("aten.select.int")
    def _h_select_int(self, n):
        """select(x, d, i) = the slice [i, i + 1) along d viewed without d (a negative i counts
        from the end of a dim of static size; else declined: opaque)."""
        x, dim, i = n.args[:3]
        shape = tuple(self.shape(x.name))
        if not shape or not isinstance(dim, int) or not isinstance(i, int) or isinstance(i, bool):
            return None
        d = self._dim(dim, len(shape))
        if i < 0:
            if not isinstance(shape[d], int):
                return None
            i += shape[d]
        return Term(f"(view (slice {self.t(x)} {d} (DLit {i}) (DLit {i + 1})) {self._shape_list(n.val.shape)})")

    @lowers("aten.slice_backward.default")
    def _h_slice_backward_default(self, n):
        """The gradient of x[start:end:step] along dim: zeros of input_sizes with grad in that slice,
        i.e. grad padded with zeros (``zpad``).  A step k > 1 is the adjoint of the strided slice's
        data movement (``_strided_slice``): grad's n elements each padded with k - 1 zeros along a
        new dim after dim (j before, k - 1 - j after), merged back into dim (a window of k n) and
        padded to the whole; when no shift j fits, the first n - 1 that way plus the last one."""
        grad, sizes, dim, start, end, step = (list(n.args) + [None] * 6)[:6]
        if not isinstance(step, int) or isinstance(step, bool) or step < 1:
            return Refused(n.target, "step", f"step={step!r}")
        if not isinstance(grad, Ref) or not isinstance(sizes, (list, tuple)) or not isinstance(dim, int):
            return Refused(n.target, "input_sizes", "not a tensor, a shape and a dim")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (*sizes, start, end)):
            return Refused(n.target, "input_sizes", "symbolic sizes or bounds")
        if not -len(sizes) <= dim < len(sizes) or tuple(n.val.shape) != tuple(sizes):
            return Refused(n.target, "dim", f"dim {dim} of sizes {list(sizes)}")
        d = self._dim(dim, len(sizes))
        if step != 1:
            return self._strided_slice_backward(n, grad, list(sizes), d, start, end, step)
        s, e = slice(start, end).indices(sizes[d])[:2]
        e = max(e, s)
        gs = tuple(self.shape(grad.name))
        if gs != tuple(sizes[:d]) + (e - s,) + tuple(sizes[d + 1:]) or self._dtype(grad.name) != n.val.dtype:
            return Refused(n.target, "grad_output", f"a gradient of shape {list(gs)} for [{s}:{e}] of {list(sizes)}")
        if n.val.dtype not in FLOAT_DTYPES:     # (gradients are; concat-zpad-rsum needs a sum of them)
            return Refused(n.target, "grad_output", f"a {n.val.dtype} gradient")
        if s == 0 and e == sizes[d]:
            return Identity(grad.name)
        return Term(f"(zpad {self.t(grad)} {d} {s} {sizes[d] - e})")

    def _strided_slice_backward(self, n, grad, sizes, d, start, end, k):
        """slice_backward of x[..., a:b:k] along d (k > 1): see _h_slice_backward_default."""
        size = sizes[d]
        a, b, _ = slice(start, end, k).indices(size)
        count = len(range(a, b, k))
        gs = tuple(self.shape(grad.name))
        if gs != tuple(sizes[:d]) + (count,) + tuple(sizes[d + 1:]) or self._dtype(grad.name) != n.val.dtype:
            return Refused(n.target, "grad_output", f"a gradient of shape {list(gs)} for [{a}:{b}:{k}] of {sizes}")
        if n.val.dtype not in FLOAT_DTYPES:
            return Refused(n.target, "grad_output", f"a {n.val.dtype} gradient")
        if count == 0:
            return Refused(n.target, "end", f"an empty slice [{a}:{b}:{k}]")
        gt = self.t(grad)
        if count == 1:
            return Term(f"(zpad {gt} {d} {a} {size - a - 1})")

        def placed(g, m):       # the first m (>= 2) gradients placed, when a shift fits
            j = max(0, a + k * m - size)
            if j > a:
                return None
            lo = a - j
            col = f"(view {g} {self._shape_list(sizes[:d] + [m, 1] + sizes[d + 1:])})"
            window = f"(zpad {col} {d + 1} {j} {k - 1 - j})"
            merged = f"(view {window} {self._shape_list(sizes[:d] + [k * m] + sizes[d + 1:])})"
            return f"(zpad {merged} {d} {lo} {size - lo - k * m})"

        whole = placed(gt, count)
        if whole is not None:
            return Term(whole)
        last = a + k * (count - 1)
        head_g = f"(slice {gt} {d} (DLit 0) (DLit {count - 1}))"
        head = placed(head_g, count - 1) if count > 2 else f"(zpad {head_g} {d} {a} {size - a - 1})"
        tail = f"(zpad (slice {gt} {d} (DLit {count - 1}) (DLit {count})) {d} {last} {size - last - 1})"
        return Term(f"(binary \"add\" {head} {tail})")

    @lowers("aten.select_backward.default")
    def _h_select_backward_default(self, n):
        """The gradient of x.select(dim, index): zeros of input_sizes with grad at that index,
        i.e. grad unsqueezed at dim (a view) padded with zeros (``zpad``), as slice_backward's
        [index:index+1].  Float gradients of concrete sizes only; others stay opaque."""
        grad, sizes, dim, index = (list(n.args) + [None] * 4)[:4]
        if (not isinstance(grad, Ref) or not isinstance(sizes, (list, tuple)) or not isinstance(dim, int)
                or isinstance(dim, bool) or not isinstance(index, int) or isinstance(index, bool)
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in sizes)):
            return None
        if not -len(sizes) <= dim < len(sizes) or tuple(n.val.shape) != tuple(sizes):
            return None
        d = self._dim(dim, len(sizes))
        i = index + sizes[d] if index < 0 else index
        if not 0 <= i < sizes[d]:
            return None
        one = tuple(sizes[:d]) + (1,) + tuple(sizes[d + 1:])
        if (tuple(self.shape(grad.name)) != tuple(sizes[:d]) + tuple(sizes[d + 1:])
                or self._dtype(grad.name) != n.val.dtype or n.val.dtype not in FLOAT_DTYPES):
            return None
        v = f"(view {self.t(grad)} {self._shape_list(one)})"
        return Term(v if sizes[d] == 1 else f"(zpad {v} {d} {i} {sizes[d] - i - 1})")

# the most elements along the flipped dims aten.flip is lowered for (concats of slices); more: opaque
FLIP_MAX = 64

