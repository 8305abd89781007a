"""Dynamo/AOTAutograd FX graphs -> ``ir.graph.RankGraph``: ATen nodes with their metadata, port
names, process groups, symbolic sizes with their ranges and guards, source locations."""
from __future__ import annotations

import contextlib
import dataclasses
import operator
import re
from typing import Any

import sympy

from entangle_py.ir import graph, ops
from entangle_py.ir import symbolic
from entangle_py.frontend.capture_errors import CaptureError, display_path, first_line, pick_frame, parse_stack_trace


@dataclasses.dataclass
class DynamoInfo:
    port_names: list[str] = dataclasses.field(default_factory=list)   # per dynamo graph input
    num_outputs: int = 0
    shape_env: Any = None
    symbol_names: dict = dataclasses.field(default_factory=dict)       # torch symbol -> our name
    result_structure: list = dataclasses.field(default_factory=list)   # output port names
    no_grad_nodes: set = dataclasses.field(default_factory=set)       # Dynamo nodes run under no_grad
    # (grad port, DDP group members) of gradients the capture wrote as DDP's reduction of zeros
    ddp_zero_grads: list = dataclasses.field(default_factory=list)
    eager_draws: list | None = None      # shapes of the draws the forward makes run eagerly (frontend/rng.py)
    results: list = dataclasses.field(default_factory=list)          # (output port, the tensor forward returned)


def is_opaque_object(v) -> bool:
    """A graph input that is an opaque script object (torch 2.13 passes a DeviceMesh so)."""
    import torch
    return not isinstance(v, (torch.Tensor, torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)) \
        and v is not None


def source_name_of(src) -> str:
    name = getattr(src, "name", None)
    name = name() if callable(name) else name
    return str(name)


# ----------------------------------------------------------------------------- conversion

class Converter:
    def __init__(self, info: DynamoInfo, script_file, rank):
        self.info = info
        self.script_file = script_file
        self.rank = rank
        self.sym_exprs: dict[str, Any] = {}       # inlined SymInt arithmetic nodes: name -> expr
        self.torch_syms: dict[Any, sympy.Symbol] = {}
        self.used: dict[str, sympy.Symbol] = {}   # our symbol name -> symbol
        self._frame_cache: dict[str, graph.Source | None] = {}

    # ---- symbols
    def symbol(self, s) -> sympy.Symbol:
        if s not in self.torch_syms:
            name = self.info.symbol_names.get(s, s.name)
            self.torch_syms[s] = symbolic.make_symbol(name)
            self.used[name] = self.torch_syms[s]
        return self.torch_syms[s]

    def expr(self, e):
        """A torch ShapeEnv expression -> ours (symbols renamed, whitelisted constructors only)."""
        if isinstance(e, bool) or e is sympy.true or e is sympy.false:
            return sympy.true if e else sympy.false
        if isinstance(e, int):
            return sympy.Integer(int(e))
        se = self.info.shape_env
        if se is not None:
            with contextlib.suppress(Exception):
                e = se.replace(e)
        if getattr(e, "is_Integer", False):
            return sympy.Integer(int(e))
        subs = {s: self.symbol(s) for s in e.free_symbols}
        try:
            text_expr = e.xreplace({s: sympy.Symbol(v.name) for s, v in subs.items()})
            return symbolic.from_torch(text_expr, self.used)
        except symbolic.SymbolicError as err:
            raise CaptureError(f"rank {self.rank}: {err}") from None

    def symint(self, v):
        import torch
        if isinstance(v, (torch.SymInt, torch.SymBool)):
            return self.expr(v.node.expr)
        if isinstance(v, bool):
            return sympy.true if v else sympy.false
        return sympy.Integer(int(v))

    # ---- values
    def val(self, v):
        import torch
        if v is None:
            return None
        if isinstance(v, torch.Tensor):
            shape = []
            for d in v.shape:
                e = self.symint(d)
                shape.append(int(e) if e.is_Integer else e)
            return graph.TensorMeta(tuple(shape), _dtype_name(v.dtype))
        if isinstance(v, torch.SymInt):
            return graph.SymIntMeta(self.symint(v))
        if isinstance(v, (torch.SymFloat, torch.SymBool)):
            return graph.ScalarMeta("float" if isinstance(v, torch.SymFloat) else "bool")
        if isinstance(v, bool):
            return graph.ScalarMeta("bool")
        if isinstance(v, int):
            return graph.SymIntMeta(sympy.Integer(v))
        if isinstance(v, float):
            return graph.ScalarMeta("float")
        if isinstance(v, (tuple, list)):
            return tuple(self.val(x) for x in v)
        return None

    # ---- arguments
    def arg(self, a):
        import torch
        import torch.fx as fx
        if isinstance(a, fx.Node):
            if a.name in self.sym_exprs:
                return self.sym_exprs[a.name]
            return graph.Ref(a.name)
        if a is None or isinstance(a, bool):
            return a
        if isinstance(a, str):
            return str(a)
        if isinstance(a, int):
            return int(a)
        if isinstance(a, float):
            return float(a)
        if isinstance(a, (torch.SymInt, torch.SymBool)):
            e = self.symint(a)
            return int(e) if getattr(e, "is_Integer", False) else e
        if isinstance(a, (list, tuple)):
            return [self.arg(x) for x in a]
        if isinstance(a, torch.dtype):
            return graph.TorchConst("dtype", _dtype_name(a))
        if isinstance(a, torch.device):
            return graph.TorchConst("device", str(a))
        if isinstance(a, torch.layout):
            return graph.TorchConst("layout", str(a).removeprefix("torch."))
        if isinstance(a, torch.memory_format):
            return graph.TorchConst("memory_format", str(a).removeprefix("torch."))
        if isinstance(a, torch._ops.OpOverload):   # the op a higher-order op wraps (auto_functionalized)
            return graph.check_target(str(a))
        raise CaptureError(f"rank {self.rank}: unsupported argument {a!r} of type {type(a).__name__}")

    # ---- provenance
    def source(self, node) -> graph.Source | None:
        trace = node.meta.get("stack_trace")
        if not trace:
            return None
        if trace not in self._frame_cache:
            pick = pick_frame(parse_stack_trace(trace), self.script_file)
            self._frame_cache[trace] = None if pick is None else graph.Source(
                display_path(pick[0]), pick[1], pick[2], pick[3])
        return self._frame_cache[trace]

    def module(self, node) -> str | None:
        stack = node.meta.get("nn_module_stack")
        if not stack:
            return None
        # The keys are module ids at trace time (not reliable afterwards); use the access path.
        value = list(stack.values())[-1]
        path = value[0] if isinstance(value, tuple) else str(value)
        return _dynamo_path_to_fqn(path) or None


