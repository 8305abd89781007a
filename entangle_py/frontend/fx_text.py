"""Parse the text that ``torch.fx.GraphModule.print_readable()`` prints into one rank's nodes
(``fx_import.py`` makes a bundle of them).

This is the format of ``TORCH_LOGS=aot_graphs`` / tlparse dumps and of the graphs published with
Entangle: one line per node, ``name: "f32[8, 768]" = torch.ops.aten.mm.default(a, b);  a = None``,
with ``# File: path:line in fn, code: ...`` comments giving source locations.

The file is never executed.  It is read line by line; single statements are parsed with Python's
``ast`` module (which only builds a syntax tree) and that tree is interpreted here against a small
whitelist: ``torch.ops.<ns>.<op>.<overload>(...)`` calls in the namespaces of
``ops.NAMESPACES``, ``x[i]`` / ``operator.getitem(x, i)``, ``self.<constant>``, literals,
``torch.<dtype|layout|memory_format>`` and ``device(...)``.  Anything else is an ``InputError``
naming the file and line.
"""
from __future__ import annotations

import ast
import io
import math
import re
import tokenize
from dataclasses import dataclass, field

from entangle_py.ir import graph, ops
from entangle_py.errors import InputError
from entangle_py.lazy import LazyModule, sympy
from entangle_py.ir.graph import Node, Port, Ref, ScalarMeta, Source, SymIntMeta, TensorMeta, TorchConst

symbolic = LazyModule("entangle_py.ir.symbolic")     # sympy, for symbolic sizes only

_DIGITS = re.compile(r"[0-9]{1,18}")
_SIMPLE_STRING = re.compile(r'"[^"\\\n]*"')      # a double-quoted string without escapes

# dtype abbreviations of torch.fx.graph.dtype_abbrs -> torch dtype names.
DTYPE_ABBRS = {
    "f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16",
    "c32": "complex32", "c64": "complex64", "c128": "complex128",
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "b8": "bool",
    "f8e4m3fn": "float8_e4m3fn", "f8e5m2": "float8_e5m2", "f8e4m3fnuz": "float8_e4m3fnuz",
    "f8e5m2fnuz": "float8_e5m2fnuz", "f8e8m0fnu": "float8_e8m0fnu", "f4e2m1fnx2": "float4_e2m1fn_x2",
    "b1x8": "bits1x8", "b2x4": "bits2x4", "b4x2": "bits4x2", "b8x1": "bits8", "b16x1": "bits16",
}
DTYPE_NAMES = frozenset(DTYPE_ABBRS.values())
# ``torch.<name>`` spellings of dtypes that are not canonical names.
DTYPE_ALIASES = {
    "float": "float32", "double": "float64", "half": "float16", "int": "int32", "long": "int64",
    "short": "int16", "cfloat": "complex64", "cdouble": "complex128", "chalf": "complex32",
}
LAYOUTS = frozenset({"strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc",
                     "_mkldnn", "jagged"})
MEMORY_FORMATS = frozenset({"contiguous_format", "channels_last", "channels_last_3d", "preserve_format"})

CONST_PORT_PREFIX = "const:"

# Python operators on symbolic sizes (``mul: "Sym(s0*s1)" = sym_size_int * sym_size_int_1``).
_SYM_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.FloorDiv: "floordiv",
               ast.Mod: "mod", ast.Pow: "pow", ast.Div: "truediv"}
_SYM_CMPOPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}

