"""Replace each custom-op node a plugin decomposes by the ATen graph of its reference.

The reference (``plugins/<namespace>.py``) is traced with fake tensors of the node's argument
shapes; its ATen nodes are spliced in place of the node, named ``<node>__<fx name>`` and carrying
the custom op's source line, and each value the node produced becomes an ``alias`` of the traced
result under the node's own name (so spec files and reports keep naming it).  Both forms a
capture records are understood: a direct call, and ``auto_functionalized[_v2]`` around an
out-style op (the new value of each written argument).  A written argument that is a slice of
its buffer (``auto_functionalized_v2``'s ``_<arg>_slice_*``) is given to the reference as that
slice, and the buffer's new value is the buffer with the slice replaced (``slice_scatter``).
Anything else about the call -- another kind of view (``as_strided``), two written arguments in
one buffer, symbolic sizes, a traced shape or dtype that differs from the recorded one -- is
refused (exit 2), never guessed.  The reference is traced functionalized (it may compute in
place); a reference that writes one of its arguments is refused too.
"""
from __future__ import annotations

import dataclasses
import json

from entangle_py.errors import InputError
from entangle_py.ir import graph as G
from entangle_py.ir import bundle_meta
from entangle_py.ir import ops
from entangle_py.lazy import torch      # a check without plugin ops imports no torch
from entangle_py.plugins import REGISTRY
from entangle_py.plugins._registry import _REQUIRED


class PluginError(InputError):
    """A custom op whose call the plugin cannot decompose faithfully."""


def decompose(bundle: G.Bundle) -> G.Bundle:
    """The bundle with every decomposable plugin op replaced (unchanged when there is none)."""
    # every plugin op the program calls is the one its plugin was written for -- a pure one too:
    # congruence needs no reference, but the oracle runs the plugin's (re-check, witness)
    _check_schemas(bundle, {t for g in bundle.ranks for n in g.nodes
                            for t in [n.args[0] if n.target in ops.AUTO_FUNCTIONALIZED and n.args else n.target]
                            if isinstance(t, str) and t in REGISTRY})
    calls = {c[0].target for g in bundle.ranks for n in g.nodes if (c := _plugin_call(n))}
    if not calls:
        return bundle
    return dataclasses.replace(bundle, ranks=[_decompose_graph(g) for g in bundle.ranks])


def _plugin_call(n: G.Node):
    """(plugin op, functionalized?) when ``n`` calls a decomposable plugin op."""
    if n.target in REGISTRY and not REGISTRY[n.target].pure:
        return REGISTRY[n.target], False
    if n.target in ops.AUTO_FUNCTIONALIZED and n.args and n.args[0] in REGISTRY and not REGISTRY[n.args[0]].pure:
        return REGISTRY[n.args[0]], True
    return None


def _decompose_graph(g: G.RankGraph) -> G.RankGraph:
    items = {}      # (functionalized node, index) -> traced value name
    out = []
    for n in g.nodes:
        call = _plugin_call(n)
        if call is None:
            if n.target == ops.GETITEM and n.args and isinstance(n.args[0], G.Ref) and (n.args[0].name, n.args[1]) in items:
                src = items[(n.args[0].name, n.args[1])]
                if src is None:
                    raise PluginError(f"rank {g.rank} node {n.name}: reads output {n.args[1]} of "
                                      f"{n.args[0].name}, which the op does not produce")
                out.append(dataclasses.replace(n, target=ops.ALIAS, args=(G.Ref(src),), kwargs={}))
            else:
                out.append(n)
            continue
        op, functionalized = call
        values, nodes = _trace(g, n, op, functionalized)
        out.extend(nodes)
        if functionalized or isinstance(n.val, tuple):
            for i, v in enumerate(values):
                items[(n.name, i)] = v
        else:
            out.append(G.Node(n.name, ops.ALIAS, (G.Ref(values[0]),), {}, n.val, n.source, n.module))
    return dataclasses.replace(g, nodes=out)


def _check_schemas(bundle, targets):
    """The program's op must be the one the plugin was written for: same arguments (names,
    types, which are written, defaults) and returns, when the capture recorded its schema.  (A
    default is part of the op: a call that leaves the argument out runs the program's own default,
    while the plugin's reference -- decomposition, the oracle -- fills in the plugin's.)"""
    recorded = json.loads(bundle.meta.get(bundle_meta.CUSTOM_OP_SCHEMAS, "{}"))

    def signature(text):
        s = torch._C.parse_schema(text.split("::", 1)[-1])
        return ([(a.name, str(a.type), bool(a.alias_info and a.alias_info.is_write),
                  repr(a.default_value) if a.has_default_value() else None) for a in s.arguments],
                [str(r.type) for r in s.returns])
    for t in sorted(targets):
        if t in recorded and signature(recorded[t]) != signature(REGISTRY[t].schema):
            raise PluginError(f"the program's {t} is {recorded[t]!r}; the plugin was written for "
                              f"{REGISTRY[t].schema!r} (a different op of the same name)")