def _dynamo_path_to_fqn(path: str) -> str:
    """"L['self'].layers[0]._modules['fc1']" -> "layers.0.fc1"."""
    path = re.sub(r"^L\['[^']*'\]", "", path)
    parts = re.findall(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\['([^']*)'\]", path)
    out = []
    for attr, idx, key in parts:
        tok = attr or idx or key
        if tok in ("_modules",):
            continue
        out.append(tok)
    return ".".join(out)


def _dtype_name(dt) -> str:
    return str(dt).removeprefix("torch.")


def _is_sym_arith(node) -> bool:
    """Python-level arithmetic on symbolic sizes (``operator.mul(s0, s1)``, ``sym_max``, ...).

    Such nodes are not stored: their value is a size expression, which replaces every reference.
    """
    import torch
    if node.op != "call_function" or isinstance(node.target, (torch._ops.OpOverload, torch._ops.HigherOrderOperator)):
        return False
    return isinstance(node.meta.get("val"), (torch.SymInt, torch.SymBool, int))


def target_name(node) -> str:
    import torch
    t = node.target
    if isinstance(t, torch._ops.OpOverload):
        return str(t)
    if t is operator.getitem:
        return "getitem"
    if isinstance(t, torch._ops.HigherOrderOperator):
        return f"higher_order.{t.name()}"
    raise CaptureError(f"unsupported operation {getattr(t, '__name__', t)!r} in the captured graph")


