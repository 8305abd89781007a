"""In-place ops of a graph rewritten as functional ones: a read after a write sees the write.

A graph from a stranger (``import-fx``) may hold ATen's in-place ops -- ``copy_``, ``add_``,
``index_put_``, ``zero_``, ... -- whose schemas mark the argument they write ``Tensor(a!)``.
Read as the functional op, a later read of the written tensor (or of a view of it, or of the tensor
it is a view of) would see its old value.  Here every such write becomes a functional op whose
result is the tensor's new value, and every later read of an alias of the written storage reads
the new value:

* the op's functional variant (``aten.add_.Tensor`` -> ``aten.add.Tensor``: the same name
  without the ``_``, the same arguments, no writes) computes the written tensor's new value
  (``aten._foreach_*_``: a list of new values, each taken with ``getitem``); a custom op with a
  known schema and no functional variant (a plugin's out-style kernel) becomes
  ``higher_order.auto_functionalized`` around it, torch's own functional form;
* a write into a view reaches the tensor it views: the new value is scattered back up the chain
  of views (``slice_scatter``, ``select_scatter``, ``diagonal_scatter``, the inverse ``view`` /
  ``permute`` / ``transpose``, a part of ``split`` / ``unbind``);
* every view taken before the write and read after it is taken again from the new value;
* a graph input written to gets an output ``mutated:<input port>`` holding its value at the end
  (the convention of captured graphs, README "Stable names");
* an in-place view (``squeeze_``, ``t_``: the tensor re-shaped, its values unchanged) of a tensor
  the graph made is that view from there on (``aten.squeeze_`` -> ``aten.squeeze`` read by every
  later user of the tensor).

What cannot be said faithfully is refused (:class:`FunctionalizeError`, exit 2): an op that writes
two arguments or an ``out=`` argument, an in-place op without a functional variant (the random
``normal_``), a collective's in-place form, an in-place view of a graph input (the caller's tensor
re-shaped), a write through a view without an inverse here (``expand``, ``as_strided``, a
``reshape`` that may have copied).  Schemas come from torch's
operator registry (``torch.ops.<ns>.<op>.<overload>._schema``: a lookup by a name that passed
``graph.check_target``, nothing of the graph is executed) and from the plugins; an op neither
knows is taken as written (not writing).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any

from entangle_py.errors import InputError
from entangle_py.ir import graph as G
from entangle_py.ir import ops
from entangle_py.semantics.lower import LOWERINGS


class FunctionalizeError(InputError):
    """A write the functional form cannot express faithfully."""

    def __init__(self, node: str, why: str):
        super().__init__(f"node {node}: {why}")
        self.node, self.why = node, why


# ----------------------------------------------------------------------------- schemas

def _packet(ns: str, name: str):
    """torch's OpOverloadPacket ``torch.ops.<ns>.<name>``, or None (a registry lookup only)."""
    if ns == "higher_order" or ns.startswith("__") or name.startswith("__"):
        return None
    import torch
    try:
        return getattr(getattr(torch.ops, ns), name)
    except (AttributeError, RuntimeError):
        return None


def _overload(target: str):
    """torch's OpOverload of ``ns.op.overload``, or None."""
    parts = target.split(".") if isinstance(target, str) else []
    packet = _packet(parts[0], parts[1]) if len(parts) == 3 and not parts[2].startswith("__") else None
    try:
        return getattr(packet, parts[2]) if packet is not None else None
    except (AttributeError, RuntimeError):
        return None


@functools.lru_cache(maxsize=None)
def schema(target: str):
    """The op's schema from torch's registry or a plugin, or None (unknown op)."""
    op = _overload(target)
    if op is not None:
        return op._schema
    import torch
    from entangle_py.plugins import REGISTRY
    if target in REGISTRY:
        return torch._C.parse_schema(REGISTRY[target].schema.split("::", 1)[-1])
    return None


def returns_a_view(target) -> bool:
    """Whether the op's result aliases an argument (its schema says ``Tensor(a)``); unknown ops do
    (a caller that must not miss an alias refuses rather than misses it)."""
    if not isinstance(target, str) or target.count(".") != 2:
        return target == ops.GETITEM
    s = schema(target)
    return s is None or any(r.alias_info is not None for r in s.returns)


def _is_view_op(target: str) -> bool:
    """A known op whose result aliases an argument without writing it."""
    s = schema(target)
    return s is not None and bool(s.returns) and any(
        r.alias_info is not None and not r.alias_info.is_write for r in s.returns)


