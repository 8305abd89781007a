"""Lowering: the meaning of each graph op as a term of the engine's language.

Both programs are lowered by the same table, so a G_s op and the G_d op that computes the same
thing become the same term (congruence).  An op either

- is an identity for the relation (``wait_tensor``, ``clone``, ``copy(dst, src)``, ...),
- becomes a term (``aten.mm`` -> ``(mm a b)``; ``aten.addmm`` -> ``(binary "add" (mm a b) bias)``),
- is a collective (handled by ``infer``: it needs the peers' tensors),
- is a pure op without lemmas: an ``opaque`` term keyed by the op and its constant arguments,
- or has no semantics here: ``NoSemantics`` (the checker refuses the graph, it never guesses).
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from entangle_py import plugins
from entangle_py.ir import ops
from entangle_py.ir.graph import Node, Ref, TensorMeta, TorchConst
from entangle_py.lazy import LazyModule, is_sympy, sympy
from entangle_py.semantics.sexpr import Var, parse_sexpr, to_sexpr
from entangle_py.semantics.terms import CASTS, INT_SCALAR_OPS, MASKED_FILL, THRESHOLD_BACKWARD, str_lit
from entangle_py.semantics.terms import const_positive

symbolic = LazyModule("entangle_py.ir.symbolic")     # sympy, for symbolic sizes only

# The lowering registry: ATen target -> handler(lowerer, node).  One entry per target (a second
# registration is an error); ``supported(target)`` is membership.  A handler may return None to
# decline a call it cannot express; the op is then opaque if it is in OPAQUE_PURE, else it has
# no semantics.
LOWERINGS: dict = {}


def lowers(*targets):
    """Register the decorated function as the lowering of ``targets``."""
    def register(fn):
        for t in targets:
            if t in LOWERINGS:
                raise ValueError(f"{t} is lowered twice ({LOWERINGS[t].__name__}, {fn.__name__})")
            LOWERINGS[t] = fn
        return fn
    return register


def supported(target: str) -> bool:
    return target in LOWERINGS


UNARY = {
    "aten.gelu.default": None, "aten.relu.default": "relu", "aten.silu.default": "silu",
    "aten.sigmoid.default": "sigmoid", "aten.tanh.default": "tanh", "aten.exp.default": "exp",
    "aten.log.default": "log", "aten.neg.default": "neg", "aten.abs.default": "abs",
    "aten.sqrt.default": "sqrt", "aten.rsqrt.default": "rsqrt", "aten.erf.default": "erf",
    "aten.reciprocal.default": "reciprocal", "aten.logical_not.default": "logical_not",
}

# Elementwise binary ops, by target -> the term's op.  Overloads that take (tensor, tensor |
# scalar) and, for add/sub, alpha; div's *_mode overloads take rounding_mode (see _rounded).
# Others (out=, in place, Python scalars) are not binary ops here.
BINARY = {f"aten.{op}.{ov}": op for op, ovs in {
    "add": ("Tensor", "Scalar"), "sub": ("Tensor", "Scalar"), "mul": ("Tensor", "Scalar"),
    "div": ("Tensor", "Scalar", "Tensor_mode", "Scalar_mode"), "maximum": ("default",), "minimum": ("default",),
    "pow": ("Tensor_Tensor", "Tensor_Scalar"), "eq": ("Tensor", "Scalar"), "lt": ("Tensor", "Scalar"),
    "gt": ("Tensor", "Scalar"), "le": ("Tensor", "Scalar"), "ge": ("Tensor", "Scalar"), "ne": ("Tensor", "Scalar"),
    "bitwise_or": ("Tensor", "Scalar"), "bitwise_and": ("Tensor", "Scalar"), "logical_or": ("default",),
    "logical_and": ("default",),
}.items() for ov in ovs}

def naming_aliases(g) -> dict[str, str]:
    """name given by a naming op -> the node that holds the named tensor."""
    out = {}
    for n in g.nodes:
        if n.target == ops.LOG_TENSOR and len(n.args) > 1 and isinstance(n.args[1], str):
            out.setdefault(n.args[1], n.name)
        elif n.target in ops.AUTO_FUNCTIONALIZED and n.args and n.args[0] in ops.NAMING_OPS:
            name = n.kwargs.get("s")
            holder = next((u.name for u in g.nodes if u.target == "getitem" and u.args
                           and isinstance(u.args[0], Ref) and u.args[0].name == n.name and u.args[1] == 1), None)
            if isinstance(name, str) and holder:
                out.setdefault(name, holder)
    return out


# Pure ATen ops the checker knows to be deterministic functions of their arguments but has no
# lemmas for: they relate by congruence only (same op, same constants, related inputs).
OPAQUE_PURE = {
    "aten.layer_norm.default", "aten.embedding.default",
    "aten.index.Tensor", "aten.index_put.default", "aten.where.self",
    "aten.masked_fill.Tensor", "aten.select.int", "aten.gather.default", "aten.scatter.value",
    "aten.cumsum.default", "aten.sum.default", "aten.mean.default", "aten.max.dim", "aten.min.dim",
    "aten.argmax.default", "aten.var_mean.correction",
    "aten.var.correction", "aten.gelu_backward.default",
    "aten.threshold_backward.default",
    "aten.zeros.default", "aten.ones.default", "aten.full.default", "aten.zeros_like.default",
    "aten.ones_like.default", "aten.full_like.default", "aten.arange.default", "aten.arange.start",
    "aten.new_zeros.default", "aten.new_ones.default", "aten.new_full.default", "aten.scalar_tensor.default",
    "aten.slice_scatter.default", "aten.select_scatter.default", "aten.index_select.default",
    "aten._to_copy.default", "aten.sigmoid_backward.default", "aten.tanh_backward.default",
    "aten.silu_backward.default", "aten.bitwise_not.default", "aten.clamp.default",
    "aten.tril.default", "aten.triu.default", "aten.squeeze.dims", "aten.sum.dim_IntList",
    "apex.fused_layer_norm_affine_fwd.default", "apex.fused_layer_norm_affine_bwd.default",
    "aten.eye.default", "aten.eye.m",
    "aten.select_backward.default", "aten.flip.default",
}

@dataclass(frozen=True)
class Identity:
    ref: str


def ref(name: str) -> str:
    """The leaf for the value of node ``name`` in a lowered term: ``(ref "<name>")``."""
    return f"(ref {str_lit(name)})"


@dataclass(frozen=True)
class Term:
    """A lowered op's value: an s-expression whose leaves ``(ref "<node>")`` are the tensors of
    the graph it reads.  A value, not bound to any e-graph: the caller says what each node is."""
    text: str

    def bind(self, expr_of) -> str:
        """The term with each ``(ref "<node>")`` replaced by ``expr_of(node)`` (an s-expression;
        a KeyError from it, a node the caller has no expression for, propagates)."""
        return to_sexpr(_bind(parse_sexpr(self.text), expr_of))


def _bind(t, expr_of):
    if not isinstance(t, tuple):
        return t
    if isinstance(t[0], Var) and t[0].name == "ref":
        return Var(expr_of(t[1]))        # printed verbatim by to_sexpr
    return tuple(_bind(a, expr_of) for a in t)


@dataclass(frozen=True)
class TupleTerms:
    items: tuple       # one Term | Identity | None per output


@dataclass(frozen=True)
class Collective:
    kind: str
    input: str
    group: str
    reduce: str = "sum"
    params: tuple = ()


@dataclass(frozen=True)
class Decomposed:
    """An op computed in two steps whose middle value is a tensor of its own, named
    ``<node>:<name>``: ``inner``, then ``outer`` (a term whose ``(ref "{inner}")`` is it:
    ``outer_term()``)."""
    name: str
    inner: Term
    outer: str



def bind_result(res, expr_of):
    """A lowering result with every term's ``(ref "<node>")`` leaves replaced by
    ``expr_of(node)`` (``Term.bind``); a Decomposed keeps ``{inner}`` in its outer term.  Raises
    KeyError, before the caller does anything with it, when a read node has no expression."""
    if isinstance(res, Term):
        return Term(res.bind(expr_of))
    if isinstance(res, TupleTerms):
        return TupleTerms(tuple(bind_result(i, expr_of) for i in res.items))
    if isinstance(res, Decomposed):
        outer = Term(res.outer.replace("{inner}", ref("{inner}")))
        return Decomposed(res.name, bind_result(res.inner, expr_of),
                          outer.bind(lambda n: "{inner}" if n == "{inner}" else expr_of(n)))
    return res


@dataclass(frozen=True)
class NotTensor:
    pass


@dataclass(frozen=True)
class NoSemantics:
    op: str


@dataclass(frozen=True)
class Refused(NoSemantics):
    """An op the checker knows, called with an argument value its term cannot express (exit 2,
    naming the argument): never lowered as if the argument were not there."""
    arg: str = ""
    why: str = ""


@dataclass(frozen=True)
class Free:
    """A tensor whose value the checker does not know (an undeclared tensor constant): a leaf
    related to nothing, so nothing computed from it is ever proven by its value."""
    label: str


@dataclass(frozen=True)
class Draw:
    """A random draw (``ops.RANDOM_DRAWS``): a tensor of its own, a leaf -- never a function of the
    values it is applied to.  Equal to nothing but what check/random.py couples it with.  The
    caller names the leaf ``draw_key(node)`` before binding the node's other outputs, which may
    read it (dropout's value is x * mask * scale)."""


DRAW = Draw()


def draw_key(n: Node) -> str:
    """The name of the tensor a random op draws: ``<node>#<i>`` for one output of several."""
    i = ops.RANDOM_DRAWS[n.target].output
    return n.name if i is None else f"{n.name}#{i}"


def draw_meta(n: Node):
    """The shape and dtype of the tensor a random op draws."""
    i = ops.RANDOM_DRAWS[n.target].output
    return n.val if i is None else n.val[i]


def draws_in(res) -> bool:
    """Whether a lowering result holds a random draw."""
    return res is DRAW or (isinstance(res, TupleTerms) and DRAW in res.items)


INT_DTYPES = {"int64", "int32", "int16", "int8", "uint8"}
FLOAT_DTYPES = {"float64", "float32", "float16", "bfloat16"}
CONST_PORT_PREFIX = "const:"


class Lowerer:
    """Lower the nodes of one rank graph to values: terms over ``(ref "<node>")`` leaves."""

    def __init__(self, graph, constants=None, canon=None):
        self.g = graph
        # symbolic sizes in terms under the checker's names (a rank's x_size0 is not the
        # sequential program's x_size0 unless the checker identified them)
        self.canon = canon or (lambda size: size)
        self.constants = constants or {}     # const port name -> declared value (spec [constants])

    def shape(self, name: str) -> tuple:
        v = self.g.node(name).val
        if not isinstance(v, TensorMeta):
            raise KeyError(name)
        return v.shape

    def ndim(self, name: str) -> int:
        return len(self.shape(name))

    @staticmethod
    def var(name: str) -> str:
        return ref(name)

    def t(self, a) -> str:
        if not isinstance(a, Ref):
            raise TypeError(f"expected a tensor argument, got {a!r}")
        return ref(a.name)

    def lower(self, n: Node):
        if not isinstance(n.val, (TensorMeta, tuple)):
            return NotTensor()
        refused = _audit_arguments(n)
        if refused is not None:
            return refused
        handler = LOWERINGS.get(n.target)
        try:
            out = handler(self, n) if handler is not None else None
            if out is None and n.target in OPAQUE_PURE:
                return self._opaque(n)
        except CountedSize as e:
            return Refused(n.target, "size", f"a size computed from a nonzero's row count ({e.args[0]})")
        return out if out is not None else NoSemantics(n.target)

    # -- table-driven ops (registered below the class) ---------------------------------------
    @lowers(ops.GETITEM)
    def _getitem(self, n):
        return Identity(f"{n.args[0].name}#{n.args[1]}")

    @lowers(ops.LIFT_FRESH_COPY)
    def _lift_fresh_copy(self, n):
        return self._lift_const(n) or Identity(n.args[0].name)

    def _identity(self, n):
        return Identity(n.args[0].name)

    @lowers(*sorted(ops.COPY_OPS))
    def _copy(self, n):
        """copy(dst, src) is src broadcast to dst's shape and cast to its dtype."""
        src = self.g.node(n.args[1].name).val
        if not isinstance(src, TensorMeta) or (src.shape, src.dtype) != (n.val.shape, n.val.dtype):
            return Refused(n.target, "src", "a copy that broadcasts or casts")
        return Identity(n.args[1].name)

    def _allocation(self, n):
        return Free(n.target)

    @lowers(ops.TO_COPY)
    def _to_copy(self, n):
        a = n.args
        src = self.g.node(a[0].name).val
        if isinstance(src, TensorMeta) and src.dtype == n.val.dtype:
            return Identity(a[0].name)
        if isinstance(src, TensorMeta) and n.val.dtype in CASTS and set(n.kwargs) <= {"dtype", "layout", "device"}:
            return Term(f"(unary {str_lit('to_' + n.val.dtype)} {self.t(a[0])})")
        return None

    def _unary(self, n):
        name = UNARY[n.target] or ("gelu_tanh" if n.kwargs.get("approximate") == "tanh" else "gelu")
        return Term(f"(unary {str_lit(name)} {self.t(n.args[0])})")

    @lowers("aten.bitwise_not.default")
    def _h_bitwise_not_default(self, n):
        """~mask of a bool mask is its logical not (an int's bitwise complement stays opaque)."""
        x = n.args[0]
        if not isinstance(x, Ref) or self._dtype(x.name) != "bool" or not isinstance(n.val, TensorMeta):
            return None
        return Term(f"(unary \"logical_not\" {self.t(x)})")

    def _binary_op(self, n):
        if len(n.args) < 2:
            return None
        return self._binary(n, _rounded(BINARY[n.target], n))

    @lowers("aten.rsub.Tensor", "aten.rsub.Scalar")
    def _rsub(self, n):
        a = n.args
        alpha = n.kwargs.get("alpha", a[2] if len(a) > 2 else 1)
        if alpha != 1 or not isinstance(a[0], Ref):
            return Refused(n.target, "alpha", f"alpha={alpha!r}")
        if isinstance(a[1], Ref):
            return Term(f"(binary \"sub\" {self.t(a[1])} {self.t(a[0])})")
        return Term(f"(scalar \"rsub\" {self.t(a[0])} {scalar_lit(a[1])})")

    @lowers(*sorted(ops.AUTO_FUNCTIONALIZED))
    def _auto_functionalized(self, n: Node):
        """A mutating op in functional form: outputs are (op result, new value of each base).
        Only the naming op is understood: it changes nothing, so every base is unchanged."""
        op = n.args[0] if n.args else None
        if op not in ops.NAMING_OPS:
            return NoSemantics(f"{op} (in {n.target})")
        bases = n.kwargs.get("_all_bases") or [n.kwargs.get(k) for k in n.kwargs if isinstance(n.kwargs[k], Ref)]
        return TupleTerms((None,) + tuple(Identity(b.name) for b in bases))

    # -- helpers ---------------------------------------------------------------------------
    def _dim(self, d, nd):
        return d + nd if d < 0 else d

    def _shape_list(self, shape) -> str:
        return shape_list(shape, self.canon)

    def _opaque(self, n: Node):
        """Congruence only: the op, every constant argument (in the key) and every tensor
        argument (in the list), positional then keyword in name order, nested lists included."""
        kwargs = tuple(sorted(n.kwargs.items()))
        tensors = list(_refs_in_order((n.args, kwargs)))
        key = n.target + "|" + _const_key(n.args, self.canon) + "|" + _const_key(kwargs, self.canon)
        items = term_list([self.var(r.name) for r in tensors])
        if isinstance(n.val, tuple):
            return TupleTerms(tuple(
                Term(f"(opaque {str_lit(key + '#' + str(i))} {items})") if isinstance(v, TensorMeta) else None
                for i, v in enumerate(n.val)))
        return Term(f"(opaque {str_lit(key)} {items})")

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

    def _scaled(self, text: str, name: str, c) -> str | None:
        """``text * c`` with the constant in the tensor's own arithmetic (None: not expressible)."""
        if c == 1 and not isinstance(c, bool):
            return text
        d = self._dtype(name)
        if d in FLOAT_DTYPES and isinstance(c, (int, float)) and not isinstance(c, bool):
            return f"(scalar \"mul\" {text} {scalar_lit(c)})"
        if d in INT_DTYPES and type(c) is int:
            return f"(iscalar \"mul\" {text} {c})"
        return None

    # -- movement --------------------------------------------------------------------------
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

    # -- positions: arange ------------------------------------------------------------------
    @lowers("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
    def _h_arange(self, n):
        """arange(start, end, step) with integer-valued bounds: (arange start step length), the
        length read from the output's shape; another dtype is the int64 positions cast, exact
        while every value is a number of that dtype.  Fractional or symbolic bounds, or values
        past exactness: declined (opaque for the overloads in OPAQUE_PURE, else no semantics)."""
        if n.target == "aten.arange.default":
            start, end, step = 0, self._arg(n, 0, "end"), 1
        elif n.target == "aten.arange.start":
            start, end, step = self._arg(n, 0, "start"), self._arg(n, 1, "end"), 1
        else:
            start, end, step = self._arg(n, 0, "start"), self._arg(n, 1, "end"), self._arg(n, 2, "step", 1)
        vals = []
        for v in (start, end, step):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not v.is_integer()):
                return None
            vals.append(int(v))
        start, end, step = vals
        if not isinstance(n.val, TensorMeta) or len(n.val.shape) != 1 or step == 0:
            return None
        length = n.val.shape[0]
        if not isinstance(length, int):
            return None
        term = f"(arange {start} {step} (DLit {length}))"
        dtype = n.val.dtype
        if dtype == "int64":
            return Term(term)
        exact = _ARANGE_EXACT.get(dtype)
        last = start + step * (length - 1) if length else start
        if exact is None or max(abs(start), abs(last)) > exact:
            return None
        return Term(f"(unary {str_lit('to_' + dtype)} {term})")

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

    # -- linear algebra --------------------------------------------------------------------
    @lowers("aten.mm.default")
    def _h_mm_default(self, n):
        return Term(f"(mm {self.t(n.args[0])} {self.t(n.args[1])})")

    @lowers("aten.mv.default")
    def _h_mv_default(self, n):
        """mv(A, v) = mm(A, v viewed as a column), viewed back to a vector."""
        a, v = n.args[:2]
        col = f"(view {self.t(v)} {self._shape_list(tuple(self.shape(v.name)) + (1,))})"
        return Term(f"(view (mm {self.t(a)} {col}) {self._shape_list(n.val.shape)})")

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

    @lowers("aten.native_dropout.default")
    def _h_native_dropout_default(self, n):
        """Evaluation mode (train False, or p = 0): the value is the input, the mask all true.
        Training mode draws the keep-mask (output 1, a ``Draw``: a tensor of its own, never a
        function of x's values) and the value is x * mask * (1 / (1 - p)), as torch computes it."""
        x = n.args[0]
        p = self._arg(n, 1, "p")
        train = self._arg(n, 2, "train")
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not isinstance(train, (bool, type(None))):
            return Refused(n.target, "p", f"p={p!r}, train={train!r}")
        if not train or p == 0:
            return TupleTerms((Identity(x.name), self._opaque(n).items[1]))
        if not 0 < p < 1:
            return Refused(n.target, "p", f"p={p!r} (a mask that drops everything, or no probability)")
        mask = ref(draw_key(n))
        scale = _in_dtype(1 / (1 - p), self._dtype(x.name))    # torch's kernel rounds it to x's dtype
        return TupleTerms((Term(f"(scalar \"mul\" (binary \"mul\" {self.t(x)} {mask}) {scalar_lit(scale)})"),
                           DRAW))

    @lowers(*sorted(t for t in ops.RANDOM_DRAWS if t != ops.DROPOUT))
    def _draw(self, n):
        """A random tensor (rand, randn, randint, randperm, bernoulli(x, p), uniform): a ``Draw``,
        whatever tensor its shape comes from.  A generator argument is refused: the draw would not
        come from the rank's default stream, the only one capture records."""
        if n.kwargs.get("generator") is not None:
            return Refused(n.target, "generator", "a draw from a generator of its own")
        if not isinstance(n.val, TensorMeta):
            return None
        return DRAW

    @lowers("aten.native_dropout_backward.default")
    def _h_native_dropout_backward_default(self, n):
        grad, mask, scale = n.args[:3]
        if not isinstance(scale, (int, float)) or isinstance(scale, bool):
            return Refused(n.target, "scale", f"scale={scale!r}")
        return Term(f"(scalar \"mul\" (binary \"mul\" {self.t(grad)} {self.t(mask)}) {scalar_lit(scale)})")

    @lowers("aten._softmax.default", "aten.softmax.int")
    def _h__softmax_default(self, n):
        x, dim = n.args[:2]
        if self._dtype(x.name) != n.val.dtype:      # half_to_float, softmax(dtype=...): a cast we do not model
            return Refused(n.target, "dtype", f"{self._dtype(x.name)} -> {n.val.dtype}")
        return Term(f"(softmax {self.t(x)} {self._dim(dim, self.ndim(x.name))})")

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

    # -- constants: zeros, ones, full and their new_ / _like forms -----------------------------
    # target -> (position of the fill value, or the value itself; position of the size, or None
    # for the _like forms, whose size is their input's)
    _FILLS = {
        "aten.zeros.default": (0, 0), "aten.ones.default": (1, 0), "aten.full.default": ((1,), 0),
        "aten.new_zeros.default": (0, 1), "aten.new_ones.default": (1, 1), "aten.new_full.default": ((2,), 1),
        "aten.zeros_like.default": (0, None), "aten.ones_like.default": (1, None),
        "aten.full_like.default": ((1,), None),
    }
    _FILL_KWARGS = {"dtype", "layout", "device", "pin_memory", "memory_format"}

    @lowers(*_FILLS)
    def _h_fill(self, n):
        """A tensor of one number (``cst``) of the output's shape and dtype: what size (or the
        input's shape, for the _like forms) and dtype= (or the input's dtype, for the new_ and _like
        forms) give it; the device, a dense layout and the memory format do not change a value.  A
        fill value that is not a number of the dtype (or symbolic), or a sparse layout: declined
        (opaque)."""
        value, at = self._FILLS[n.target]
        if isinstance(value, tuple):
            value = self._arg(n, value[0], "fill_value")
        meta = n.val
        if not isinstance(meta, TensorMeta) or not set(n.kwargs) <= self._FILL_KWARGS:
            return None
        layout = n.kwargs.get("layout")
        if layout is not None and not (isinstance(layout, TorchConst) and layout.value == "strided"):
            return None
        dtype = n.kwargs.get("dtype")
        if dtype is not None and not (isinstance(dtype, TorchConst) and dtype.value == meta.dtype):
            return None
        if at is not None:
            size = self._arg(n, at, "size")
            if not isinstance(size, (list, tuple)) or len(size) != len(meta.shape):
                return None
            if any(isinstance(a, int) and a != b for a, b in zip(size, meta.shape)):
                return None
        elif not isinstance(n.args[0], Ref) or tuple(self.shape(n.args[0].name)) != tuple(meta.shape):
            return None
        if not isinstance(value, (int, float)):        # bool is an int
            return None
        text = fill_text(value, meta.dtype)
        if text is None:
            return None
        return Term(self._filled(text, meta.shape, meta.dtype))

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

    # -- indexing --------------------------------------------------------------------------
    def _dtype(self, name):
        v = self.g.node(name).val
        return v.dtype if isinstance(v, TensorMeta) else None

    def _source(self, name) -> Node:
        """The node whose value ``name`` has, looking through identity ops."""
        n = self.g.node(name)
        while True:
            if n.target in ops.SAME_VALUE and n.args and isinstance(n.args[0], Ref):
                n = self.g.node(n.args[0].name)
            elif (n.target == ops.TO_COPY and n.args and isinstance(n.args[0], Ref)
                  and self._dtype(n.args[0].name) == self._dtype(n.name)):
                n = self.g.node(n.args[0].name)
            else:
                return n

    def _const_port(self, node: Node) -> str | None:
        if not node.is_placeholder:
            return None
        for p in self.g.inputs:
            if p.node == node.name and p.name.startswith(CONST_PORT_PREFIX):
                return p.name
        return None

    def _const_value(self, ref):
        """The declared value of a tensor constant ``ref`` reads (None: not a declared constant)."""
        if not isinstance(ref, Ref):
            return None
        port = self._const_port(self._source(ref.name))
        return self.constants.get(port) if port is not None else None

    def _lift_const(self, n):
        src = n.args[0]
        if not isinstance(src, Ref):
            return None
        port = self._const_port(self._source(src.name))
        if port is None or not isinstance(n.val, TensorMeta):
            return None
        if port not in self.constants:
            return Free(port)           # never assume an undeclared constant's value
        text = fill_text(self.constants[port], n.val.dtype)
        if text is None:
            return Free(port)
        return Term(self._filled(text, n.val.shape, n.val.dtype))

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
        c = self._const_value(values)
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

    @lowers("aten.masked_fill.Tensor")
    def _h_masked_fill_Tensor(self, n):
        x, mask, value = n.args[:3]
        c = self._const_value(value)
        text = fill_text(c, n.val.dtype) if c is not None else None
        if text is None:
            return None
        return Term(f"(binary {str_lit(MASKED_FILL + text)} {self.t(x)} {self.t(mask)})")

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

    # -- backward ops, reductions, layer norm ------------------------------------------------
    @lowers("aten.gelu_backward.default")
    def _h_gelu_backward_default(self, n):
        grad, x = n.args[:2]
        approx = self._arg(n, 2, "approximate", "none")
        if approx not in ("none", "tanh"):
            return None
        op = "gelu_tanh_backward" if approx == "tanh" else "gelu_backward"
        return Term(f"(binary {str_lit(op)} {self.t(grad)} {self.t(x)})")

    def _pointwise_backward(self, n, op):
        grad, x = n.args[:2]
        return Term(f"(binary {str_lit(op)} {self.t(grad)} {self.t(x)})")

    @lowers("aten.silu_backward.default")
    def _h_silu_backward_default(self, n):
        return self._pointwise_backward(n, "silu_backward")

    @lowers("aten.sigmoid_backward.default")
    def _h_sigmoid_backward_default(self, n):
        return self._pointwise_backward(n, "sigmoid_backward")

    @lowers("aten.tanh_backward.default")
    def _h_tanh_backward_default(self, n):
        return self._pointwise_backward(n, "tanh_backward")

    @lowers("aten.threshold_backward.default")
    def _h_threshold_backward_default(self, n):
        grad, x, c = n.args[:3]
        if not isinstance(c, (int, float)) or isinstance(c, bool):
            return None
        return Term(f"(binary {str_lit(THRESHOLD_BACKWARD + _scalar_text(float(c)))} {self.t(grad)} {self.t(x)})")

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

    def _filled(self, text, shape, dtype) -> str:
        """A tensor of ``shape`` holding the constant ``text`` (``fill_text``) in ``dtype``."""
        return f"(cst {str_lit(text)} {self._shape_list(shape)} {str_lit(dtype)})"

    def _float_zeros(self, name) -> bool:
        """Whether ``name`` is a float buffer of zeros (``ops.ZERO_FILLS``, through identities)."""
        return self._source(name).target in ops.ZERO_FILLS and self._dtype(name) in FLOAT_DTYPES

    def _arg(self, n, i, name, default=None):
        return n.args[i] if len(n.args) > i else n.kwargs.get(name, default)

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

    # -- layer norm statistics and backward; embedding and slice backward (exact) ----------------
    # native_layer_norm's mean and rstd, and native_layer_norm_backward, written with reductions
    # over the normalised (inner) dims and elementwise ops: rows are independent, so the reduction
    # and elementwise lemmas carry a row-sharded (sequence-parallel) layer norm through its
    # backward; the weight and bias gradients are sums over the outer dims (a sum over ranks of the
    # ranks' partial sums).  Computed in the input's dtype: float32 / float64 only (torch computes
    # half types in float and rounds); other calls keep the opaque form (congruence only).

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

    # -- collectives -----------------------------------------------------------------------
    @lowers(*ops.COLLECTIVES)
    def _collective(self, n: Node):
        sig = ops.COLLECTIVES[n.target]
        a = n.args
        params = tuple(tuple(a[i] or ()) if isinstance(a[i], (list, tuple, type(None))) else a[i] for i in sig.params)
        reduce = str(a[sig.reduce]) if sig.reduce is not None else "sum"
        return Collective(sig.kind, a[0].name, str(a[sig.group]), reduce=reduce, params=params)


# the most elements along the flipped dims aten.flip is lowered for (concats of slices); more: opaque
FLIP_MAX = 64

# arange of another dtype is the int64 positions cast: exact while every value is an integer of
# that dtype (floats: at most their mantissa's range; int32: in range)
_ARANGE_EXACT = {"int32": 2**31 - 1, "float64": 2**53, "float32": 2**24, "bfloat16": 2**8, "float16": 2**11}

_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}