def convert(gm, info: DynamoInfo, model, inputs, rank, script_file, joint, world_size) -> graph.RankGraph:
    import torch
    from torch._functorch._aot_autograd import descriptors as D

    info.symbol_names = _symbol_names(info, inputs)
    conv = Converter(info, script_file, rank)
    out_names = info.result_structure
    nodes: list[graph.Node] = []
    ports_in: list[graph.Port] = []
    ports_out: list[graph.Port] = []
    groups: dict[str, list[int]] = {}

    def plain_in_name(desc) -> str:
        if isinstance(desc, D.PlainAOTInput):
            return info.port_names[desc.idx]
        if isinstance(desc, D.ParamAOTInput):
            return f"param:{desc.target}"
        if isinstance(desc, D.BufferAOTInput):
            return f"buffer:{desc.target}"
        if isinstance(desc, D.SubclassGetAttrAOTInput) and desc.attr == "_local_tensor":
            return plain_in_name(desc.base)     # a DTensor's local tensor: the rank's part of it
        if isinstance(desc, D.TangentAOTInput):   # (a DTensor output's tangent: its local tensor)
            return "tangent:" + out_name(desc.output)
        raise CaptureError(f"rank {rank}: unsupported graph input kind {type(desc).__name__} ({desc})")

    def out_name(desc) -> str:
        if isinstance(desc, D.PlainAOTOutput):
            return out_names[desc.idx]
        if isinstance(desc, D.GradAOTOutput):
            p = plain_in_name(desc.grad_of)
            return "grad:" + (p[len("param:"):] if p.startswith("param:") else p)
        if isinstance(desc, D.InputMutationAOTOutput):   # e.g. a buffer updated in place
            return "mutated:" + plain_in_name(desc.mutated_input)
        if isinstance(desc, D.SubclassGetAttrAOTOutput) and desc.attr == "_local_tensor":
            return out_name(desc.base)          # a DTensor output (a parameter's gradient): its local tensor
        raise CaptureError(f"rank {rank}: unsupported graph output kind {type(desc).__name__} ({desc}); "
                           f"in-place updates of inputs are not supported")

    # Backward nodes carry no nn_module_stack; they share seq_nr with the forward op they belong to.
    module_of_seq = {}
    for n in gm.graph.nodes if joint else ():
        if n.meta.get("partitioner_tag") != "is_backward" and "seq_nr" in n.meta:
            module_of_seq.setdefault(n.meta["seq_nr"], conv.module(n))

    for n in gm.graph.nodes:
        if n.op == "placeholder":
            desc = n.meta.get("desc")
            if isinstance(desc, D.SubclassGetAttrAOTInput) and desc.attr != "_local_tensor":
                # a DTensor's other flattened attribute (its device mesh: an opaque object, not a
                # tensor); the graph must not compute with it
                if any(u.op != "output" for u in n.users) or isinstance(n.meta.get("val"), torch.Tensor):
                    raise CaptureError(f"rank {rank}: the graph reads {desc.expr()} of a tensor subclass "
                                       f"({type(n.meta.get('val')).__name__}); only its local tensor is supported")
                continue
            if desc is not None:
                port = plain_in_name(desc)
            else:
                raise CaptureError(f"rank {rank}: graph input {n.name} has no descriptor")
            val = conv.val(n.meta.get("val"))
            if val is None and is_opaque_object(n.meta.get("val")) and all(u.op == "output" for u in n.users):
                continue      # an opaque object nothing computes with (a DTensor hook's DeviceMesh)
            nodes.append(graph.Node(n.name, "placeholder", val=val))
            ports_in.append(graph.Port(port, n.name))
        elif n.op == "call_function":
            if _is_sym_arith(n):
                conv.sym_exprs[n.name] = conv.symint(n.meta["val"])
                continue
            target = target_name(n)
            _refuse_data_dependent_size(n, target, conv, rank)
            args = tuple(conv.arg(a) for a in n.args)
            kwargs = {k: conv.arg(v) for k, v in n.kwargs.items()}
            if isinstance(n.target, torch._ops.OpOverload) and n.target.namespace in ops.COLLECTIVE_NAMESPACES:
                _record_groups(n, groups, rank, conv.source(n))
            module = conv.module(n)
            if module is None and n.meta.get("partitioner_tag") == "is_backward":
                module = module_of_seq.get(n.meta.get("seq_nr"))
            nodes.append(graph.Node(n.name, target, args, kwargs, conv.val(n.meta.get("val")),
                                    conv.source(n), module))
        elif n.op == "output":
            outs = n.args[0]
            descs = n.meta.get("desc")
            outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
            if descs is None or len(descs) != len(outs):
                raise CaptureError(f"rank {rank}: graph outputs carry no descriptors")
            for o, desc in zip(outs, descs):
                if isinstance(desc, D.SubclassGetAttrAOTOutput):
                    if desc.attr != "_local_tensor":      # a DTensor's device mesh: not a tensor
                        continue
                    if o is not None:
                        ports_out.append(graph.Port(out_name(desc), o.name))
                        continue
                    desc = desc.base
                if o is None and isinstance(desc, D.GradAOTOutput):
                    check_no_gradient_is_needed(gm, desc, outs, descs, out_name(desc), rank,
                                                 info.no_grad_nodes)
                if desc is None or o is None:
                    continue
                if isinstance(desc, (D.GradAOTOutput, D.PlainAOTOutput, D.InputMutationAOTOutput)):
                    if not hasattr(o, "name"):
                        continue
                    ports_out.append(graph.Port(out_name(desc), o.name))
                else:
                    out_name(desc)  # raises
        elif n.op == "get_attr":
            if _only_returned_as_mesh(n, gm, D):
                # a DTensor gradient's device mesh, held by the graph as a script-object constant
                # (torch 2.13 does so once a mesh was traced before in the process): only returned
                # as the DTensor's mesh, which the output loop skips; nothing computes with it
                continue
            literal = constant_literal(n.name, getattr(gm, n.target, None), conv.source(next(iter(n.users), n)),
                                       conv.module(next(iter(n.users), n)))
            if literal is None:
                raise CaptureError(f"rank {rank}: the captured graph reads a constant tensor ({n.target}) whose "
                                   f"value capture cannot write down ({_why_not_literal(getattr(gm, n.target, None))}); "
                                   f"create it from inputs or register it as a buffer")
            nodes += literal
        else:
            raise CaptureError(f"rank {rank}: unsupported graph node {n.op} {n.target}")

    symbols, guards = _symbols_and_guards(conv, info)
    return graph.RankGraph(rank=rank, nodes=nodes, inputs=ports_in, outputs=ports_out,
                           groups=groups, symbols=symbols, guards=guards)