def written_arguments(n: G.Node) -> list[tuple[int | str, Any]]:
    """[(position or keyword, value)] of the arguments node ``n`` writes (schema ``(a!)``), plus
    ``native_batch_norm``'s running statistics in training mode (written, not annotated)."""
    if n.target in ops.MUTATES_UNANNOTATED:
        training = n.args[5] if len(n.args) > 5 else n.kwargs.get("training", False)
        if training is False:
            return []
        return [(i, n.args[i]) for i in (3, 4) if i < len(n.args) and isinstance(n.args[i], G.Ref)]
    s = schema(n.target)
    if s is None:
        return []
    out = []
    for i, a in enumerate(s.arguments):
        if a.alias_info is None or not a.alias_info.is_write:
            continue
        if not a.kwarg_only and i < len(n.args):
            out.append((i, n.args[i]))
        elif a.name in n.kwargs:
            out.append((a.name, n.kwargs[a.name]))
    return [(k, v) for k, v in out if v is not None]


def writes(n: G.Node) -> bool:
    t = n.target
    if n.is_placeholder or (t in LOWERINGS and t not in ops.LOWERED_WRITES and t not in ops.MUTATES_UNANNOTATED):
        return False        # known without reading a schema (ops.LOWERED_WRITES): no torch imported
    return bool(written_arguments(n))


@functools.lru_cache(maxsize=None)
def functional_variant(target: str) -> str | None:
    """``ns.op.overload`` of the in-place ``ns.op_.overload``: the same arguments, no writes (the
    overload of the same name, else the one overload whose arguments are the same:
    ``bernoulli_.float`` -> ``bernoulli.p``)."""
    if not isinstance(target, str) or target.count(".") != 2:
        return None
    ns, name, overload = target.split(".")
    s = schema(target)
    if not name.endswith("_") or name.endswith("__") or s is None:
        return None

    def same(t):
        f = schema(t)
        return f is not None and not f.is_mutable and \
            [(a.name, str(a.type), a.kwarg_only) for a in s.arguments] == \
            [(a.name, str(a.type), a.kwarg_only) for a in f.arguments]
    if same(f"{ns}.{name[:-1]}.{overload}"):
        return f"{ns}.{name[:-1]}.{overload}"
    packet = _packet(ns, name[:-1])
    found = [t for o in (packet.overloads() if packet is not None else ()) if same(t := f"{ns}.{name[:-1]}.{o}")]
    return found[0] if len(found) == 1 else None


# ----------------------------------------------------------------------------- the pass

def functionalize(g: G.RankGraph) -> G.RankGraph:
    """``g`` with every write functional (see the module docstring); ``g`` itself when nothing writes."""
    if not any(writes(n) for n in g.nodes):
        return g
    return _Pass(g).run()


@dataclasses.dataclass
class _View:
    parent: str            # the (original) node this one is a view of
    step: G.Node | None    # the original node taking the view; None: the same tensor (an in-place op's result)


