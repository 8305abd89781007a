"""Conformance of the lowering with torch: every lowered term must compute what its op computes.

The checker is only sound if the term an ATen op is lowered to (``lower.Lowerer``) means, under
``terms.evaluate``, exactly what the op computes -- for every argument value the lowering accepts.
A lowering that drops an argument (``div(a, b, rounding_mode="floor")`` lowered as true division,
``sub(a, b, alpha=2)`` without the alpha) lets the checker prove false refinements.

This module checks that on real values, with torch's own OpInfo samples as the source of cases:

* ``trace_sample`` traces one sample (``make_fx``, real tensors, no decompositions) to an ATen
  graph and converts it to our IR (``graph.RankGraph``), with the sample's tensors as inputs;
* ``check_graph`` runs the graph with ``interp`` (our IR, node by node, so every intermediate
  value is known), lowers each node and evaluates the lowered term on the real values of the
  node's inputs, then compares with the node's real value: shape, dtype and value (exact for
  integers and bools, ``allclose`` with NaNs equal for floats).

Per node the verdict is ``agree``, ``opaque`` (an ``opaque`` term has no meaning: congruence
only; checked instead: its key names every constant argument and its list every tensor
argument), ``free`` (an allocation or unknown constant: a leaf related to nothing), ``refused``
(``NoSemantics`` / ``Refused``: the checker exits 2, sound), ``skip`` (not a tensor, a
collective) or ``disagree`` (the lowering is wrong: unsound).  ``SampleVerdict.kind`` sums a
sample up: ``error`` (could not trace / run) > ``disagree`` > ``refused`` > ``opaque`` > ``agree``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from entangle_py.ir import graph as G
from entangle_py.ir import ops
from entangle_py.frontend.capture_errors import CaptureError
from entangle_py.frontend.convert import Converter, DynamoInfo, target_name
from entangle_py.frontend.functionalize import FunctionalizeError, functionalize
from entangle_py.oracle import interp
from entangle_py.oracle import graph_values
from entangle_py.semantics import lower as L
from entangle_py.semantics import terms

# ----------------------------------------------------------------------------- verdicts

NODE_KINDS = ("agree", "opaque", "free", "refused", "skip", "disagree")
SAMPLE_KINDS = ("agree", "opaque", "refused", "disagree", "error")
_RANK = {"agree": 0, "free": 1, "skip": 0, "opaque": 1, "refused": 2, "disagree": 3, "error": 4}


@dataclass
class NodeVerdict:
    node: str
    target: str
    kind: str           # one of NODE_KINDS
    why: str = ""
    term: str = ""      # the lowered term (text) the verdict is about

    def __str__(self) -> str:
        s = f"{self.node} ({self.target}): {self.kind}"
        return s + (f": {self.why}" if self.why else "")


@dataclass
class SampleVerdict:
    kind: str                                   # one of SAMPLE_KINDS
    nodes: list[NodeVerdict] = field(default_factory=list)
    why: str = ""                               # for 'error'

    @property
    def disagreements(self) -> list[NodeVerdict]:
        return [v for v in self.nodes if v.kind == "disagree"]

    @property
    def accepted(self) -> list[NodeVerdict]:
        """Nodes the lowering gave a meaning to (not refused, not skipped)."""
        return [v for v in self.nodes if v.kind in ("agree", "opaque", "free", "disagree")]


def summarize(nodes: list[NodeVerdict]) -> SampleVerdict:
    kind = "agree"
    for v in nodes:
        k = "opaque" if v.kind == "free" else ("agree" if v.kind == "skip" else v.kind)
        if _RANK[k] > _RANK[kind]:
            kind = k
    return SampleVerdict(kind, nodes)


def _refused(r) -> bool:
    # NoSemantics (no lowering) and Refused (an argument the term cannot say): the checker exits 2
    return type(r).__name__ in ("NoSemantics", "Refused")


# ----------------------------------------------------------------------------- tracing

class TraceError(Exception):
    """A sample that cannot be traced to an ATen graph our IR holds."""


def _callable(op) -> Callable:
    if hasattr(op, "sample_inputs") and hasattr(op, "op"):      # an OpInfo
        return op.op
    if callable(op):
        return op
    raise TypeError(f"not an op: {op!r}")


def trace_sample(op, sample, inplace: bool = False,
                 functionalize=functionalize) -> tuple[G.RankGraph, dict[str, torch.Tensor], dict[str, Any]]:
    """Trace ``op(sample.input, *sample.args, **sample.kwargs)`` to an ATen graph in our IR.

    ``op`` is an OpInfo, an OpOverload or any callable; ``sample`` a ``SampleInput`` (or anything
    with ``input``, ``args``, ``kwargs``).  Every tensor of the sample (also inside lists and
    kwargs) is a graph input (ports ``in0``, ``in1``, ...); other values are constants of the
    graph.  Returns ``(graph, inputs, outputs)``: inputs and outputs map port names to values
    (outputs ``out0``, ... are the real results of the eager call).

    ``inplace``: the OpInfo's in-place variant (``add_``) is traced as it is, its in-place ATen ops
    made functional by ``functionalize`` (entangle's own: ``frontend/functionalize.py``, the pass
    imported graphs go through), and the eager call's writes are outputs too: ``mutated:in<i>``,
    the i-th input's value after the call, for every input it changed (a write the functional
    graph does not return is an ``error``).  Without ``inplace`` torch functionalizes."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.utils import _pytree as pytree

    if inplace:
        fn = getattr(op, "inplace_variant", None)
        if fn is None:
            raise TraceError("the op has no in-place variant")
    else:
        fn = _callable(op)
    leaves, spec = pytree.tree_flatten((sample.input, tuple(sample.args), dict(sample.kwargs)))
    idx = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]
    tensors = [leaves[i].detach().clone() for i in idx]

    def call(*ts):
        ls = list(leaves)
        for i, t in zip(idx, ts):
            ls[i] = t
        a, args, kwargs = pytree.tree_unflatten(ls, spec)
        return fn(a, *args, **kwargs)

    try:
        with torch.no_grad():
            # make_fx decomposes CompositeImplicitAutograd ops (rms_norm -> ..., add_) below any
            # functionalization around it: trace, then functionalize the ATen graph and trace again,
            # so that the graph is functional like a captured one
            gm = make_fx(call, tracing_mode="real")(*[t.clone() for t in tensors])
            if not inplace and any(isinstance(n.target, torch._ops.OpOverload) and n.target._schema.is_mutable
                                   for n in gm.graph.nodes):
                gm = make_fx(torch.func.functionalize(gm), tracing_mode="real")(*[t.clone() for t in tensors])
            after = [t.clone() for t in tensors]
            eager = call(*after)
    except Exception as e:      # noqa: BLE001 - any torch error is a trace failure
        raise TraceError(f"trace failed: {type(e).__name__}: {first_line(e)}") from None

    conv = Converter(DynamoInfo(), None, 0)
    nodes: list[G.Node] = []
    ins: list[G.Port] = []
    outs: list[G.Port] = []
    inputs: dict[str, torch.Tensor] = {}
    it = iter(tensors)
    try:
        for n in gm.graph.nodes:
            if n.op == "placeholder":
                t = next(it)
                port = f"in{len(ins)}"
                nodes.append(G.Node(n.name, "placeholder", val=conv.val(t)))
                ins.append(G.Port(port, n.name))
                inputs[port] = t
            elif n.op == "get_attr":     # a tensor constant made inside the op: one more input
                t = getattr(gm, n.target)
                port = f"attr:{n.target}"
                nodes.append(G.Node(n.name, "placeholder", val=conv.val(t)))
                ins.append(G.Port(port, n.name))
                inputs[port] = t.detach().clone()
            elif n.op == "call_function":
                target = G.check_target(target_name(n))
                if (not inplace and target == ops.COPY_INTO and n.args[0].op == "placeholder" and not n.users
                        and isinstance(n.args[1], torch.fx.Node)):
                    # functionalization's epilogue for an input the op mutates (embedding with
                    # max_norm): like a captured graph, the new value is an output, not a mutation
                    outs.append(G.Port(f"mutated:{n.args[0].name}", n.args[1].name))
                    continue
                nodes.append(G.Node(n.name, target, tuple(conv.arg(a) for a in n.args),
                                    {k: conv.arg(v) for k, v in n.kwargs.items()}, conv.val(n.meta.get("val"))))
            elif n.op == "output":
                flat = pytree.tree_leaves(n.args[0])
                for o in flat:
                    if hasattr(o, "op"):
                        outs.append(G.Port(f"out{len(outs)}", o.name))
            else:
                raise TraceError(f"unsupported fx node {n.op} {n.target}")
    except (CaptureError, G.GraphFormatError) as e:
        raise TraceError(f"conversion failed: {first_line(e)}") from None
    g = G.RankGraph(rank=0, nodes=nodes, inputs=ins, outputs=outs)
    eager_flat = [x for x in pytree.tree_leaves(eager) if isinstance(x, torch.Tensor)]
    plain = [p for p in outs if p.name.startswith("out")]
    outputs = {p.name: v for p, v in zip(plain, eager_flat)} if len(eager_flat) == len(plain) else {}
    if inplace:
        g = functionalize(g)
        for i, (before, now) in enumerate(zip(tensors, after)):
            if not _same_value(before, now):
                outputs[f"mutated:in{i}"] = now
        missed = sorted(set(k for k in outputs if k.startswith("mutated:")) - {p.name for p in g.outputs})
        if missed:
            raise TraceError(f"the eager call writes {', '.join(m[len('mutated:'):] for m in missed)}; "
                             f"the functional graph does not return it")
    return g, inputs, outputs