# A lifted constant of at most this many elements is written into the graph element by element
# (a bigger one of one repeated value is one fill)
MAX_LITERAL_ELEMENTS = 64


def _known_value(v) -> bool:
    """A tensor whose values exist in this process (not fake, not on meta, not a subclass)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor
    return (type(v) in (torch.Tensor, torch.nn.Parameter) and not isinstance(v, FakeTensor)
            and v.device.type != "meta" and not v.is_sparse and not v.is_complex())


def _why_not_literal(v) -> str:
    import torch
    if not isinstance(v, torch.Tensor):
        return f"a {type(v).__name__}"
    if not _known_value(v):
        return "its value is not known at capture time"
    return f"{v.numel()} elements of more than one value"


def constant_literal(name: str, v, source, module) -> list[graph.Node] | None:
    """The graph nodes that write down a constant tensor the trace lifted (Dynamo's
    ``_tensor_constantN``: a ``torch.tensor(0)`` a framework writes into ``forward``, DTensor's
    ``masked_tensor[mask] = 0``): ``aten.full`` of its shape where every element is one value, else
    (at most ``MAX_LITERAL_ELEMENTS``) one ``full`` per element, concatenated and viewed to its
    shape.  The last node is named ``name`` (the graph's reads of the constant read it).  None when
    the value is not known here (a fake or meta tensor) or is too large to write down."""
    import torch
    if not isinstance(v, torch.Tensor) or not _known_value(v):
        return None
    dtype = graph.TorchConst("dtype", _dtype_name(v.dtype))
    kwargs = {"dtype": dtype, "layout": graph.TorchConst("layout", "strided"),
              "device": graph.TorchConst("device", "cpu"), "pin_memory": False}
    shape = tuple(int(d) for d in v.shape)
    flat = v.detach().reshape(-1).tolist()
    meta = graph.TensorMeta(shape, _dtype_name(v.dtype))
    if len(set(map(repr, flat))) <= 1:     # one value (repr: -0.0 and nan are values of their own)
        value = flat[0] if flat else 0
        return [graph.Node(name, ops.FULL, (list(shape), value), dict(kwargs), meta, source, module)]
    if len(flat) > MAX_LITERAL_ELEMENTS:
        return None
    parts = [graph.Node(f"{name}_element{i}", ops.FULL, ([1], x), dict(kwargs),
                        graph.TensorMeta((1,), meta.dtype), source, module) for i, x in enumerate(flat)]
    cat = graph.Node(f"{name}_elements", ops.CAT, ([graph.Ref(p.name) for p in parts], 0), {},
                     graph.TensorMeta((len(flat),), meta.dtype), source, module)
    return parts + [cat, graph.Node(name, ops.VIEW, (graph.Ref(cat.name), list(shape)), {}, meta,
                                    source, module)]


def _only_returned_as_mesh(n, gm, D) -> bool:
    """A get_attr node holding an opaque object (not a tensor) whose every use is a graph output
    that is a tensor subclass's attribute other than its local tensor (a DTensor's device_mesh)."""
    if not is_opaque_object(getattr(gm, n.target, None)) or not n.users:
        return False
    for u in n.users:
        if u.op != "output":
            return False
        outs = u.args[0] if isinstance(u.args[0], (tuple, list)) else [u.args[0]]
        descs = u.meta.get("desc")
        if descs is None or len(descs) != len(outs):
            return False
        for o, d in zip(outs, descs):
            if o is n and not (isinstance(d, D.SubclassGetAttrAOTOutput) and d.attr != "_local_tensor"):
                return False
    return True


def _value_free_ops():
    """Ops that read a tensor for its shape, dtype and device only (their result never depends on
    its values, so no gradient flows through them): zeros_like(b), b.new_zeros(...)."""
    import torch
    a = torch.ops.aten
    return frozenset({a.zeros_like, a.ones_like, a.empty_like, a.full_like, a.rand_like, a.randn_like,
                      a.randint_like, a.new_zeros, a.new_ones, a.new_empty, a.new_full, a.new_empty_strided})


def check_no_gradient_is_needed(gm, desc, outs, descs, grad_port, rank, no_grad_nodes=()):
    """A gradient AOTAutograd left out (None) must be one no output depends on differentiably.

    A backward that silently went missing (an op without an autograd formula on the capture device)
    shows up exactly so: the parameter feeds an output through floating-point ops but gets no gradient.
    Paths through ``detach``, through non-floating values (comparisons, indices), through ops that
    read only a tensor's shape (``zeros_like``) or through ops run under ``torch.no_grad()`` in
    forward (``no_grad_nodes``: Dynamo node names) do not count.
    """
    import torch
    from torch._functorch._aot_autograd import descriptors as D
    ph = next((n for n in gm.graph.nodes if n.op == "placeholder" and n.meta.get("desc") == desc.grad_of), None)
    if ph is None:
        return
    targets = {o for o, d in zip(outs, descs) if o is not None and not isinstance(d, D.GradAOTOutput)}

    def under_no_grad(n):
        src = n.meta.get("from_node")
        return bool(src) and src[-1].name in no_grad_nodes

    def floating(n):
        v = n.meta.get("val")
        if isinstance(v, (tuple, list)):
            return any(isinstance(x, torch.Tensor) and x.is_floating_point() for x in v)
        return isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex())

    value_free = _value_free_ops()
    parent = {ph: None}
    todo, hit = [ph], None
    while todo and hit is None:
        n = todo.pop()
        for u in n.users:
            if u in parent or u.op != "call_function" or u.meta.get("partitioner_tag") == "is_backward":
                continue
            if (u.target is torch.ops.aten.detach.default or not floating(u) or under_no_grad(u)
                    or getattr(u.target, "overloadpacket", None) in value_free):
                continue
            parent[u] = n
            if u in targets:
                hit = u
                break
            todo.append(u)
    if hit is None:
        return
    path, n = [], hit
    while n is not None and n is not ph:
        if n.target is not operator.getitem:
            path.append(target_name(n).removeprefix("aten.").removesuffix(".default"))
        n = parent[n]
    path.reverse()
    shown = " -> ".join(path if len(path) <= 8 else path[:3] + ["..."] + path[-4:])
    raise CaptureError(
        f"rank {rank}: joint capture: {grad_port[len('grad:'):]} feeds the output through {shown} but "
        f"gets no gradient ({grad_port} is missing): the backward of one of these ops was dropped "
        f"(no autograd formula on the capture device)")


def custom_op_schemas(ranks) -> dict:
    """{target: schema} of every custom op (a plugin namespace) the graphs call, directly or
    wrapped by auto_functionalized, as this process has it registered."""
    import torch
    out = {}
    for g in ranks:
        for n in g.nodes:
            for t in (n.target, n.args[0] if n.target in ops.AUTO_FUNCTIONALIZED and n.args else None):
                if isinstance(t, str) and ops.namespace(t) in ops.PLUGIN_NAMESPACES and t not in out:
                    ns, name, overload = t.split(".")
                    out[t] = str(getattr(getattr(getattr(torch.ops, ns), name), overload)._schema)
    return out


def _record_groups(n, groups, rank, src=None):
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _resolve_process_group
    schema = n.target._schema
    for i, a in enumerate(schema.arguments):
        if a.name != "group_name":
            continue
        name = n.kwargs.get("group_name", n.args[i] if i < len(n.args) else None)
        if not isinstance(name, str) or name in groups:
            continue
        try:
            pg = _resolve_process_group(name)
            groups[name] = list(dist.get_process_group_ranks(pg))
        except Exception as e:  # noqa: BLE001 - report which group could not be resolved
            at = f" at {src.file}:{src.line}" + (f": {src.code}" if src.code else "") if src else ""
            raise CaptureError(f"rank {rank}: cannot resolve process group {name!r} of {n.target}: "
                               f"{type(e).__name__}: {first_line(e)}{at}") from None


def _refuse_data_dependent_size(n, target: str, conv: Converter, rank: int) -> None:
    """CaptureError for an op that introduces a size torch can only know from a tensor's values
    (an unbacked symbol: ``masked_select``, ``x[mask]``, ``unique``...), other than ``nonzero``.
    The checker relates ``nonzero``'s row count across the programs as a size of the term itself
    (``DRows`` in semantics/terms.py: two captures' ``u0`` are one size where the e-graph proves
    their nonzero results equal); no other op's data-dependent size has such a meaning, so a graph
    with one is refused by name and line, never checked."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
    new = set(free_unbacked_symbols(n.meta.get("val")))
    for a in n.all_input_nodes:
        new -= set(free_unbacked_symbols(a.meta.get("val")))
    if not new or _is_nonzero_rows(n, target, new):
        return
    src = conv.source(n)
    at = f" at {src.file}:{src.line}" + (f": {src.code}" if src.code else "") if src else ""
    syms = ", ".join(sorted(str(s) for s in new))
    raise CaptureError(
        f"rank {rank}: unsupported op: {target} gives a tensor whose size depends on the values of its "
        f"input (data-dependent size {syms}){at} -- the checker relates only nonzero's row count across "
        f"the sequential and the distributed graphs; write the selection with nonzero (x[m.nonzero()]), "
        f"a dense mask (torch.where, or a multiply by the mask) or a fixed capacity")