_FILE_COMMENT = re.compile(r"^#\s*File:\s*(?P<file>.+?):(?P<line>\d+)(?:\s+in\s+(?P<fn>.*?))?(?:,\s*code:\s?(?P<code>.*))?$")
_CLASS_LINE = re.compile(r"^(?P<indent>\s*)class\s+(?P<name>[^\s(:]+)\s*[(:]")
_DEF_FORWARD = re.compile(r"^(?P<indent>\s*)def\s+forward\s*\(")
_MULTI_ANN = re.compile(r'^(?P<name>[A-Za-z_]\w*)\s*:\s*(?P<ann>"[^"]*"(?:\s*,\s*"[^"]*")+)\s*=')
_TENSOR_ANN = re.compile(r"^(?P<dtype>[a-z][a-z0-9_]*)\[")
_DEVICE_SUFFIX = re.compile(r"^[A-Za-z_]*(?::\d+)?$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MAX_DEPTH = 32


@dataclass
class ParsedGraph:
    """One file's graph before it becomes a RankGraph."""
    kind: str
    nodes: list = field(default_factory=list)
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    symbols: dict = field(default_factory=dict)
    group_names: list = field(default_factory=list)
    lines: dict = field(default_factory=dict)       # node name -> its line in the file


class _FxParser:
    def __init__(self, text: str, filename: str):
        self.filename = filename
        self.lines = text.splitlines()
        self.lineno = 0                     # 1-based line being interpreted (for errors)
        self.nodes: dict[str, Node] = {}    # every node, in definition order
        self.placeholders: list[str] = []   # graph inputs in order
        self.const_ports: list[Port] = []
        self.symbols: dict[str, sympy.Symbol] = {}
        self.source: Source | None = None
        self.subgraphs: set[str] = set()
        self.outputs: list[Port] = []
        self.group_names: list[str] = []
        self.node_lines: dict[str, int] = {}
        self.kind = "forward"

    # ------------------------------------------------------------------ errors

    def fail(self, msg: str, lineno: int | None = None):
        raise InputError(f"{self.filename}:{lineno or self.lineno}: {msg}")

    # ------------------------------------------------------------------ structure

    def parse(self) -> ParsedGraph:
        defs = [(i, len(m.group("indent"))) for i, line in enumerate(self.lines)
                if (m := _DEF_FORWARD.match(line))]
        if not defs:
            raise InputError(f"{self.filename}: no 'def forward(' found; expected the text that "
                             f"GraphModule.print_readable() prints")
        top_indent = min(ind for _, ind in defs)
        tops = [i for i, ind in defs if ind == top_indent]
        if len(tops) > 1:
            raise InputError(f"{self.filename}: holds {len(tops)} graphs (lines "
                             f"{', '.join(str(i + 1) for i in tops)}); import-fx wants one graph per "
                             f"file (one file per rank)")
        for i, line in enumerate(self.lines):
            m = _CLASS_LINE.match(line)
            if m and len(m.group("indent")) >= top_indent and i > tops[0]:
                self.subgraphs.add(m.group("name"))
        start = tops[0]
        body_start = self._signature(start, top_indent)
        self._body(body_start, top_indent)
        self._fill_values()
        inputs = set(self.placeholders)
        nodes = [self.nodes[n] for n in self.placeholders]
        nodes += [n for n in self.nodes.values() if n.name not in inputs]
        inputs = [Port(n, n) for n in self.placeholders] + self.const_ports
        return ParsedGraph(kind=self.kind, nodes=nodes, inputs=inputs, outputs=self.outputs,
                       symbols={name: (1, None) for name in self.symbols},
                       group_names=self.group_names, lines=self.node_lines)

    def _signature(self, start: int, indent: int) -> int:
        """Parse ``def forward(self, ...):`` (possibly over several lines); return the next line index."""
        text = ""
        for end in range(start, len(self.lines)):
            text += " " + self.lines[end].strip()
            try:
                tree = ast.parse(text.strip() + "\n    pass\n")
            except SyntaxError:
                continue
            except (RecursionError, MemoryError, ValueError):
                self.fail("cannot parse the forward signature", start + 1)
            break
        else:
            self.fail("cannot parse the forward signature", start + 1)
        self.lineno = start + 1
        fn = tree.body[0]
        if not isinstance(fn, ast.FunctionDef):
            self.fail("cannot parse the forward signature")
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            self.fail("forward(*args / **kwargs / keyword-only) signatures are not supported")
        params = a.args[1:] if a.args and a.args[0].arg == "self" else a.args
        names = [p.arg for p in params]
        if names == ["primals", "tangents"] and all(p.annotation is None for p in params):
            self.kind = "joint"        # placeholders are declared in the body
            return end + 1
        for p in params:
            val = self._annotation(p.annotation) if p.annotation is not None else None
            self._add_placeholder(p.arg, val)
        return end + 1

    def _add_placeholder(self, name: str, val):
        if name in self.nodes:
            if self.nodes[name].target == "placeholder" and self.nodes[name].val is None:
                self.nodes[name].val = val
                return
            self.fail(f"input {name!r} is defined twice")
        self.nodes[name] = Node(name=name, target="placeholder", val=val)
        self.placeholders.append(name)

    def _body(self, i: int, indent: int):
        returned = False
        n = len(self.lines)
        while i < n:
            raw = self.lines[i]
            stripped = raw.strip()
            if not stripped:
                i += 1
                continue
            if len(raw) - len(raw.lstrip()) <= indent:
                break           # end of forward (nested subgraph classes follow)
            self.lineno = i + 1
            if stripped.startswith("#"):
                self._comment(stripped)
                i += 1
                continue
            if returned:
                self.fail("statement after 'return'")
            stmt_text, i = self._statement(i)
            returned = self._line(stmt_text)
        if not returned:
            self.fail("forward has no 'return' line", i)

    def _statement(self, i: int) -> tuple[str, int]:
        """One logical line (joins lines while brackets are open)."""
        text = self.lines[i].strip()
        j = i + 1
        while _open_brackets(text) and j < len(self.lines) and j - i < 10000:
            text += " " + self.lines[j].strip()
            j += 1
        return text, j

    def _comment(self, text: str):
        m = _FILE_COMMENT.match(text)
        if m:
            self.source = Source(file=m.group("file").strip(), line=int(m.group("line")),
                                 fn=(m.group("fn") or "").strip(), code=(m.group("code") or "").rstrip())
        elif text.lstrip("# ").startswith("No stacktrace found"):
            self.source = None

    # ------------------------------------------------------------------ statements

    def _parse_stmt(self, text: str) -> list[ast.stmt]:
        m = _MULTI_ANN.match(text)
        if m:   # name: "f32[2]", "f32[]" = ...  ->  name: ("f32[2]", "f32[]") = ...
            text = f"{m.group('name')}: ({m.group('ann')}) =" + text[m.end():]
        try:
            return ast.parse(text).body
        except SyntaxError as e:
            self.fail(f"cannot parse line ({e.msg}): {_clip(text)}")
        except (RecursionError, MemoryError, ValueError):
            self.fail(f"cannot parse line: {_clip(text)}")

    def _line(self, text: str) -> bool:
        """Interpret one statement line; True if it was the return."""
        stmts = self._parse_stmt(text)
        if not stmts:
            return False
        first, rest = stmts[0], stmts[1:]
        if isinstance(first, ast.Return):
            if rest:
                self.fail("unexpected statement after 'return'")
            self._return(first.value)
            return True
        if isinstance(first, ast.AnnAssign) and first.value is None:
            # joint graph placeholder declarations: ``primals_1: "i64[32, 1024]"; primals_2: ...``
            for s in stmts:
                if not (isinstance(s, ast.AnnAssign) and s.value is None and isinstance(s.target, ast.Name)):
                    self.fail(f"unexpected statement in a placeholder declaration line: {_clip(text)}")
                if s.target.id in self.nodes and self.nodes[s.target.id].target != "placeholder":
                    self.fail(f"placeholder {s.target.id!r} declared after it was defined")
                self._add_placeholder(s.target.id, self._annotation(s.annotation))
            return False
        if (isinstance(first, ast.Assign) and len(first.targets) == 1
                and isinstance(first.targets[0], (ast.Tuple, ast.List))):
            self._flatten(first)
        elif isinstance(first, ast.AnnAssign) and isinstance(first.target, ast.Name):
            self._node(first.target.id, first.annotation, first.value)
        elif (isinstance(first, ast.Assign) and len(first.targets) == 1
                and isinstance(first.targets[0], ast.Name)):
            self._node(first.targets[0].id, None, first.value)
        else:
            self.fail(f"not a graph node line: {_clip(text)}")
        for s in rest:   # ``;  a = b = None`` frees references; nothing to record
            if not (isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) and s.value.value is None
                    and all(isinstance(t, ast.Name) for t in s.targets)):
                self.fail(f"unexpected statement after the node definition: {_clip(ast.unparse(s))}")
        return False

    def _flatten(self, stmt: ast.Assign):
        """``primals_1, ..., = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)``."""
        call = stmt.value
        if not (isinstance(call, ast.Call) and _dotted(call.func) in ("fx_pytree.tree_flatten_spec",
                                                                       "pytree.tree_flatten_spec")):
            self.fail("tuple assignment that is not the fx_pytree.tree_flatten_spec input unpacking")
        names = []
        for t in stmt.targets[0].elts:
            if not isinstance(t, ast.Name):
                self.fail("unexpected target in input unpacking")
            names.append(t.id)
        for name in names:
            if name not in self.nodes:
                self._add_placeholder(name, None)
            elif self.nodes[name].target != "placeholder":
                self.fail(f"input {name!r} was defined as a node before the input unpacking")
        if set(names) == set(self.placeholders) and len(names) == len(self.placeholders):
            self.placeholders = names          # the unpacking gives the authoritative order

    def _node(self, name: str, ann, value):
        if name in self.nodes:
            self.fail(f"node {name!r} is defined twice")
        if value is None:
            self.fail(f"node {name!r} has no value")
        val = self._annotation(ann) if ann is not None else None
        node = self._rhs(name, value, val)
        node.source = self.source
        self.nodes[name] = node
        self.node_lines[name] = self.lineno

    def _rhs(self, name: str, value, val) -> Node:
        # x[0]: projection of a multi-output op
        if isinstance(value, ast.Subscript):
            base, idx = value.value, value.slice
            if not isinstance(base, ast.Name) or base.id not in self.nodes:
                self.fail(f"subscript of something that is not an earlier node: {_clip(ast.unparse(value))}")
            index = self._arg(idx)
            if not isinstance(index, int) or isinstance(index, bool):
                self.fail(f"getitem index must be an integer: {_clip(ast.unparse(value))}")
            return Node(name=name, target="getitem", args=(Ref(base.id), index), val=val)
        # self._tensor_constant0: a constant tensor held by the module
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
            attr = value.attr
            if attr in self.subgraphs:
                self.fail(f"{name} = self.{attr} is a nested subgraph (used by a higher-order op such as "
                          f"cond/while_loop/wrap); import-fx does not support subgraphs")
            port = CONST_PORT_PREFIX + attr
            if any(p.name == port for p in self.const_ports):
                self.fail(f"constant self.{attr} is read twice")
            self.const_ports.append(Port(port, name))
            return Node(name=name, target="placeholder", val=val)
        if isinstance(value, ast.Call):
            return self._call(name, value, val)
        if isinstance(value, (ast.BinOp, ast.UnaryOp, ast.Compare)):
            return self._sym_arith(name, value, val)
        self.fail(f"unsupported node expression: {_clip(ast.unparse(value))}")

    def _call(self, name: str, call: ast.Call, val) -> Node:
        fn = _dotted(call.func)
        if fn in ("operator.getitem", "getitem"):
            if len(call.args) != 2 or call.keywords:
                self.fail("operator.getitem takes two arguments")
            sub = ast.Subscript(value=call.args[0], slice=call.args[1])
            return self._rhs(name, sub, val)
        if fn is None or not fn.startswith("torch.ops."):
            what = _clip(ast.unparse(call.func), 60)
            self.fail(f"call of {what!r} is not an op of torch.ops.<namespace>; import-fx reads ATen-level "
                      f"graphs (AOTAutograd / make_fx output, e.g. TORCH_LOGS=aot_graphs), not Dynamo or "
                      f"symbolic_trace graphs")
        target = self._op_target(fn[len("torch.ops."):])
        ns, _, rest = target.partition(".")
        args = []
        if ns == "higher_order" and rest in ops.AUTO_FUNCTIONALIZED_OPS:
            if not call.args:
                self.fail(f"{target} without the op it wraps")
            wrapped = _dotted(call.args[0])
            if wrapped is None or not wrapped.startswith("torch.ops."):
                self.fail(f"{target} must wrap a torch.ops.<ns>.<op>.<overload> op, got "
                          f"{_clip(ast.unparse(call.args[0]), 60)}")
            args.append(self._op_target(wrapped[len("torch.ops."):]))
            call_args = call.args[1:]
        else:
            call_args = call.args
        args += [self._arg(a) for a in call_args]
        kwargs = {}
        for kw in call.keywords:
            if kw.arg is None:
                self.fail("**kwargs in an op call")
            kwargs[kw.arg] = self._arg(kw.value)
        if ns in ops.COLLECTIVE_NAMESPACES:
            group = kwargs.get("group_name")
            if group is None and args and isinstance(args[-1], str):
                group = args[-1]
            if isinstance(group, str) and group not in self.group_names:
                self.group_names.append(group)
        return Node(name=name, target=target, args=tuple(args), kwargs=kwargs, val=val)

    def _op_target(self, dotted: str) -> str:
        parts = dotted.split(".")
        if not 2 <= len(parts) <= 3 or not all(_IDENT.match(p) for p in parts):
            self.fail(f"malformed op name torch.ops.{dotted}")
        target = ".".join(parts)
        if parts[0] not in ops.NAMESPACES:
            self.fail(f"op torch.ops.{target} is in namespace {parts[0]!r}, which the graph format does "
                      f"not allow (allowed: {', '.join(sorted(ops.NAMESPACES))})")
        try:
            return graph.check_target(target)
        except graph.GraphFormatError as e:
            self.fail(str(e))

    def _sym_arith(self, name: str, expr, val) -> Node:
        """Python arithmetic on symbolic sizes, e.g. ``mul: "Sym(s0*s1)" = sym_size_int * sym_size_int_1``."""
        if isinstance(expr, ast.BinOp):
            op = _SYM_BINOPS.get(type(expr.op))
            operands = [expr.left, expr.right]
        elif isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
            op, operands = "neg", [expr.operand]
        elif isinstance(expr, ast.Compare) and len(expr.ops) == 1:
            op = _SYM_CMPOPS.get(type(expr.ops[0]))
            operands = [expr.left, expr.comparators[0]]
        else:
            op = None
        if op is None:
            self.fail(f"unsupported expression: {_clip(ast.unparse(expr))}")
        target = f"operator.{op}"
        if "operator" not in ops.NAMESPACES:
            self.fail(f"Python arithmetic on symbolic sizes ({_clip(ast.unparse(expr), 60)}) cannot be "
                      f"stored: the graph format has no 'operator' op namespace")
        return Node(name=name, target=graph.check_target(target),
                    args=tuple(self._arg(o) for o in operands), val=val)

    def _return(self, value):
        if value is None:
            return
        if isinstance(value, ast.Call) and _dotted(value.func) in ("pytree.tree_unflatten", "fx_pytree.tree_unflatten"):
            if not value.args:
                self.fail("tree_unflatten without a list of outputs")
            value = value.args[0]
        seen = set()
        for e in _flatten_outputs(value):
            if isinstance(e, ast.Constant) and e.value is None:
                continue            # no gradient for this input
            if not isinstance(e, ast.Name):
                self.fail(f"unsupported output expression {_clip(ast.unparse(e), 60)}")
            if e.id not in self.nodes:
                self.fail(f"output {e.id!r} is not a node of the graph")
            if e.id in seen:
                continue            # returned twice (e.g. the loss): one port is enough
            seen.add(e.id)
            self.outputs.append(Port(e.id, e.id))

    # ------------------------------------------------------------------ arguments

    def _arg(self, e, depth: int = 0):
        if depth > _MAX_DEPTH:
            self.fail("argument nested too deeply")
        if isinstance(e, ast.Constant):
            v = e.value
            if v is None or isinstance(v, (bool, int, float, str)):
                return v
            self.fail(f"unsupported constant {_clip(repr(v), 60)}")
        if isinstance(e, ast.Name):
            if e.id in self.nodes:
                return Ref(e.id)
            if e.id == "inf":
                return math.inf
            if e.id == "nan":
                return math.nan
            self.fail(f"{e.id!r} is not a node defined before this line")
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            v = self._arg(e.operand, depth + 1)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return -v if isinstance(e.op, ast.USub) else v
            self.fail(f"unsupported expression {_clip(ast.unparse(e), 60)}")
        if isinstance(e, (ast.List, ast.Tuple)):
            return [self._arg(x, depth + 1) for x in e.elts]
        if isinstance(e, ast.Attribute):
            return self._torch_const(e)
        if isinstance(e, ast.Call) and _dotted(e.func) in ("device", "torch.device"):
            return self._device(e)
        self.fail(f"unsupported argument {_clip(ast.unparse(e), 80)}")

    def _torch_const(self, e: ast.Attribute) -> TorchConst:
        dotted = _dotted(e)
        if dotted is None or not dotted.startswith("torch.") or dotted.count(".") != 1:
            self.fail(f"unsupported argument {_clip(ast.unparse(e), 80)}")
        attr = dotted.split(".", 1)[1]
        attr = DTYPE_ALIASES.get(attr, attr)
        if attr in DTYPE_NAMES:
            return TorchConst("dtype", attr)
        if attr in LAYOUTS:
            return TorchConst("layout", attr)
        if attr in MEMORY_FORMATS:
            return TorchConst("memory_format", attr)
        self.fail(f"unknown torch constant {dotted} (not a dtype, layout or memory format)")

    def _device(self, call: ast.Call) -> TorchConst:
        vals = [self._arg(a) for a in call.args]
        kw = {k.arg: self._arg(k.value) for k in call.keywords}
        dev_type = kw.get("type", vals[0] if vals else None)
        index = kw.get("index", vals[1] if len(vals) > 1 else None)
        if not isinstance(dev_type, str):
            self.fail(f"unsupported device {_clip(ast.unparse(call), 60)}")
        text = dev_type if index is None or ":" in dev_type else f"{dev_type}:{index}"
        if not re.match(r"^[A-Za-z_]+(:\d+)?$", text):
            self.fail(f"unsupported device {_clip(ast.unparse(call), 60)}")
        return TorchConst("device", text)

    # ------------------------------------------------------------------ annotations

    def _annotation(self, ann):
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            return self._meta(ann.value)
        if isinstance(ann, (ast.Tuple, ast.List)) and all(
                isinstance(x, ast.Constant) and isinstance(x.value, str) for x in ann.elts):
            return tuple(self._meta(x.value) for x in ann.elts)
        self.fail(f"unsupported type annotation {_clip(ast.unparse(ann), 60)}")

    def _meta(self, text: str):
        text = text.strip()
        if text.startswith("Sym(") and text.endswith(")"):
            return SymIntMeta(self._size(text[4:-1], as_expr=True))
        if text in ("int", "float", "bool"):
            return ScalarMeta(text)
        m = _TENSOR_ANN.match(text)
        if not m:
            self.fail(f"cannot read type annotation {text!r}")
        abbr = m.group("dtype")
        if abbr not in DTYPE_ABBRS:
            self.fail(f"unknown dtype {abbr!r} in annotation {text!r} (known: {', '.join(sorted(DTYPE_ABBRS))})")
        end = _matching_bracket(text, m.end() - 1)
        if end is None:
            self.fail(f"unbalanced brackets in annotation {text!r}")
        shape_text = text[m.end():end]
        rest = text[end + 1:]
        if rest.startswith("["):             # strides (include_stride=True): not needed
            s_end = _matching_bracket(rest, 0)
            if s_end is None:
                self.fail(f"unbalanced brackets in annotation {text!r}")
            rest = rest[s_end + 1:]
        if not _DEVICE_SUFFIX.match(rest):   # device (include_device=True): ignored
            self.fail(f"cannot read type annotation {text!r}")
        dims = _split_top(shape_text) if shape_text.strip() else []
        shape = tuple(self._size(d) for d in dims)
        for d in shape:
            if isinstance(d, int) and d < 0:
                self.fail(f"negative size in annotation {text!r}")
        return TensorMeta(shape, DTYPE_ABBRS[abbr])

    def _size(self, text: str, as_expr: bool = False):
        if not as_expr and _DIGITS.fullmatch(text.strip()):
            return int(text)        # a static size (most of them): no expression to read
        if len(text) > symbolic.MAX_TEXT:
            self.fail(f"size expression too long ({len(text)} characters)")
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except (SyntaxError, RecursionError, MemoryError, ValueError):
            self.fail(f"cannot read size {text!r}")
        e = self._size_expr(tree.body, text, 0)
        if e.is_Integer and not as_expr:
            return int(e)
        return e

    def _size_expr(self, e, text: str, depth: int):
        if depth > _MAX_DEPTH:
            self.fail(f"size expression nested too deeply: {text!r}")
        if isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool):
            return sympy.Integer(e.value)
        if isinstance(e, ast.Name):
            name = e.id
            if name not in self.symbols:
                try:
                    self.symbols[name] = symbolic.make_symbol(name)
                except symbolic.SymbolicError as err:
                    self.fail(f"{err} in size {text!r}")
            return self.symbols[name]
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            v = self._size_expr(e.operand, text, depth + 1)
            return -v if isinstance(e.op, ast.USub) else v
        if isinstance(e, ast.BinOp):
            a = self._size_expr(e.left, text, depth + 1)
            b = self._size_expr(e.right, text, depth + 1)
            if isinstance(e.op, ast.Add):
                return a + b
            if isinstance(e.op, ast.Sub):
                return a - b
            if isinstance(e.op, ast.Mult):
                return a * b
            if isinstance(e.op, ast.FloorDiv):
                return symbolic.FloorDiv(a, b)
            if isinstance(e.op, ast.Mod):
                return sympy.Mod(a, b)
            if isinstance(e.op, ast.Pow) and b.is_Integer and 0 < int(b) <= 64:
                return a ** b
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and not e.keywords:
            fname = {"PythonMod": "Mod"}.get(e.func.id, e.func.id)
            if fname in ("FloorDiv", "Mod", "Max", "Min"):
                args = [self._size_expr(x, text, depth + 1) for x in e.args]
                if not args:
                    self.fail(f"{fname}() without arguments in size {text!r}")
                return symbolic.FUNCTIONS[fname](*args)
        self.fail(f"unsupported size expression {text!r}")

    # ------------------------------------------------------------------ post-pass

    def _fill_values(self):
        """Values the text leaves implicit: multi-output ops and constants read by lift_fresh_copy."""
        items: dict[str, dict[int, object]] = {}
        for n in self.nodes.values():
            if n.target == "getitem" and isinstance(n.args[0], Ref):
                items.setdefault(n.args[0].name, {})[n.args[1]] = n.val
            if n.target == ops.LIFT_FRESH_COPY and n.args and isinstance(n.args[0], Ref):
                src = self.nodes[n.args[0].name]
                if src.target == "placeholder" and src.val is None and isinstance(n.val, TensorMeta):
                    src.val = n.val
        for base, by_index in items.items():
            node = self.nodes[base]
            if node.val is None and all(i >= 0 for i in by_index):
                size = max(max(by_index) + 1, _num_returns(node.target))
                node.val = tuple(by_index.get(i) for i in range(size))