def _same_value(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b) or (
        a.is_floating_point() and torch.allclose(a, b, rtol=0, atol=0, equal_nan=True)))


def first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0][:200] if lines else type(e).__name__


# ----------------------------------------------------------------------------- checking

def _var(name: str) -> str:
    return "v:" + name


def _same(got, want, rtol=1e-6, atol=1e-8) -> str | None:
    """None when ``got`` is ``want`` (shape, dtype, value); else what differs."""
    if not isinstance(got, torch.Tensor):
        return f"term gives {type(got).__name__}, op gives a tensor"
    if tuple(got.shape) != tuple(want.shape):
        return f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    if got.dtype != want.dtype:
        return f"dtype {str(got.dtype).removeprefix('torch.')} != {str(want.dtype).removeprefix('torch.')}"
    if got.numel() == 0:
        return None
    if got.dtype.is_floating_point or got.dtype.is_complex:
        if torch.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
            return None
        diff = (got - want).abs()
        bad = ~torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        i = int(bad.flatten().nonzero()[0])
        return (f"value: {int(bad.sum())}/{got.numel()} elements differ, e.g. term {got.flatten()[i].item()!r} "
                f"vs op {want.flatten()[i].item()!r} (max abs diff {float(diff[bad].max())!r})")
    if torch.equal(got, want):
        return None
    bad = got != want
    i = int(bad.flatten().nonzero()[0])
    return (f"value: {int(bad.sum())}/{got.numel()} elements differ, e.g. term {got.flatten()[i].item()!r} "
            f"vs op {want.flatten()[i].item()!r}")


