"""The lowering's core: the registry of ATen targets, the kinds of result a lowering gives, the
``LowererBase`` every op class's mixin builds on (reading a node's tensors, shapes, dtypes and
constant arguments), and the text of terms (lists, shapes, sizes, constants).

The op classes each have a module of their own (``pointwise``, ``reduction``, ``contraction``,
``movement``, ``indexing``, ...); ``entangle_py.semantics.lower`` joins them into ``Lowerer``.
"""
from __future__ import annotations

import re
import math
from dataclasses import dataclass

from entangle_py.ir import ops
from entangle_py.ir.graph import Node, Ref, TensorMeta, TorchConst
from entangle_py.lazy import LazyModule, is_sympy, sympy
from entangle_py.semantics import opcall
from entangle_py.semantics.sexpr import STRING, unescape
from entangle_py.semantics.terms import str_lit

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
    "aten.index.Tensor", "aten.index_put.default",
    "aten.masked_fill.Tensor", "aten.select.int", "aten.gather.default", "aten.scatter.value",
    "aten.cumsum.default", "aten.sum.default", "aten.mean.default", "aten.max.dim", "aten.min.dim",
    "aten.argmax.default", "aten.var_mean.correction", "aten.var.correction",
    "aten.zeros.default", "aten.ones.default", "aten.full.default", "aten.zeros_like.default",
    "aten.ones_like.default", "aten.full_like.default", "aten.arange.default", "aten.arange.start",
    "aten.new_zeros.default", "aten.new_ones.default", "aten.new_full.default", "aten.scalar_tensor.default",
    "aten.slice_scatter.default", "aten.select_scatter.default", "aten.index_select.default",
    "aten._to_copy.default", "aten.tril.default", "aten.triu.default", "aten.squeeze.dims", "aten.sum.dim_IntList",
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
        a KeyError from it, a node the caller has no expression for, propagates).  Textual (a
        G_d program binds tens of thousands of terms): a string literal is matched whole, so a
        ``(ref "..."`` written inside one is never taken for a reference."""
        def sub(m):
            return m.group(0) if m.group(1) is None else expr_of(unescape(m.group(1)[1:-1]))
        return _REF_OR_STRING.sub(sub, self.text)


_REF_OR_STRING = re.compile(r'\(ref (' + STRING + r')\)|' + STRING)


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



class LowererBase:
    """Lower the nodes of one rank graph to values: terms over ``(ref "<node>")`` leaves.  What
    every op class reads a node with; the handlers are the op classes' mixins (``Lowerer``)."""

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
            if out is None and opcall.pointwise(n.target):
                out = self._pointwise(n)    # a call no normal form covers: the op with its constants
            if out is None and n.target in OPAQUE_PURE:
                return self._opaque(n)
        except CountedSize as e:
            return Refused(n.target, "size", f"a size computed from a nonzero's row count ({e.args[0]})")
        return out if out is not None else NoSemantics(n.target)

    # -- ops every graph has: tuple items, identities, copies, allocations (some registered in __init__)
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

    # -- what a node's arguments are ------------------------------------------------------
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

    def _const_value(self, ref, dtype=None):
        """The value of a tensor constant ``ref`` reads: a declared constant, or (``dtype`` given) a
        0-D literal of that dtype -- ``full([], c)`` / ``scalar_tensor(c)``, what capture writes a
        lifted constant it knows as (DTensor's ``x[mask] = 0``).  None: neither."""
        if not isinstance(ref, Ref):
            return None
        src = self._source(ref.name)
        port = self._const_port(src)
        if port is not None:
            return self.constants.get(port)
        return self._literal_scalar(src, dtype) if dtype is not None else None

    def _literal_scalar(self, node, dtype):
        """The number a 0-D ``node`` of ``dtype`` holds when it is one literal; of another dtype,
        declined (a float16 0.1 is not the float32 0.1 it would be written into)."""
        v = node.val
        if not isinstance(v, TensorMeta) or tuple(v.shape) != () or v.dtype != dtype:
            return None
        if node.target == ops.FULL and set(node.kwargs) <= {"dtype", "layout", "device", "pin_memory"}:
            layout = node.kwargs.get("layout")
            if layout is not None and not (isinstance(layout, TorchConst) and layout.value == "strided"):
                return None
            value = self._arg(node, 1, "fill_value")
        elif node.target == "aten.scalar_tensor.default":
            value = self._arg(node, 0, "s")
        else:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        if isinstance(value, float) and dtype in ("int64", "int32", "int16", "int8", "uint8", "bool"):
            return None                    # torch truncates it to the integer dtype
        return value

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

    def _filled(self, text, shape, dtype) -> str:
        """A tensor of ``shape`` holding the constant ``text`` (``fill_text``) in ``dtype``."""
        return f"(cst {str_lit(text)} {self._shape_list(shape)} {str_lit(dtype)})"

    def _float_zeros(self, name) -> bool:
        """Whether ``name`` is a float buffer of zeros (``ops.ZERO_FILLS``, through identities)."""
        return self._source(name).target in ops.ZERO_FILLS and self._dtype(name) in FLOAT_DTYPES

    def _arg(self, n, i, name, default=None):
        return n.args[i] if len(n.args) > i else n.kwargs.get(name, default)



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