def _in_dtype(v: float, dtype: str) -> float:
    """``v`` rounded to a float dtype (to nearest, ties to even), as a kernel that multiplies by a
    scalar of the tensor's dtype rounds it; float64 and other dtypes keep it."""
    if dtype in ("float32", "float16"):
        code = "f" if dtype == "float32" else "e"
        return struct.unpack(code, struct.pack(code, v))[0]
    if dtype == "bfloat16":
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    return v


def _rounded(op: str, n: Node) -> str:
    """div with rounding_mode 'floor' / 'trunc' is another op (div_floor / div_trunc)."""
    if op != "div":
        return op
    mode = n.kwargs.get("rounding_mode", n.args[2] if len(n.args) > 2 else None)
    return {None: "div", "floor": "div_floor", "trunc": "div_trunc"}[mode]


# Arguments the lowering does not read, per op: each must have a value that does not change the
# result (its default, or one listed).  Everything else an accepted op takes is read by its
# lowering (or is part of an opaque term's key); tests/test_opinfo_conformance.py checks both.
UNREAD_ARGS: dict[str, dict[str, tuple]] = {
    "aten.copy.default": {"non_blocking": (False, True)},
    "aten.copy_.default": {"non_blocking": (False, True)},
    "aten.expand.default": {"implicit": (False, True)},
    "aten.clone.default": {"memory_format": "any"},
    "aten.contiguous.default": {"memory_format": "any"},
    "aten.embedding.default": {"padding_idx": "any", "scale_grad_by_freq": "any", "sparse": "any"},
    "aten.layer_norm.default": {"cudnn_enable": "any"},
    # positions: where they live and how they are laid out does not change their values
    **{f"aten.arange.{ov}": {"layout": "any", "device": "any", "pin_memory": "any"}
       for ov in ("default", "start", "start_step")},
    "aten.gather.default": {"sparse_grad": "any"},
}