def _bind(g, n, op, functionalized):
    """(argument name -> value (a Ref or a constant) in schema order, the written arguments'
    buffers: [(name, base index, slice (dim, start, end) or None)], or None without bases)."""
    args = op.arguments()
    kw = dict(n.kwargs)
    pos = list(n.args[1:] if functionalized else n.args)
    bound, written_in = {}, None
    if functionalized:
        bases = kw.pop("_all_bases", None)
        written_in = [] if bases is not None else None
        for name, _, _, written in args:
            if not written:
                continue
            idx = kw.pop(f"_{name}_base_index", None)
            kw.pop(f"_{name}_alias", None)          # the whole buffer under another name
            view = _slice_view(g, n, op, name, kw)
            if bases is not None:
                bound[name] = None if idx is None else bases[idx]
                if idx is not None:
                    written_in.append((name, idx, view))
            else:
                bound[name] = kw.pop(name, None)
    for name, default, _, _ in args:
        if name in bound:
            continue
        if pos:
            bound[name] = pos.pop(0)
        elif name in kw:
            bound[name] = kw.pop(name)
        elif default is not _REQUIRED:
            bound[name] = default
        else:
            raise PluginError(f"rank {g.rank} node {n.name}: {op.target} without argument {name!r}")
    extra = list(kw) + (["positional"] if pos else [])
    if extra:
        raise PluginError(f"rank {g.rank} node {n.name}: {op.target} got arguments its schema does not have: {extra}")
    if written_in is not None and len({i for _, i, _ in written_in}) != len(written_in):
        raise PluginError(f"rank {g.rank} node {n.name}: {op.target} writes two arguments in one buffer "
                          f"(not supported)")
    return bound, written_in


def _slice_view(g, n, op, name, kw):
    """(dim, start, end) when the written argument ``name`` is a slice of its buffer, None when
    it is the whole buffer; any other view is refused."""
    keys = {k for k in kw if k.startswith(f"_{name}_")}
    if not keys:
        return None
    parts = (f"_{name}_slice_dim", f"_{name}_slice_start", f"_{name}_slice_end")
    if keys != set(parts):
        raise PluginError(f"rank {g.rank} node {n.name}: {op.target} writes {name}, a view of its buffer that is "
                          f"not a slice ({sorted(keys)}; not supported)")
    view = tuple(kw.pop(k) for k in parts)
    if not (isinstance(view[0], int) and all(isinstance(v, (int, type(None))) and not isinstance(v, bool) for v in view)):
        raise PluginError(f"rank {g.rank} node {n.name}: {op.target} writes {name}, a slice {view} of its buffer "
                          f"with symbolic bounds (not supported)")
    return view


