"""What a rank graph computes around its point-to-point receives: a receive whose value torch's
tracing drops is refused; a batched receive's other aliases (a view taken before it, the base of
a view received into) are given the received value as eager torch does, or refused
(``CaptureError``) where that cannot be said."""
from __future__ import annotations

import dataclasses

from entangle_py.frontend.capture_errors import CaptureError
from entangle_py.ir import graph, ops
from entangle_py.frontend.functionalize import returns_a_view


def repair_received_aliases(g: graph.RankGraph) -> graph.RankGraph:
    """The graph of what the program computes around its point-to-point receives, or CaptureError.

    ``dist.irecv(buf, src).wait()`` traces (torch 2.13) to an ``irecv`` whose result only
    ``wait_tensor`` reads, while the program's later reads of ``buf`` read the buffer as it was
    before: the received value is silently dropped, and such a receive is refused.
    ``dist.batch_isend_irecv`` keeps it for the tensor received into (functionalization gives its
    later reads the received tensor), but not for the buffer's other aliases: a view of it taken
    before the receive, or the base of a view received into, still holds the old contents in the
    graph while the program sees what arrived.  Those reads are repaired as eager torch runs them
    (``_write_back``): the received tensor is scattered back into the base through the views
    received into, and every other alias is re-taken from that.  Reads before the receive (a
    copy taken first) are the program's own."""
    users = g.users()
    returned = {p.node for p in g.outputs}

    def read(name):      # returned, or read by something other than a chain of wait_tensor
        return name in returned or any(
            read(u) if ops.is_wait(g.node(u).target) else True
            for u in users.get(name, ()))

    i = 0
    while i < len(g.nodes):     # by position: a write-back inserts nodes after the receive
        n, i = g.nodes[i], i + 1
        if n.target == ops.IRECV and n.args:
            buf = n.args[0]
            lost = _stale_readers(g, buf, n) or (not read(n.name) and isinstance(buf, graph.Ref)
                                                 and any(u != n.name for u in users.get(buf.name, ())))
            if lost:
                where = f" at {n.source}" if n.source else ""
                raise CaptureError(
                    f"rank {g.rank}: the tensor received by {n.name} ({n.target}){where} is never read: torch's "
                    f"tracing of dist.irecv drops the received value (later reads of the buffer see what it "
                    f"held before), so the graph would not be the program; receive with "
                    f"dist.batch_isend_irecv([dist.P2POp(dist.irecv, buf, src)]) or use the tensor "
                    f"funcol.irecv_inplace returns")
        elif n.target == ops.BATCH_P2P and len(n.args) > 3 \
                and isinstance(n.args[0], (list, tuple)) and isinstance(n.args[3], (list, tuple)):
            stale = [j for j, (k, buf) in enumerate(zip(n.args[0], n.args[3]))
                     if k == "irecv" and _stale_readers(g, buf, n)]
            roots = [_alias_root(g, buf) for k, buf in zip(n.args[0], n.args[3])
                     if k == "irecv" and isinstance(buf, graph.Ref)]
            if stale and len(set(roots)) < len(roots):
                _refuse_stale(g, n, "two of its receives write one buffer")
            for j in stale:
                g = _write_back(g, n, j)
            users, returned = g.users(), {p.node for p in g.outputs}
    return g


def _is_view(g: graph.RankGraph, m: graph.Node) -> bool:
    """Whether m's value aliases its first tensor argument."""
    if m.target == ops.GETITEM:
        src = m.args[0] if m.args else None
        return isinstance(src, graph.Ref) and returns_a_view(g.node(src.name).target)
    return returns_a_view(m.target)


def _view_base(m: graph.Node):
    return next((a for a in m.args if isinstance(a, graph.Ref)), None)


def _alias_root(g: graph.RankGraph, buf: graph.Ref) -> str:
    root = g.node(buf.name)
    while _is_view(g, root) and _view_base(root) is not None:
        root = g.node(_view_base(root).name)
    return root.name


def _aliases(g: graph.RankGraph, root: str, users: dict, skip: str) -> set:
    """root and every view of it, down any chain of views (not through ``skip``)."""
    out, todo = set(), [root]
    while todo:
        name = todo.pop()
        if name not in out:
            out.add(name)
            todo += [u for u in users.get(name, ()) if u != skip and _is_view(g, g.node(u))]
    return out