def _audit_arguments(n: Node):
    """Refused when an argument the lowering ignores has a value that changes the result."""
    if n.target.startswith("aten.") and n.target.rsplit(".", 1)[-1].startswith("out"):
        return Refused(n.target, "out", "out= forms are not in the term language")
    for arg, allowed in UNREAD_ARGS.get(n.target, {}).items():
        if arg not in n.kwargs:
            continue
        v = n.kwargs[arg]
        if allowed != "any" and v not in allowed:
            return Refused(n.target, arg, f"{arg}={v!r}")
    return None


def _refs_in_order(v):
    if isinstance(v, Ref):
        yield v
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from _refs_in_order(x)


def transpose_text(xt: str, a: int, b: int) -> str:
    """x with dims a and b swapped, in the one form both programs and the spec write: dims in
    order, and x itself when a == b (so equal values are equal terms by congruence)."""
    a, b = sorted((a, b))
    return xt if a == b else f"(transpose {xt} {a} {b})"


def permute_text(xt: str, dims) -> str:
    """x permuted (non-negative dims); a swap of two dims is the transpose, no move is x."""
    dims = list(dims)
    moved = [i for i, d in enumerate(dims) if d != i]
    if not moved:
        return xt
    if len(moved) == 2 and dims[moved[0]] == moved[1]:
        return transpose_text(xt, moved[0], moved[1])
    return f"(permute {xt} {int_list(dims)})"