def _trace(g, n, op, functionalized):
    """Trace the reference on fake tensors of the arguments' shapes: ([name of each produced
    value], the ATen nodes computing them)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from entangle_py.frontend.convert import Converter, DynamoInfo, target_name
    bound, written_in = _bind(g, n, op, functionalized)
    tensor_args = [k for k, v in bound.items() if isinstance(v, G.Ref)]
    metas = {}
    for k in tensor_args:
        meta = g.node(bound[k].name).val
        if not isinstance(meta, G.TensorMeta) or not all(isinstance(d, int) for d in meta.shape):
            raise PluginError(f"rank {g.rank} node {n.name}: {op.target} argument {k} has symbolic or unknown "
                              f"sizes ({meta}); plugin ops are decomposed at concrete sizes only")
        metas[k] = meta
    # a written slice of a buffer: the reference gets (and writes) the slice
    nodes, bases = [], {}
    for name, _, view in written_in or ():
        bases[name] = bound[name]
        if view is not None:
            node = _slice_node(n, name, bound[name], metas[name], view)
            nodes.append(node)
            bound[name], metas[name] = G.Ref(node.name), node.val

    def call(*ts):
        kw = dict(bound)
        kw.update(zip(tensor_args, ts))
        res = op.reference(**kw)
        return res if isinstance(res, tuple) else (res,)

    fakes = [torch.empty(metas[k].shape, dtype=getattr(torch, metas[k].dtype)) for k in tensor_args]
    try:
        # functionalized: a reference may compute in place (``out = x.clone(); out.mul_(w)``), and the
        # spliced nodes must read what it wrote (a write to one of its arguments is refused below)
        gm = make_fx(torch.func.functionalize(call), tracing_mode="fake")(*fakes)
    except Exception as e:  # noqa: BLE001 - any torch error while tracing the reference
        raise PluginError(f"rank {g.rank} node {n.name}: tracing the {op.target} plugin failed: "
                          f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}") from None
    params = dict(zip((x.name for x in gm.graph.nodes if x.op == "placeholder"), tensor_args))
    for fx in gm.graph.nodes:
        if fx.op == "call_function" and isinstance(fx.target, torch._ops.OpOverload) and fx.target._schema.is_mutable:
            arg = fx.args[0] if fx.args else None
            what = f"its argument {params[arg.name]}" if getattr(arg, "name", None) in params else "a tensor"
            raise PluginError(f"rank {g.rank} node {n.name}: the {op.target} plugin's reference writes {what} in "
                              f"place ({target_name(fx)}): a reference returns the new values of what the op "
                              f"writes, and leaves its arguments as they are")

    conv = Converter(DynamoInfo(), None, g.rank)
    rename = {}
    it = iter(tensor_args)
    produced = []
    for fx in gm.graph.nodes:
        if fx.op == "placeholder":
            rename[fx.name] = bound[next(it)].name
        elif fx.op == "call_function":
            name = f"{n.name}__{fx.name}"
            rename[fx.name] = name
            nodes.append(G.Node(name, G.check_target(target_name(fx)),
                                _renamed(tuple(conv.arg(a) for a in fx.args), rename),
                                {k: _renamed(conv.arg(v), rename) for k, v in fx.kwargs.items()},
                                conv.val(fx.meta.get("val")), n.source, n.module))
        elif fx.op == "output":
            produced = [rename[o.name] if o is not None else None for o in fx.args[0]]
        else:
            raise PluginError(f"rank {g.rank} node {n.name}: the {op.target} plugin traced to a {fx.op} node")
    if written_in is None:
        values = ([None] + produced) if functionalized else produced
    else:      # outputs: the op's result, then each buffer's new value in buffer order
        new = {}
        for (name, idx, view), value in zip(written_in, produced):
            if view is not None and value is not None:
                node = _scatter_node(n, name, bases[name], value, g.node(bases[name].name).val, view)
                nodes.append(node)
                value = node.name
            new[idx] = value
        values = [None] + [new.get(i) for i in range(len(n.kwargs.get("_all_bases") or ()))]
    _check_metas(g, n, op, values, nodes)
    return values, nodes


def _slice_node(n, name, base, meta, view):
    dim, start, end = view
    d = dim % len(meta.shape)
    shape = list(meta.shape)
    shape[d] = len(range(*slice(start, end).indices(shape[d])))
    return G.Node(f"{n.name}__view_{name}", ops.SLICE, (base, d, start, end), {},
                  G.TensorMeta(tuple(shape), meta.dtype), n.source, n.module)


def _scatter_node(n, name, base, value, meta, view):
    dim, start, end = view
    return G.Node(f"{n.name}__write_{name}", ops.SLICE_SCATTER, (base, G.Ref(value), dim % len(meta.shape), start, end),
                  {}, meta, n.source, n.module)


def _check_metas(g, n, op, values, nodes):
    """Each traced value must have the shape and dtype the capture recorded for it."""
    by_name = {x.name: x.val for x in nodes}
    recorded = n.val if isinstance(n.val, tuple) else (n.val,)
    for i, v in enumerate(values):
        want = recorded[i] if i < len(recorded) else None
        if v is None or want is None:
            continue
        got = by_name.get(v) or g.node(v).val
        if not isinstance(got, G.TensorMeta) or (tuple(got.shape), got.dtype) != (tuple(want.shape), want.dtype):
            raise PluginError(f"rank {g.rank} node {n.name}: the {op.target} plugin gives {got} for output {i}, "
                              f"the capture recorded {want}")


def _renamed(v, rename):
    if isinstance(v, G.Ref):
        return G.Ref(rename.get(v.name, v.name))
    if isinstance(v, list):
        return [_renamed(x, rename) for x in v]
    if isinstance(v, tuple):
        return tuple(_renamed(x, rename) for x in v)
    return v