class _Pass:
    def __init__(self, g: G.RankGraph):
        self.g = g
        self.orig = {n.name: n for n in g.nodes}
        self.names = set(self.orig)
        self.out: list[G.Node] = []
        self.root: dict[str, str] = {}        # node -> the node owning its storage
        self.view: dict[str, _View] = {}      # view node -> how it is taken from its parent
        self.version: dict[str, int] = {}     # storage owner -> writes so far
        self.memo: dict[tuple[str, int], str] = {}   # (node, version of its storage) -> node holding that value
        self.rebound: dict[str, str] = {}     # a tensor an in-place view re-shaped -> the node of that view
        self.vals = {n.name: n.val for n in g.nodes}
        self.inputs = {p.node for p in g.inputs}

    # ---- reading
    def read(self, name: str) -> str:
        root = self.root.get(name)
        return name if root is None else self.retake(name, self.version[root])

    def retake(self, name: str, v: int) -> str:
        """The node holding ``name``'s value when its storage is at version ``v``."""
        if (name, v) in self.memo:
            return self.memo[(name, v)]
        view = self.view[name]      # a storage owner is always in memo at its current version
        base = self.retake(view.parent, v)
        if view.step is None:
            new = base
        else:
            step = view.step
            new = self.emit(step, f"{name}_v{v}", step.target, self._swap(step.args, view.parent, base),
                            {k: self._read_arg(x) for k, x in step.kwargs.items()}, step.val)
        self.memo[(name, v)] = new
        return new

    def _read_arg(self, x):
        if isinstance(x, G.Ref):
            return G.Ref(self.read(x.name))
        if isinstance(x, (list, tuple)):
            return type(x)(self._read_arg(y) for y in x)
        return x

    def _swap(self, args, parent: str, base: str):
        """A view's arguments with its parent replaced by ``base`` (the rest read as now)."""
        out, done = [], False
        for a in args:
            if not done and isinstance(a, G.Ref) and a.name == parent:
                out.append(G.Ref(base))
                done = True
            else:
                out.append(self._read_arg(a))
        return tuple(out)

    def emit(self, like: G.Node, name: str, target, args, kwargs, val) -> str:
        """A new node (named ``name``, or after it when taken; ``like``'s own name is its to keep)."""
        base, k = name, 1
        while name in self.names and name != like.name:
            name, k = f"{base}_{k}", k + 1
        self.names.add(name)
        self.vals[name] = val
        self.out.append(G.Node(name, target, tuple(args), dict(kwargs), val, like.source, like.module))
        return name

    def _rebind(self, x):
        """``x`` with each tensor an in-place view re-shaped replaced by that view's node."""
        if isinstance(x, G.Ref):
            return G.Ref(self.rebound.get(x.name, x.name))
        if isinstance(x, (list, tuple)):
            return type(x)(self._rebind(y) for y in x)
        return x

    # ---- the walk
    def run(self) -> G.RankGraph:
        for n in self.g.nodes:
            if self.rebound:
                n = dataclasses.replace(n, args=self._rebind(tuple(n.args)),
                                        kwargs={k: self._rebind(v) for k, v in n.kwargs.items()})
            if n.is_placeholder:
                self.out.append(n)
                self._owner(n.name)
            elif writes(n):
                self._write(n)
            else:
                m = dataclasses.replace(n, args=self._read_arg(tuple(n.args)),
                                        kwargs={k: self._read_arg(v) for k, v in n.kwargs.items()})
                self.out.append(m)
                parent = self._view_parent(n)
                if parent is None:
                    self._owner(n.name)
                else:
                    self._alias(n.name, parent, n)
        outputs = [G.Port(p.name, self.read(self.rebound.get(p.node, p.node))) for p in self.g.outputs]
        taken = {p.name for p in outputs}
        for p in self.g.inputs:
            if self.version.get(p.node, 0) > 0:
                port = f"mutated:{p.name}"
                if port in taken:
                    raise FunctionalizeError(p.node, f"the graph writes input {p.name} and already returns "
                                                     f"an output named {port}")
                outputs.append(G.Port(port, self.read(p.node)))
        return dataclasses.replace(self.g, nodes=self.out, outputs=outputs)

    def _owner(self, name: str) -> None:
        self.root[name] = name
        self.version[name] = 0
        self.memo[(name, 0)] = name

    def _alias(self, name: str, parent: str, step: G.Node | None) -> None:
        root = self.root[parent]
        self.root[name] = root
        self.view[name] = _View(parent, step)
        self.memo[(name, self.version[root])] = name

    def _view_parent(self, n: G.Node) -> str | None:
        """The node ``n`` is a view of (its first tensor argument), or None for a fresh tensor."""
        if n.target == ops.GETITEM:
            src = n.args[0] if n.args else None
            return src.name if isinstance(src, G.Ref) and src.name in self.view else None
        if not _is_view_op(n.target):
            return None
        base = next((a for a in n.args if isinstance(a, G.Ref)), None)
        return base.name if base is not None and base.name in self.root else None

    # ---- writes
    def _write(self, n: G.Node) -> None:
        written = written_arguments(n)
        if ops.namespace(n.target) in ops.COLLECTIVE_NAMESPACES:
            raise FunctionalizeError(n.name, f"{n.target} is a collective's in-place form (not supported: "
                                             f"use the functional collective and its wait_tensor)")
        op = _overload(n.target)
        if op is not None and _inplace_view(op):
            return self._in_place_view(n, written)
        target = written[0][1]
        if n.target in ops.MUTATES_UNANNOTATED:
            new = self._batch_norm(n)
        elif len(written) != 1 or not isinstance(written[0][0], int):
            what = ", ".join(str(k) for k, _ in written)
            raise FunctionalizeError(n.name, f"{n.target} writes {what}: only an op writing one positional "
                                             f"argument is functionalized (not supported)")
        elif isinstance(target, G.Ref):
            new = self._in_place(n, target)
        elif isinstance(target, (list, tuple)) and all(isinstance(t, G.Ref) for t in target):
            new = self._in_place_list(n, target)
        else:
            raise FunctionalizeError(n.name, f"{n.target} writes {target!r}, which is not a tensor of the graph")
        for ref, value in new:
            self._propagate(n, ref.name, value)
        s = schema(n.target)
        if s is not None and len(s.returns) == 1 and s.returns[0].alias_info is not None \
                and s.returns[0].alias_info.is_write and isinstance(target, G.Ref):
            # the in-place op's result is the written tensor itself (``add_`` returns ``self``)
            self._alias(n.name, target.name, None)
        elif n.name not in self.root:
            self._owner(n.name)

    def _in_place_view(self, n: G.Node, written) -> None:
        """``x.squeeze_(d)``, ``x.t_()``: from here on ``x`` is that view of its storage (whose values
        do not change); an input re-shaped in place (the caller's tensor) is refused."""
        variant = functional_variant(n.target)
        x = written[0][1] if len(written) == 1 else None
        if variant is None or not _is_view_op(variant) or not isinstance(x, G.Ref) or x.name in self.inputs:
            raise FunctionalizeError(n.name, f"{n.target} changes the shape or strides of "
                                             f"{'a graph input' if isinstance(x, G.Ref) else 'its argument'} in "
                                             f"place (an in-place view; not supported)")
        step = dataclasses.replace(n, target=variant)
        self.out.append(dataclasses.replace(step, args=self._read_arg(tuple(n.args)),
                                            kwargs={k: self._read_arg(v) for k, v in n.kwargs.items()}))
        self._alias(n.name, x.name, step)
        self.rebound[x.name] = n.name

    def _in_place(self, n: G.Node, target: G.Ref) -> list:
        variant = functional_variant(n.target)
        args = self._read_arg(tuple(n.args))
        kwargs = {k: self._read_arg(v) for k, v in n.kwargs.items()}
        if variant is not None:
            return [(target, self.emit(n, n.name, variant, args, kwargs, n.val))]
        s = schema(n.target)
        if ops.namespace(n.target) == "aten" or s is None or (s.returns and any(r.alias_info for r in s.returns)) \
                or len(s.returns) > 1:
            raise FunctionalizeError(n.name, f"{n.target} writes its argument and has no functional variant "
                                             f"(not supported)")
        # a custom op: torch's functional form of it, (its result, the argument's new value)
        named = {a.name: (args[i] if i < len(args) else kwargs.get(a.name, a.default_value))
                 for i, a in enumerate(s.arguments)}
        whole = self.emit(n, f"auto_functionalized_{n.name}", ops.AUTO_FUNCTIONALIZED_V1, (n.target,), named,
                          (n.val if s.returns else None, self.vals[target.name]))
        if s.returns:
            self.emit(n, n.name, ops.GETITEM, (G.Ref(whole), 0), {}, n.val)
        return [(target, self.emit(n, f"{n.name}_new_{target.name}", ops.GETITEM, (G.Ref(whole), 1), {},
                                   self.vals[target.name]))]

    def _in_place_list(self, n: G.Node, targets) -> list:
        variant = functional_variant(n.target)
        if variant is None:
            raise FunctionalizeError(n.name, f"{n.target} writes a list of tensors and has no functional "
                                             f"variant (not supported)")
        vals = tuple(self.vals[t.name] for t in targets)
        whole = self.emit(n, n.name, variant, self._read_arg(tuple(n.args)),
                          {k: self._read_arg(v) for k, v in n.kwargs.items()}, vals)
        return [(t, self.emit(n, f"{n.name}_{i}", ops.GETITEM, (G.Ref(whole), i), {}, v))
                for i, (t, v) in enumerate(zip(targets, vals))]

    def _batch_norm(self, n: G.Node) -> list:
        """``native_batch_norm`` in training mode: ATen's functional form, which also returns the
        new running statistics (the op's own results keep their positions)."""
        if n.target != ops.BATCH_NORM or len(n.args) < 8 or n.kwargs:
            raise FunctionalizeError(n.name, f"{n.target} in training mode updates its running statistics "
                                             f"(only aten.native_batch_norm with positional arguments is "
                                             f"functionalized)")
        stats = (n.args[3], n.args[4])
        if not all(isinstance(s, G.Ref) for s in stats):
            raise FunctionalizeError(n.name, f"{n.target} updates running statistics that are not graph tensors")
        vals = tuple(self.vals[s.name] for s in stats)
        base = tuple(n.val) if isinstance(n.val, tuple) else (None, None, None)
        whole = self.emit(n, n.name, ops.BATCH_NORM_FUNCTIONAL,
                          self._read_arg(tuple(n.args[:8])), {}, base + vals)
        return [(s, self.emit(n, f"{n.name}_new_{s.name}", ops.GETITEM, (G.Ref(whole), 3 + i), {}, v))
                for i, (s, v) in enumerate(zip(stats, vals))]

    def _propagate(self, n: G.Node, name: str, value: str) -> None:
        """``name`` now holds ``value``: its storage's owner gets the value written back through
        the chain of views, and a new version."""
        root = self.root[name]
        v = self.version[root]
        a, own = name, value
        while a != root:
            view = self.view[a]
            if view.step is None:
                a = view.parent
                continue
            value, a = self._scatter(n, view, a, value, v)
        self.version[root] = v + 1
        self.memo[(root, v + 1)] = value
        self.memo[(name, v + 1)] = own

    def _scatter(self, n: G.Node, view: _View, name: str, value: str, v: int) -> tuple[str, str]:
        """(the new value of the view's base, the base) for the view ``name`` given ``value``."""
        step, parent = view.step, view.parent
        t = step.target
        where = f"a write (by {n.target}) into {name}, a view taken by {t}"
        if t == ops.GETITEM:           # a part of split / split_with_sizes / unbind
            src = self.orig[parent]
            grand = self.view[parent].parent
            base = self.retake(grand, v)
            meta = self.vals[grand]
            i = step.args[1]
            a = list(src.args) + [None] * 3
            if src.target == ops.UNBIND:
                dim = a[1] if a[1] is not None else 0
                return self._emit_scatter(n, name, ops.SELECT_SCATTER, base, value, (dim, i), meta), grand
            if src.target in ops.SPLITS:
                dim = a[2] if a[2] is not None else 0
                size = _dim_size(meta, dim)
                if size is None or not isinstance(a[1], (int, list, tuple)):
                    raise FunctionalizeError(n.name, f"{where}: sizes not known (not supported)")
                sizes = a[1] if isinstance(a[1], (list, tuple)) else [a[1]] * -(-size // a[1])
                start = sum(sizes[:i])
                end = min(start + sizes[i], size)
                return self._emit_scatter(n, name, ops.SLICE_SCATTER, base, value, (dim, start, end), meta), grand
            raise FunctionalizeError(n.name, f"{where} of {src.target} (not supported)")
        base = self.retake(parent, v)
        meta = self.vals[parent]
        rest = tuple(step.args[1:])
        if t in ops.VIEW_SCATTER:
            if ops.VIEW_SCATTER[t] is None:        # the whole tensor
                return value, parent
            return self._emit_scatter(n, name, ops.VIEW_SCATTER[t], base, value, rest, meta), parent
        if t in ops.RESHAPING_VIEWS:
            if not isinstance(meta, G.TensorMeta) or not all(isinstance(d, int) for d in meta.shape):
                raise FunctionalizeError(n.name, f"{where}: the base's sizes are not known (not supported)")
            return self.emit(n, f"{n.name}_write_{name}", ops.VIEW, (G.Ref(value), list(meta.shape)), {}, meta), parent
        if t in ops.SELF_INVERSE_VIEWS:
            return self.emit(n, f"{n.name}_write_{name}", t, (G.Ref(value),) + rest, {}, meta), parent
        if t == ops.PERMUTE and isinstance(meta, G.TensorMeta):
            nd = len(meta.shape)
            dims = [d % nd for d in rest[0]]
            inverse = sorted(range(nd), key=lambda j: dims[j])
            return self.emit(n, f"{n.name}_write_{name}", t, (G.Ref(value), inverse), {}, meta), parent
        raise FunctionalizeError(n.name, f"{where}, which has no inverse here (not supported)")

    def _emit_scatter(self, n, name, target, base, value, rest, meta) -> str:
        return self.emit(n, f"{n.name}_write_{name}", target, (G.Ref(base), G.Ref(value)) + tuple(rest), {}, meta)


def _inplace_view(op) -> bool:
    import torch
    return torch.Tag.inplace_view in getattr(op, "tags", ())


def _dim_size(meta, dim):
    if not isinstance(meta, G.TensorMeta):
        return None
    d = meta.shape[dim % len(meta.shape)]
    return d if isinstance(d, int) else None