def term_list(items) -> str:
    """Term texts as a TList term (concat parts, ranks of a sum, an opaque op's tensors)."""
    out = "(Nil)"
    for x in reversed(list(items)):
        out = f"(Cons {x} {out})"
    return out


def int_list(xs) -> str:
    """Integers (dims) as an IList term."""
    out = "(INil)"
    for x in reversed(list(xs)):
        out = f"(ICons {x} {out})"
    return out


def shape_list(shape, canon=lambda size: size) -> str:
    """A shape as a DList term."""
    out = "(DNil)"
    for s in reversed(shape):
        out = f"(DCons {dim_term(canon(s))} {out})"
    return out


ROWS_PREFIX = "rows@"


def rows_symbol(graph, node: str) -> sympy.Symbol:
    """The row count of ``node``'s nonzero result in ``graph`` (the checker's name for its
    unbacked size): a term's size, ``(DRows <the node's tensor>)``; possibly 0."""
    return sympy.Symbol(f"{ROWS_PREFIX}{graph}@{node}", integer=True, nonnegative=True)


def counted(s) -> bool:
    """``s`` involves a size counted from a tensor's values (a nonzero's row count)."""
    return any(x.name.startswith(ROWS_PREFIX) for x in getattr(s, "free_symbols", ()))


def rows_node(s) -> tuple[str, str] | None:
    """(graph, node) of a bare nonzero row count (``rows_symbol``), else None."""
    if not (getattr(s, "is_Symbol", False) and s.name.startswith(ROWS_PREFIX)):
        return None
    graph, node = s.name[len(ROWS_PREFIX):].split("@", 1)
    return graph, node