def _is_nonzero_rows(n, target: str, new: set) -> bool:
    """``n`` is ``nonzero`` and its one new symbol is its row count (``[u, ndim]``)."""
    val = n.meta.get("val")
    return (target == ops.NONZERO and len(new) == 1 and getattr(val, "ndim", 0) == 2
            and val.shape[0].node.expr in new)


def _symbol_names(info: DynamoInfo, inputs) -> dict:
    """Rename ShapeEnv symbols (s0, s77, ...) after the input dim they stand for: ``x_size0``."""
    se = info.shape_env
    if se is None:
        return {}
    from torch._dynamo.source import TensorProperty, TensorPropertySource
    names, taken = {}, set()
    for sym, sources in getattr(se, "var_to_sources", {}).items():
        new = None
        for src in sources:
            if isinstance(src, TensorPropertySource) and src.prop is TensorProperty.SIZE:
                base = source_name_of(src.base)
                m = re.fullmatch(r"L\['([A-Za-z_][A-Za-z0-9_]*)'\]", base)
                if m:
                    new = f"{m.group(1)}_size{src.idx}"
                    break
        if new is None or new in taken:
            continue
        taken.add(new)
        names[sym] = new
    return names


def _symbols_and_guards(conv: Converter, info: DynamoInfo):
    se = info.shape_env
    if se is None or not conv.used:
        return {}, []
    inv = {v.name: k for k, v in conv.torch_syms.items()}
    symbols = {}
    for name in sorted(conv.used):
        tsym = inv[name]
        rng = se.var_to_range.get(tsym)
        lo = hi = None
        if rng is not None:
            lo = _range_end(rng.lower)
            hi = _range_end(rng.upper)
        symbols[name] = (lo, hi)
    guards = []
    known = set(conv.torch_syms)
    seen = set()
    for g in getattr(se, "guards", []):
        e = g.expr
        with contextlib.suppress(Exception):
            e = se.simplify(e)
        if e is sympy.true or e is True or not getattr(e, "free_symbols", None):
            continue
        if not e.free_symbols <= known:
            continue
        try:
            ours = conv.expr(e)
        except CaptureError:
            continue
        if ours is sympy.true:
            continue
        text = symbolic.to_text(ours)
        if text not in seen:
            seen.add(text)
            guards.append(ours)
    return symbols, guards


def _range_end(x):
    try:
        if x.is_finite and x.is_Integer:
            return int(x)
    except AttributeError:
        pass
    return None