def _stale_readers(g: graph.RankGraph, buf, n: graph.Node) -> dict:
    """{alias: its readers after the receive n (\"<output>\" for a returned alias)} of the buffer's
    aliases that the graph gives the old contents (the received tensor's own reads are of n's result)."""
    if not isinstance(buf, graph.Ref):
        return {}
    users = g.users()
    order = {m.name: i for i, m in enumerate(g.nodes)}
    returned = {p.node for p in g.outputs}
    out = {}
    for a in _aliases(g, _alias_root(g, buf), users, n.name):
        later = [u for u in users.get(a, ()) if u != n.name and order[u] > order[n.name]]
        if a in returned:
            later.append("<output>")
        if later:
            out[a] = later
    return out


def _refuse_stale(g: graph.RankGraph, n: graph.Node, why: str):
    where = f" at {n.source}" if n.source else ""
    raise CaptureError(
        f"rank {g.rank}: the graph reads the buffer received into by {n.name} ({n.target}){where} after "
        f"the receive through another alias (a view of it taken before the receive, or the base of a "
        f"view received into), and {why}: torch's tracing gives that alias what the buffer held before, "
        f"so the graph would not be the program; receive into the tensor you read, and take views of it "
        f"after the receive")


def _write_back(g: graph.RankGraph, n: graph.Node, j: int) -> graph.RankGraph:
    """The graph with the j-th receive of the batch n written back into its buffer's aliases: the
    received tensor scattered into the base through the views received into (``ops.VIEW_SCATTER``),
    every alias read after the receive re-taken from that base, and those reads (and outputs)
    moved to it.  Refused (CaptureError) for a view without a scatter, or a read of an alias
    between the receive and its received tensor."""
    buf = n.args[3][j]
    users = g.users()
    order = {m.name: i for i, m in enumerate(g.nodes)}
    stale = _stale_readers(g, buf, n)
    names = {m.name for m in g.nodes}
    new_nodes: list[graph.Node] = []

    def add(like: graph.Node, target, args, kwargs, val) -> graph.Ref:
        name, k = f"{like.name}_received", 1
        while name in names:
            name, k = f"{like.name}_received_{k}", k + 1
        names.add(name)
        new_nodes.append(graph.Node(name, target, tuple(args), dict(kwargs), val, n.source, like.module))
        return graph.Ref(name)

    # the received tensor: n's j-th result, through the waits that read it
    got = next((u for u in users.get(n.name, ()) if g.node(u).target == ops.GETITEM and g.node(u).args[1:2] == (j,)),
               None)
    received = graph.Ref(got) if got else add(g.node(buf.name), ops.GETITEM, (graph.Ref(n.name), j), {},
                                              g.node(buf.name).val)
    while True:
        nxt = [u for u in users.get(received.name, ()) if ops.is_wait(g.node(u).target)]
        if not nxt:
            break
        received = graph.Ref(nxt[0])
    at = order.get(received.name, order[n.name])
    if any(u != "<output>" and order[u] <= at for readers in stale.values() for u in readers):
        _refuse_stale(g, n, "an alias is read before the received tensor is")
    # scatter it back up the chain of views to the base
    value, m = received, g.node(buf.name)
    while _is_view(g, m) and _view_base(m) is not None:
        if m.target not in ops.VIEW_SCATTER:
            _refuse_stale(g, n, f"the view received into ({m.target}) has no scatter to write it back")
        base = _view_base(m)
        if ops.VIEW_SCATTER[m.target] is not None:
            value = add(m, ops.VIEW_SCATTER[m.target], (base, value) + tuple(m.args[1:]), m.kwargs,
                        g.node(base.name).val)
        m = g.node(base.name)
    moved = {m.name: value}

    def retaken(a: str) -> graph.Ref:     # alias a re-taken from the base holding the received tensor
        if a not in moved:
            v = g.node(a)
            base = _view_base(v)
            nb = retaken(base.name)
            args = tuple(nb if x == base else x for x in v.args)
            moved[a] = add(v, v.target, args, v.kwargs, v.val)
        return moved[a]

    for a in sorted(stale, key=order.get):
        retaken(a)

    def swap(x):
        if isinstance(x, graph.Ref):
            return moved.get(x.name, x)
        if isinstance(x, (list, tuple)):
            return type(x)(swap(y) for y in x)
        return x

    nodes = []
    for i, m in enumerate(g.nodes):
        if i > order[n.name] and m.name not in moved.values():
            m = dataclasses.replace(m, args=swap(m.args), kwargs={k: swap(v) for k, v in m.kwargs.items()})
        nodes.append(m)
        if i == at:
            nodes += new_nodes
    moved_names = {k: v.name for k, v in moved.items()}
    outputs = [graph.Port(p.name, moved_names.get(p.node, p.node)) if p.node in stale else p for p in g.outputs]
    return dataclasses.replace(g, nodes=nodes, outputs=outputs)