class CountedSize(Exception):
    """A size computed from a nonzero's row count (``u0 * 4``, ``u0 + 1``): no Dim term says it."""


def dim_term(s) -> str:
    if isinstance(s, int):
        return f"(DLit {s})"
    if is_sympy(s) and s.is_Integer:
        return f"(DLit {int(s)})"
    if counted(s):
        if not s.is_Symbol:
            raise CountedSize(s)
        return f"(DRows {ref(rows_node(s)[1])})"
    return f"(DSym {str_lit(symbolic.to_text(s))})"


def _same_size(a, b) -> bool:
    try:
        return bool(a == b) or (is_sympy(a) and sympy.simplify(a - b) == 0)
    except TypeError:
        return False


def fill_text(c, dtype) -> str | None:
    """A constant as the text of a fill value for a tensor of ``dtype`` (None: not exact)."""
    if isinstance(c, bool):
        c = int(c)
    if dtype in FLOAT_DTYPES:
        c = float(c)
        return repr(c) if not math.isfinite(c) else _scalar_text(c)
    if dtype in INT_DTYPES or dtype == "bool":
        if isinstance(c, float) and (not math.isfinite(c) or c != int(c)):
            return None
        v = int(c)
        return str(int(bool(v))) if dtype == "bool" else str(v)
    return None