def _num_returns(target: str) -> int:
    """Number of results of ``ns.op.overload`` where it has more than one and the checker lowers
    it (``ops.RESULT_COUNTS``, checked against torch's schemas by the tests); 0 otherwise: the
    results the dump reads then say how many there are (a list result is one)."""
    return ops.RESULT_COUNTS.get(target, 0)


def _flatten_outputs(e, depth=0):
    """Leaves of a (nested) tuple/list return value, in order."""
    if isinstance(e, (ast.Tuple, ast.List)) and depth < _MAX_DEPTH:
        for x in e.elts:
            yield from _flatten_outputs(x, depth + 1)
    else:
        yield e


def _dotted(e) -> str | None:
    parts = []
    while isinstance(e, ast.Attribute):
        parts.append(e.attr)
        e = e.value
    if not isinstance(e, ast.Name):
        return None
    parts.append(e.id)
    return ".".join(reversed(parts))


def _matching_bracket(text: str, open_at: int) -> int | None:
    depth = 0
    for i in range(open_at, len(text)):
        c = text[i]
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
            if depth == 0:
                return i if c == "]" else None
    return None


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses: 'Max(1, s0), 768' -> ['Max(1, s0)', '768']."""
    out, depth, cur = [], 0, []
    for c in text:
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        if c == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    out.append("".join(cur))
    return [x.strip() for x in out]


def _open_brackets(text: str) -> bool:
    """True when the statement continues on the next line (an unclosed bracket)."""
    code = _SIMPLE_STRING.sub("", text)
    if not any(q in code for q in "\"'\\#") and all(code.count(a) == code.count(b) for a, b in ("()", "[]", "{}")):
        return False        # every bracket closed, no string or comment to hide one: most lines
    try:
        for _ in tokenize.generate_tokens(io.StringIO(text + "\n").readline):
            pass
    except tokenize.TokenError as e:
        return "multi-line statement" in str(e)
    except (SyntaxError, IndentationError):
        return False
    return False


def _clip(text: str, n: int = 120) -> str:
    text = text.strip()
    return text if len(text) <= n else text[: n - 3] + "..."


def parse_fx_text(text: str, *, filename: str = "<text>") -> ParsedGraph:
    """Parse one print_readable() text (never executed)."""
    return _FxParser(text, filename).parse()