def _value_of(ref: str, env: dict):
    if ref in env:
        return env[ref]
    base, sep, i = ref.rpartition("#")
    if sep and base in env and i.lstrip("-").isdigit():
        return env[base][int(i)]
    raise KeyError(ref)


def _opaques(expr) -> list[tuple]:
    """Every ``(opaque "key" list)`` sub-term of a parsed term."""
    if not isinstance(expr, tuple) or not expr:
        return []
    head = expr[0].name if isinstance(expr[0], terms.Var) else expr[0]
    if head == "opaque":
        return [expr]
    return [o for a in expr[1:] for o in _opaques(a)]


def _list_len(expr) -> int:
    n = 0
    while isinstance(expr, tuple) and expr and getattr(expr[0], "name", None) == "Cons":
        n += 1
        expr = expr[2]
    return n


def _const_texts(v) -> list[str]:
    """Texts one of which must appear in an opaque key for the constant argument ``v``."""
    if isinstance(v, G.TorchConst):
        return [] if v.kind != "dtype" else [v.value]
    if v is None or isinstance(v, G.Ref):
        return []
    if isinstance(v, bool):
        return [repr(v)]
    if isinstance(v, float):
        return [repr(v)] if math.isfinite(v) else [repr(v), str(v)]
    if isinstance(v, (int, str)):
        return [str(v)]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in _const_texts(x)]
    return [str(v)]