def scalar_lit(v) -> str:
    """A float operand as the string literal of a ``scalar`` term (``_scalar_text``)."""
    return str_lit(_scalar_text(v))


def _scalar_text(v) -> str:
    """One text per value for a float operand: ``x / 8``, ``x / 8.0`` are the same term, and so are
    ``x / False`` and ``x / 0.0`` (a term's constant means float(text); a lemma that excludes a zero
    or infinite constant names its one text -- a bool's "0" was a second zero no condition named)
    (integer tensors with integer constants use ``iscalar`` instead)."""
    if isinstance(v, bool) or (isinstance(v, int) and abs(v) < 2**53):
        return repr(float(v))
    return repr(v)


def _const_key(v, canon) -> str:
    """Text of an op's constant arguments (tensor arguments appear as '_'); a symbolic size under
    the checker's name (``canon``): a rank's own ``s0`` is not the sequential program's."""
    if isinstance(v, Ref):
        return "_"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_const_key(x, canon) for x in v) + "]"
    if isinstance(v, TorchConst):
        return f"{v.kind}={v.value}" if v.kind == "dtype" else "_"
    if is_sympy(v):
        c = canon(v)
        if counted(c):
            raise CountedSize(c)
        return symbolic.to_text(c)
    return repr(v)


# ----------------------------------------------------------------------------- point-to-point
# Pipeline parallelism: isend / irecv / batch_p2p_ops (what Dynamo makes of dist.isend / irecv /
# batch_isend_irecv and funcol.isend_inplace / irecv_inplace).  Not a collective over a group's
# members: the checker (``Checker._lower_p2p``) pairs each receive with the send of its peer by
# communicator, (source, destination, tag) and issue order, and the received tensor IS the sent
# one (a clean data movement).  A send's own output is an empty placeholder tensor (a free leaf).
# Every argument is read: the peer (a global rank), the tag, the tensor, the group.

