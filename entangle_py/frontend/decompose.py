"""Replace each custom-op node a plugin decomposes by the ATen graph of its reference.

The reference (``plugins/<namespace>.py``) is traced with fake tensors of the node's argument
shapes; its ATen nodes are spliced in place of the node, named ``<node>__<fx name>`` and carrying
the custom op's source line, and each value the node produced becomes an ``alias`` of the traced
result under the node's own name (so spec files and reports keep naming it).  Both forms a
capture records are understood: a direct call, and ``auto_functionalized[_v2]`` around an
out-style op (the new value of each written argument).  Anything else about the call — a
written argument that is a view of its base, symbolic sizes, a traced shape or dtype that
differs from the recorded one — is refused (exit 2), never guessed.
"""
from __future__ import annotations

import dataclasses
import json

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from entangle_py.errors import InputError
from entangle_py.ir import graph as G
from entangle_py.frontend.convert import Converter, DynamoInfo, target_name
from entangle_py.ir import ops
from entangle_py.plugins import REGISTRY
from entangle_py.plugins._registry import _REQUIRED


class PluginError(InputError):
    """A custom op whose call the plugin cannot decompose faithfully."""


def decompose(bundle: G.Bundle) -> G.Bundle:
    """The bundle with every decomposable plugin op replaced (unchanged when there is none)."""
    calls = {c[0].target for g in bundle.ranks for n in g.nodes if (c := _plugin_call(n))}
    if not calls:
        return bundle
    _check_schemas(bundle, calls)
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
    types, which are written) and returns, when the capture recorded its schema."""
    recorded = json.loads(bundle.meta.get(G.CUSTOM_OP_SCHEMAS, "{}"))

    def signature(text):
        s = torch._C.parse_schema(text.split("::", 1)[-1])
        return ([(a.name, str(a.type), bool(a.alias_info and a.alias_info.is_write)) for a in s.arguments],
                [str(r.type) for r in s.returns])
    for t in sorted(targets):
        if t in recorded and signature(recorded[t]) != signature(REGISTRY[t].schema):
            raise PluginError(f"the program's {t} is {recorded[t]!r}; the plugin was written for "
                              f"{REGISTRY[t].schema!r} (a different op of the same name)")


def _bind(g, n, op, functionalized):
    """Argument name -> value (a Ref or a constant) in schema order."""
    args = op.arguments()
    kw = dict(n.kwargs)
    pos = list(n.args[1:] if functionalized else n.args)
    bound = {}
    if functionalized:
        bases = kw.pop("_all_bases", None)
        for name, _, _, written in args:
            if not written:
                continue
            if any(k.startswith(f"_{name}_") and k != f"_{name}_base_index" for k in kw):   # a view: size/stride/slice
                raise PluginError(f"rank {g.rank} node {n.name}: {op.target} writes {name}, a view of its base "
                                  f"(not supported: decompose on the whole base)")
            idx = kw.pop(f"_{name}_base_index", None)
            if bases is not None:
                bound[name] = None if idx is None else bases[idx]
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
    return bound


def _trace(g, n, op, functionalized):
    """Trace the reference on fake tensors of the arguments' shapes: ([name of each produced
    value], the ATen nodes computing them)."""
    bound = _bind(g, n, op, functionalized)
    tensor_args = [k for k, v in bound.items() if isinstance(v, G.Ref)]
    metas = {}
    for k in tensor_args:
        meta = g.node(bound[k].name).val
        if not isinstance(meta, G.TensorMeta) or not all(isinstance(d, int) for d in meta.shape):
            raise PluginError(f"rank {g.rank} node {n.name}: {op.target} argument {k} has symbolic or unknown "
                              f"sizes ({meta}); plugin ops are decomposed at concrete sizes only")
        metas[k] = meta

    def call(*ts):
        kw = dict(bound)
        kw.update(zip(tensor_args, ts))
        res = op.reference(**kw)
        return res if isinstance(res, tuple) else (res,)

    fakes = [torch.empty(metas[k].shape, dtype=getattr(torch, metas[k].dtype)) for k in tensor_args]
    try:
        gm = make_fx(call, tracing_mode="fake")(*fakes)
    except Exception as e:  # noqa: BLE001 - any torch error while tracing the reference
        raise PluginError(f"rank {g.rank} node {n.name}: tracing the {op.target} plugin failed: "
                          f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}") from None

    conv = Converter(DynamoInfo(), None, g.rank)
    rename = {}
    nodes = []
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
    values = ([None] + produced) if functionalized else produced
    _check_metas(g, n, op, values, nodes)
    return values, nodes


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