def _check_opaque(node: G.Node, expr) -> str | None:
    """An opaque term relates by congruence only, so it must be injective in the op's arguments:
    the key must name the op and every constant argument, the list hold every tensor argument."""
    n_tensors = len(list(node.refs()))
    for op in _opaques(expr):
        if len(op) != 3 or not isinstance(op[1], str):
            return f"malformed opaque term {terms.to_sexpr(op)}"
        key = op[1]
        if node.target not in key:
            return f"opaque key {key!r} does not name the op"
        for i, a in enumerate(node.args):
            for t in _const_texts(a):
                if t not in key:
                    return f"opaque key {key!r} drops argument #{i} = {a!r}"
        for k, a in node.kwargs.items():
            for t in _const_texts(a):
                if t not in key:
                    return f"opaque key {key!r} drops {k}={a!r}"
        got = _list_len(op[2])
        if got != n_tensors:
            return f"opaque term holds {got} tensors, the op reads {n_tensors}"
    return None


def _eval_text(text: str, env: dict):
    return terms.evaluate(terms.parse_sexpr(text), env)


def check_node(lowerer, node: G.Node, values: dict, tenv: dict) -> NodeVerdict:
    """Lower ``node`` and compare the lowered meaning with its real value ``values[node.name]``.
    ``tenv`` maps term variables (``_var(name)``) to tensors."""
    v = NodeVerdict(node.name, node.target, "skip")
    try:
        r = L.bind_result(lowerer.lower(node), _var)
    except Exception as e:      # noqa: BLE001 - a crashing lowering is a refusal the checker does not expect
        v.kind, v.why = "disagree", f"lowering raised {type(e).__name__}: {first_line(e)}"
        return v
    if _refused(r):
        v.kind, v.why = "refused", str(getattr(r, "why", "") or "")
        return v
    if isinstance(r, (L.NotTensor, L.Collective)):
        return v
    if isinstance(r, L.Free) or r is L.DRAW:     # a value of its own (a random draw's, compared with nothing)
        v.kind = "free"
        return v
    real = values[node.name]
    if isinstance(r, L.TupleTerms):
        if not isinstance(real, (tuple, list)) or len(real) != len(r.items):
            v.kind, v.why = "disagree", f"{len(r.items)} lowered outputs for a value of {_describe(real)}"
            return v
        if L.DRAW in r.items:       # the other outputs read the draw: dropout's value is x * mask * scale
            tenv = {**tenv, _var(L.draw_key(node)): real[r.items.index(L.DRAW)]}
        parts = [(f"#{i}", item, real[i]) for i, item in enumerate(r.items) if item is not None and item is not L.DRAW]
    else:
        parts = [("", r, real)]
    kinds, whys, texts = set(), [], []
    for label, item, want in parts:
        k, why, text = _check_one(node, item, want, values, tenv)
        kinds.add(k)
        texts.append(label + (" " if label else "") + text)
        if why:
            whys.append(label + (": " if label else "") + why)
    v.term = "; ".join(texts)
    v.kind = "disagree" if "disagree" in kinds else ("opaque" if "opaque" in kinds else "agree")
    v.why = "; ".join(whys)
    return v


def _check_one(node, item, want, values, tenv) -> tuple[str, str, str]:
    if not isinstance(want, torch.Tensor):
        return "disagree", f"lowered to a tensor term but the op gives {_describe(want)}", str(item)
    if isinstance(item, L.Identity):
        try:
            got = _value_of(item.ref, values)
        except (KeyError, IndexError, TypeError):
            return "disagree", f"identity of unknown value {item.ref!r}", f"= {item.ref}"
        why = _same(got, want)
        return ("disagree" if why else "agree"), why or "", f"= {item.ref}"
    if isinstance(item, L.Decomposed):
        text = item.outer.replace("{inner}", _var(f"{node.name}:{item.name}"))
        shown = f"{item.inner.text} then {item.outer}"
        try:
            inner = _eval_text(item.inner.text, tenv)
            got = _eval_text(text, {**tenv, _var(f"{node.name}:{item.name}"): inner})
        except Exception as e:      # noqa: BLE001
            return "disagree", f"term undefined: {first_line(e)}", shown
        why = _same(got, want)
        return ("disagree" if why else "agree"), why or "", shown
    if isinstance(item, L.Term):
        try:
            expr = terms.parse_sexpr(item.text)
        except ValueError as e:
            return "disagree", f"unparsable term: {e}", item.text
        if _opaques(expr):
            why = _check_opaque(node, expr)
            return ("disagree" if why else "opaque"), why or "", item.text
        try:
            got = terms.evaluate(expr, tenv)
        except Exception as e:      # noqa: BLE001 - EvalError, or a meaning that crashes
            return "disagree", f"term undefined: {first_line(e)}", item.text
        why = _same(got, want)
        return ("disagree" if why else "agree"), why or "", item.text
    return "disagree", f"unexpected lowering {item!r}", repr(item)