@dataclass(frozen=True)
class PointToPoint:
    group: str
    ops: tuple      # (("isend" | "irecv", peer global rank, tag, tensor node name), ...) in issue order
    batch: bool     # outputs are a tuple, one per op (batch_p2p_ops)


@lowers(*ops.POINT_TO_POINT)
def point_to_point(lowerer, n: Node):
    a = n.args
    if ops.POINT_TO_POINT[n.target] == "batch":
        kinds, peers, tags, tensors, group = (list(a[0]), list(a[1]), list(a[2]), list(a[3]), a[4])
        batch = True
    else:
        kinds, peers, tags, tensors, group = [ops.POINT_TO_POINT[n.target]], [a[1]], [a[2]], [a[0]], a[3]
        batch = False
    if not (len(kinds) == len(peers) == len(tags) == len(tensors)) or not kinds:
        return Refused(n.target, "op_list", "lists of different lengths")
    items = []
    for k, p, t, x in zip(kinds, peers, tags, tensors):
        if k not in ("isend", "irecv"):
            return Refused(n.target, "op_list", f"op {k!r}")
        if not isinstance(p, int) or isinstance(p, bool) or not isinstance(t, int) or isinstance(t, bool):
            return Refused(n.target, "peer", f"a peer {p!r} / tag {t!r} that is not a constant integer")
        if not isinstance(x, Ref):
            return Refused(n.target, "tensor", f"{x!r}, not a tensor")
        items.append((k, p, t, x.name))
    return PointToPoint(str(group), tuple(items), batch)


# the table-driven ops: one handler for each table
lowers(*sorted(ops.IDENTITY_OPS - {ops.LIFT_FRESH_COPY}))(Lowerer._identity)
lowers(*sorted(ops.ALLOCATIONS))(Lowerer._allocation)
lowers(*UNARY)(Lowerer._unary)
lowers(*BINARY)(Lowerer._binary_op)
lowers(*sorted(OPAQUE_PURE - set(LOWERINGS)))(Lowerer._opaque)
# custom ops a plugin leaves whole (data-dependent control flow): congruence only
lowers(*sorted(plugins.PURE))(Lowerer._opaque)
