"""Collectives and point-to-point transfers: what each rank sends and receives."""
from __future__ import annotations

from dataclasses import dataclass

from entangle_py.ir import ops
from entangle_py.ir.graph import Node, Ref
from entangle_py.semantics.lower.core import Collective, lowers, Refused


class CommunicationLowering:
    @lowers(*ops.COLLECTIVES)
    def _collective(self, n: Node):
        sig = ops.COLLECTIVES[n.target]
        a = n.args
        params = tuple(tuple(a[i] or ()) if isinstance(a[i], (list, tuple, type(None))) else a[i] for i in sig.params)
        reduce = str(a[sig.reduce]) if sig.reduce is not None else "sum"
        return Collective(sig.kind, a[0].name, str(a[sig.group]), reduce=reduce, params=params)



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