def _describe(v) -> str:
    if isinstance(v, torch.Tensor):
        return f"tensor{tuple(v.shape)} {str(v.dtype).removeprefix('torch.')}"
    if isinstance(v, (tuple, list)):
        return f"{type(v).__name__} of {len(v)}"
    return type(v).__name__


def _nondeterministic(g: G.RankGraph) -> bool:
    """Random ops and uninitialised allocations: a second run gives other values."""
    for n in g.nodes:
        if n.target in ops.ALLOCATIONS or "empty" in n.op:
            return True
        if n.namespace == "aten":
            try:
                if torch.Tag.nondeterministic_seeded in graph_values.resolve_op(n.target).tags:
                    return True
            except Exception:   # noqa: BLE001
                pass
    return False


def _mutates(n: G.Node) -> bool:
    if n.namespace != "aten":
        return False
    if n.target in ops.MUTATES_UNANNOTATED:
        return True
    try:
        return graph_values.resolve_op(n.target)._schema.is_mutable
    except Exception:   # noqa: BLE001
        return False


def run_graph(graph: G.RankGraph, inputs: dict) -> dict:
    """Every node's real value (our IR run node by node)."""
    return interp.run_bundle(G.Bundle([graph]), [inputs])[0]


def check_graph(graph: G.RankGraph, inputs: dict, outputs: dict | None = None,
                lowerer_cls=None) -> SampleVerdict:
    """Lower every node of ``graph`` and compare each lowered term with the node's real value.

    ``inputs`` maps input ports to tensors; ``outputs`` (optional) are the real results of the
    eager program: the graph run by ``interp`` must give them (else the trace is not faithful and
    the sample is an ``error``; random ops excepted)."""
    mutating = [n.target for n in graph.nodes if _mutates(n)]
    if mutating:     # interp's values would be stale: a later op changed them in place
        return SampleVerdict("error", why=f"graph is not functional: {', '.join(sorted(set(mutating)))}")
    try:
        values = run_graph(graph, inputs)
    except Exception as e:      # noqa: BLE001
        return SampleVerdict("error", why=f"interp: {first_line(e)}")
    if outputs and not _nondeterministic(graph):
        for p in graph.outputs:
            if p.name in outputs and isinstance(values.get(p.node), torch.Tensor):
                why = _same(values[p.node], outputs[p.name], rtol=1e-5, atol=1e-7)
                if why:
                    return SampleVerdict("error", why=f"graph output {p.name} is not the eager result: {why}")
    tenv = {_var(k): v for k, v in values.items() if isinstance(v, torch.Tensor)}
    lw = (lowerer_cls or L.Lowerer)(graph)
    nodes = [check_node(lw, n, values, tenv) for n in graph.nodes if not n.is_placeholder]
    return summarize(nodes)


def check_sample(op, sample, lowerer_cls=None, inplace: bool = False) -> SampleVerdict:
    try:
        g, inputs, outputs = trace_sample(op, sample, inplace)
    except TraceError as e:
        return SampleVerdict("error", why=str(e))
    except FunctionalizeError as e:        # a write the functional form cannot say: exit 2, sound
        return SampleVerdict("refused", why=str(e))
    return check_graph(g, inputs, outputs, lowerer_cls)


# ----------------------------------------------------------------------------- OpInfo runs

def describe_sample(sample) -> str:
    """A short text of a SampleInput: tensors by shape and dtype, other values as they are."""
    def d(x):
        if isinstance(x, torch.Tensor):
            return f"T{list(x.shape)}:{str(x.dtype).removeprefix('torch.')}"
        if isinstance(x, (list, tuple)):
            inner = ", ".join(d(y) for y in x)
            return f"[{inner}]" if isinstance(x, list) else f"({inner})"
        return repr(x)
    parts = [d(sample.input)] + [d(a) for a in sample.args] + [f"{k}={d(v)}" for k, v in sample.kwargs.items()]
    return ", ".join(parts)


