"""Normalisations along dims: softmax, log-softmax, layer norm, and their backward ops."""
from __future__ import annotations

import math

from entangle_py.ir.graph import Ref, TensorMeta, TorchConst
from entangle_py.semantics.lower.core import (
    FLOAT_DTYPES, Identity, int_list, lowers, Refused, scalar_lit, Term, TupleTerms)
from entangle_py.semantics.terms import str_lit


class NormalizationLowering:
    @lowers("aten._softmax.default", "aten.softmax.int")
    def _h__softmax_default(self, n):
        """softmax along a dim; a result of another float dtype (softmax(dtype=...), half_to_float)
        is the softmax of x cast to it, as torch computes it."""
        t = self._softmax_term(n)
        return t if isinstance(t, Refused) else Term(t)

    def _softmax_term(self, n):
        x, dim = n.args[:2]
        src, out = self._dtype(x.name), n.val.dtype
        xt = self.t(x)
        if src != out:
            if src not in FLOAT_DTYPES or out not in FLOAT_DTYPES:
                return Refused(n.target, "dtype", f"{src} -> {out}")
            xt = f"(unary {str_lit('to_' + out)} {xt})"
        return f"(softmax {xt} {self._dim(dim, max(self.ndim(x.name), 1))})"

    @lowers("aten._safe_softmax.default")
    def _h__safe_softmax_default(self, n):
        """softmax, but 0 along a row all of whose elements are -inf (where softmax gives nan), as
        torch's decomposition writes it: where(all(x == -inf, dim, keepdim), 0, softmax(x))."""
        sm = self._softmax_term(n)
        if isinstance(sm, Refused):
            return sm
        x = n.args[0]
        d = self._dim(n.args[1], max(self.ndim(x.name), 1))
        dead = (f"(unary \"logical_not\" (reduce \"amax\" (unary \"logical_not\" (scalar \"eq\" {self.t(x)} \"-inf\")) "
                f"(ICons {d} (INil)) 1))")
        return Term(f"(where {dead} {self._filled('0.0', n.val.shape, n.val.dtype)} {sm})")

    def _softmax_grad_operands(self, n):
        """(grad term, output term, shape, dim) of a (log-)softmax backward -- a 0-D output as a
        vector of one element -- or Refused: non-tensor operands, an input dtype other than the
        gradient's (a cast back), a gradient of another shape."""
        g, y = self._arg(n, 0, "grad_output"), self._arg(n, 1, "output")
        dim, input_dtype = self._arg(n, 2, "dim"), self._arg(n, 3, "input_dtype")
        if not (isinstance(g, Ref) and isinstance(y, Ref)):
            return Refused(n.target, "grad_output", "a gradient of non-tensor operands")
        src = self._dtype(g.name)
        if not (isinstance(input_dtype, TorchConst) and input_dtype.kind == "dtype" and input_dtype.value == src
                and self._dtype(y.name) == src and n.val.dtype == src and src in FLOAT_DTYPES):
            return Refused(n.target, "input_dtype", f"gradient {src}, output {self._dtype(y.name)}, "
                                                    f"input_dtype={input_dtype!r}")
        shape = tuple(self.shape(y.name))
        if tuple(self.shape(g.name)) != shape:
            return Refused(n.target, "grad_output", f"gradient of shape {list(self.shape(g.name))} for an "
                                                    f"output of shape {list(shape)}")
        gt, yt = self.t(g), self.t(y)
        if not shape:
            one = self._shape_list((1,))
            gt, yt, shape = f"(view {gt} {one})", f"(view {yt} {one})", (1,)
        return gt, yt, shape, self._dim(dim, len(shape))

    @lowers("aten._softmax_backward_data.default")
    def _h__softmax_backward_data_default(self, n):
        """The gradient of y = softmax(x, d) given the output's gradient g: g y - y sum(g y, d)
        (keepdim), as torch's decomposition computes it.  A 0-D y: as a vector of one element,
        viewed back.  An input dtype other than the gradient's (a cast back) is refused."""
        ops_ = self._softmax_grad_operands(n)
        if isinstance(ops_, Refused):
            return ops_
        gt, yt, shape, d = ops_
        gy = f"(binary \"mul\" {gt} {yt})"
        t = f"(binary \"sub\" {gy} (binary \"mul\" {yt} (reduce \"sum\" {gy} (ICons {d} (INil)) 1)))"
        if tuple(n.val.shape) != shape:
            t = f"(view {t} {self._shape_list(n.val.shape)})"
        return Term(t)

    @lowers("aten._log_softmax.default", "aten.log_softmax.int")
    def _h__log_softmax_default(self, n):
        """log_softmax(x, d) = (x - m) - log(sum(exp(x - m), d)) with m = amax(x, d) (keepdim),
        as torch's decomposition computes it: the log of the sum of exponentials is reduced
        without keepdim and viewed back, so a pick of the result can take it out whole.  Half
        precision computes in float32 and casts back (as torch does)."""
        x, dim = n.args[:2]
        src = self._dtype(x.name)
        if n.target == "aten._log_softmax.default":
            if self._arg(n, 2, "half_to_float", False):
                return Refused(n.target, "half_to_float", "a half input computed to a float result")
        else:
            dtype = self._arg(n, 2, "dtype")
            if dtype is not None and not (isinstance(dtype, TorchConst) and dtype.kind == "dtype"):
                return Refused(n.target, "dtype", f"dtype={dtype!r}")
        out = n.val.dtype
        if out not in FLOAT_DTYPES or src not in FLOAT_DTYPES:
            return Refused(n.target, "self", f"log_softmax of {src} to {out}")
        shape = tuple(self.shape(x.name))
        d = self._dim(dim, max(len(shape), 1))
        xt = self.t(x)
        if not shape:                # a 0-D tensor: as a vector of one element, viewed back
            shape, xt = (1,), f"(view {xt} {self._shape_list((1,))})"
        compute = "float32" if out in ("float16", "bfloat16") else out
        if src != compute:
            xt = f"(unary {str_lit('to_' + compute)} {xt})"
        dims = f"(ICons {d} (INil))"
        shifted = f"(binary \"sub\" {xt} (reduce \"amax\" {xt} {dims} 1))"
        lse = f"(unary \"log\" (reduce \"sum\" (unary \"exp\" {shifted}) {dims} 0))"
        keep = shape[:d] + (1,) + shape[d + 1:]
        t = f"(binary \"sub\" {shifted} (view {lse} {self._shape_list(keep)}))"
        if tuple(n.val.shape) != shape:
            t = f"(view {t} {self._shape_list(n.val.shape)})"
        if compute != out:
            t = f"(unary {str_lit('to_' + out)} {t})"
        return Term(t)

    @lowers("aten._log_softmax_backward_data.default")
    def _h__log_softmax_backward_data_default(self, n):
        """The gradient of y = log_softmax(x, d) given the output's gradient g: g - exp(y) sum(g, d)
        (keepdim), as torch computes it, written g + exp(y) (-sum(g, d)) (exactly the same: negation
        is exact) with the sum reduced without keepdim and viewed back.  A 0-D y: as a vector of
        one element, viewed back.  An input dtype other than the gradient's (a cast back) is refused."""
        ops_ = self._softmax_grad_operands(n)
        if isinstance(ops_, Refused):
            return ops_
        gt, yt, shape, d = ops_
        keep = shape[:d] + (1,) + shape[d + 1:]
        total = f"(view (unary \"neg\" (reduce \"sum\" {gt} (ICons {d} (INil)) 0)) {self._shape_list(keep)})"
        t = f"(binary \"add\" {gt} (binary \"mul\" (unary \"exp\" {yt}) {total}))"
        if tuple(n.val.shape) != shape:
            t = f"(view {t} {self._shape_list(n.val.shape)})"
        return Term(t)

    def _layer_norm(self, n, x, normalized_shape, w, b, eps):
        """y = layer norm of x over its last len(normalized_shape) dims (affine only)."""
        if not (isinstance(w, Ref) and isinstance(b, Ref) and isinstance(normalized_shape, (list, tuple))
                and isinstance(eps, (int, float)) and not isinstance(eps, bool)):
            return None
        k = len(normalized_shape)
        shape = self.shape(x.name)
        if k == 0 or k > len(shape) or tuple(shape[len(shape) - k:]) != tuple(normalized_shape):
            return None
        return f"(layernorm {self.t(x)} {self.t(w)} {self.t(b)} {k} {scalar_lit(float(eps))})"

    @lowers("aten.native_layer_norm.default")
    def _h_native_layer_norm_default(self, n):
        """out, mean and rstd (see _native_layer_norm_exact); where mean and rstd are not
        expressible, out alone (affine) and the statistics opaque."""
        exact = self._native_layer_norm_exact(n)
        if exact is not None:
            return exact
        x, ns, w, b, eps = n.args[:5]
        t = self._layer_norm(n, x, ns, w, b, eps)
        if t is None or not isinstance(n.val, tuple):
            return self._opaque(n)
        return TupleTerms((Term(t),) + tuple(self._opaque(n).items[1:]))   # mean, rstd: opaque

    @lowers("aten.layer_norm.default")
    def _h_layer_norm_default(self, n):
        x, ns = n.args[:2]
        w, b = self._arg(n, 2, "weight"), self._arg(n, 3, "bias")
        t = self._layer_norm(n, x, ns, w, b, self._arg(n, 4, "eps", 1e-05))
        return Term(t) if t else None

    @lowers("apex.fused_layer_norm_affine_fwd.default")
    def _h_apex_fused_layer_norm_affine_fwd_default(self, n):
        """apex (Megatron): args x, weight, bias, normalized_shape, eps; outputs y, mean and
        invvar (flattened to [rows]: opaque)."""
        x, w, b, ns, eps = n.args[:5]
        t = self._layer_norm(n, x, ns, w, b, eps)
        if t is None or not isinstance(n.val, tuple):
            return None
        return TupleTerms((Term(t),) + tuple(self._opaque(n).items[1:]))

    def _ln_dims(self, x, normalized_shape):
        """(axis, N, inner IList text) of a layer norm of ``x`` over ``normalized_shape`` (its
        trailing dims); None when not expressible (symbolic sizes, a mismatched shape, a dtype
        computed in another precision)."""
        if not isinstance(x, Ref) or self._dtype(x.name) not in ("float32", "float64"):
            return None
        if not isinstance(normalized_shape, (list, tuple)) or not normalized_shape:
            return None
        shape = tuple(self.shape(x.name))
        k = len(normalized_shape)
        if k > len(shape) or not all(isinstance(s, int) for s in shape):
            return None
        if tuple(shape[len(shape) - k:]) != tuple(normalized_shape) or 0 in normalized_shape:
            return None     # (torch's mean of no elements is 0, a term's is nan)
        axis = len(shape) - k
        return axis, math.prod(shape[axis:]), int_list(range(axis, len(shape)))

    def _ln_stat(self, x, stat, axis):
        """A saved mean / rstd tensor (shape outer dims + 1s, or those elements flat) viewed to
        the keepdim shape; None when it has neither shape or another dtype."""
        if not isinstance(stat, Ref) or self._dtype(stat.name) != self._dtype(x.name):
            return None
        xs, ss = tuple(self.shape(x.name)), tuple(self.shape(stat.name))
        want = xs[:axis] + (1,) * (len(xs) - axis)
        if ss == want:
            return self.t(stat)
        if all(isinstance(s, int) for s in ss) and math.prod(ss) == math.prod(want):
            return f"(view {self.t(stat)} {self._shape_list(want)})"
        return None

    def _ln_forward(self, n, x, ns, w, b, eps):
        """(mean, rstd) terms of a layer norm of x (None: not expressible)."""
        dims = self._ln_dims(x, ns)
        if dims is None or not isinstance(eps, (int, float)) or isinstance(eps, bool):
            return None
        _, _, inner = dims
        xt = self.t(x)
        mean = f"(reduce \"mean\" {xt} {inner} 1)"
        var = f"(reduce \"mean\" (unary \"square\" (binary \"sub\" {xt} {mean})) {inner} 1)"
        rstd = f"(unary \"rsqrt\" (scalar \"add\" {var} {scalar_lit(float(eps))}))"
        return mean, rstd

    def _native_layer_norm_exact(self, n):
        x, ns, w, b, eps = n.args[:5]
        if not isinstance(n.val, tuple) or len(n.val) != 3 or not all(isinstance(v, TensorMeta) for v in n.val):
            return None
        if any(v.dtype != self._dtype(x.name) for v in n.val):
            return None
        if not all(isinstance(p, (Ref, type(None))) for p in (w, b)):
            return None
        stats = self._ln_forward(n, x, ns, w, b, eps)
        if stats is None:
            return None
        mean, rstd = stats
        y = self._layer_norm(n, x, ns, w, b, eps)
        if y is None:       # no weight or no bias: (x - mean) * rstd [* w] [+ b]
            y = f"(binary \"mul\" (binary \"sub\" {self.t(x)} {mean}) {rstd})"
            if w is not None:
                y = f"(binary \"mul\" {y} {self.t(w)})"
            if b is not None:
                y = f"(binary \"add\" {y} {self.t(b)})"
        return TupleTerms((Term(y), Term(mean), Term(rstd)))

    @lowers("aten.native_layer_norm_backward.default")
    def _h_native_layer_norm_backward_default(self, n):
        """torch's decomposition: x_hat = (x - mean) * rstd, g_hat = grad * weight;
        grad_input = rstd / N * (N * g_hat - sum(g_hat) - x_hat * sum(g_hat * x_hat)) (sums over
        the inner dims, kept); grad_weight = sum(grad * x_hat), grad_bias = sum(grad) over the
        outer dims.  An output is computed only where output_mask holds (and the weight / bias is
        given); mean and rstd are the saved tensors the op reads, never recomputed."""
        if len(n.args) < 8:
            return Refused(n.target, "output_mask", "missing arguments")
        grad, x, ns, mean, rstd, w, b, mask = n.args[:8]
        if not isinstance(n.val, tuple) or len(n.val) != 3:
            return Refused(n.target, "output_mask", "not three outputs")
        if not (isinstance(mask, (list, tuple)) and len(mask) == 3 and all(isinstance(m, bool) for m in mask)):
            return Refused(n.target, "output_mask", f"output_mask={mask!r}")
        dims = self._ln_dims(x, ns)
        if (dims is None or not isinstance(grad, Ref) or not all(isinstance(p, (Ref, type(None))) for p in (w, b))
                or self._dtype(grad.name) != self._dtype(x.name)
                or tuple(self.shape(grad.name)) != tuple(self.shape(x.name))):
            return self._opaque(n)
        axis, count, inner = dims
        if w is not None and (self._dtype(w.name) != self._dtype(x.name)
                              or tuple(self.shape(w.name)) != tuple(ns)):
            return self._opaque(n)
        mt, rt = self._ln_stat(x, mean, axis), self._ln_stat(x, rstd, axis)
        if mt is None or rt is None:
            return self._opaque(n)
        want = (mask[0], mask[1] and w is not None, mask[2] and b is not None)
        for v, on in zip(n.val, want):
            if on != isinstance(v, TensorMeta) or (on and v.dtype != self._dtype(x.name)):
                return Refused(n.target, "output_mask", f"outputs {n.val} for output_mask={mask!r}")
        g, xt = self.t(grad), self.t(x)
        xhat = f"(binary \"mul\" (binary \"sub\" {xt} {mt}) {rt})"
        outer = int_list(range(axis))
        items = [None, None, None]
        if want[0]:
            # the weight viewed with the outer dims as 1s: an operand of the gradient's ndim
            # (shape facts, hence the reduction lemmas, follow broadcasting of one ndim only)
            ghat = g
            if w is not None:
                wv = f"(view {self.t(w)} {self._shape_list((1,) * axis + tuple(ns))})" if axis else self.t(w)
                ghat = f"(binary \"mul\" {g} {wv})"
            c = scalar_lit(float(count))
            s1 = f"(reduce \"sum\" {ghat} {inner} 1)"
            s2 = f"(reduce \"sum\" (binary \"mul\" {ghat} {xhat}) {inner} 1)"
            body = f"(binary \"sub\" (binary \"sub\" (scalar \"mul\" {ghat} {c}) {s1}) (binary \"mul\" {xhat} {s2}))"
            items[0] = Term(f"(binary \"mul\" (scalar \"div\" {rt} {c}) {body})")
        if want[1]:
            gx = f"(binary \"mul\" {g} {xhat})"
            items[1] = Term(f"(reduce \"sum\" {gx} {outer} 0)" if axis else gx)
        if want[2]:
            items[2] = Term(f"(reduce \"sum\" {g} {outer} 0)") if axis else Identity(grad.name)
        return TupleTerms(tuple(items))