def opinfo_name(op, inplace: bool = False) -> str:
    return op.name + (f".{op.variant_test_name}" if getattr(op, "variant_test_name", "") else "") + \
        (" (in place)" if inplace else "")


@dataclass
class OpResult:
    name: str
    samples: list[tuple[str, SampleVerdict]] = field(default_factory=list)   # (description, verdict)

    def count(self, kind: str) -> int:
        return sum(1 for _, v in self.samples if v.kind == kind)

    @property
    def accepts(self) -> bool:
        """The lowering gives a meaning to some node of some sample's graph."""
        return any(v.accepted for _, v in self.samples)


def _features(sample) -> set:
    """What can make samples of one op different for the lowering: which keyword arguments are
    given ("key"), their and the positional constants' values ("value"), 0-D and empty tensors
    and lists of tensors ("tensor")."""
    out = set()

    def walk(x, where):
        if isinstance(x, torch.Tensor):
            if x.dim() == 0:
                out.add(("tensor", where, "0-D"))
            elif x.numel() == 0:
                out.add(("tensor", where, "empty"))
        elif isinstance(x, (list, tuple)) and any(isinstance(y, torch.Tensor) for y in x):
            out.add(("tensor", where, f"list of {len(x)}"))
        else:
            out.add(("value", where, repr(x)))
    walk(sample.input, "input")
    for i, a in enumerate(sample.args):
        walk(a, i)
    for k, v in sample.kwargs.items():
        out.add(("key", k))
        walk(v, k)
    return out


def _novelty(f: set, seen: set) -> tuple:
    new = f - seen
    return tuple(sum(1 for x in new if x[0] == kind) for kind in ("key", "tensor", "value"))


def pick_samples(samples, n: int, scan: int = 16) -> list:
    """At most ``n`` of the first ``scan`` samples, most novel first: each pick brings the most
    keyword arguments no earlier pick had, then 0-D / empty tensor inputs, then argument values
    (``_features``); ties go to the earlier sample."""
    pool = []
    for i, s in enumerate(samples):
        if i >= scan:
            break
        pool.append((s, _features(s)))
    seen, out = set(), []
    while pool and len(out) < n:
        best = max(range(len(pool)), key=lambda i: (_novelty(pool[i][1], seen), -i))
        s, f = pool.pop(best)
        seen |= f
        out.append(s)
    return out


def accepts_any(op, probe: int = 1, lowerer_cls=None, inplace: bool = False) -> bool:
    """The lowering gives a meaning to a node of one of the first ``probe`` float64 samples'
    graphs (a quick filter: ops it refuses entirely are not worth their samples)."""
    try:
        for i, s in enumerate(op.sample_inputs("cpu", torch.float64)):
            if i >= probe:
                break
            if check_sample(op, s, lowerer_cls, inplace).accepted:
                return True
    except Exception:   # noqa: BLE001 - a sample generator that fails on this torch
        pass
    return False


EXTRA_DTYPES = (torch.int64, torch.bool)


def run_opinfo(op, max_samples: int | dict | None = None, dtypes=(torch.float64,) + EXTRA_DTYPES,
               lowerer_cls=None, inplace: bool = False) -> OpResult:
    """Check the samples of one OpInfo in each supported dtype of ``dtypes``: at most
    ``max_samples`` per dtype (an int, or a dict dtype -> int), picked by ``pick_samples``.
    ``inplace``: its in-place variant (see ``trace_sample``)."""
    res = OpResult(opinfo_name(op, inplace))
    try:
        supported = op.supported_dtypes("cpu")
    except Exception:   # noqa: BLE001
        supported = {torch.float64}
    for dt in dtypes:
        if dt not in supported:
            continue
        try:
            samples = op.sample_inputs("cpu", dt)
            cap = max_samples.get(dt) if isinstance(max_samples, dict) else max_samples
            if cap is not None:
                samples = pick_samples(samples, cap)
            for s in samples:
                res.samples.append((describe_sample(s), check_sample(op, s, lowerer_cls, inplace)))
        except Exception as e:  # noqa: BLE001 - a sample generator that fails on this torch
            res.samples.append((f"<{dt}>", SampleVerdict("error", why=f"sample_inputs: {first_line(e)}")))
    return res
