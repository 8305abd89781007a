"""Collectives simulated in one process: a rank's request at a communication op, the check that
the members of a communicator issued matching collectives, and their results (all-reduce,
all-gather, reduce-scatter, broadcast, all-to-all and their coalesced forms), in group-rank order."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from entangle_py.lazy import torch
from entangle_py.ir import graph as G
from entangle_py.oracle.graph_values import CollectiveMismatch, UnsupportedOp, resolve_op

# ----------------------------------------------------------------------------- collectives

_REDUCE_OPS = ("sum", "avg", "max", "min", "product")


@dataclass
class Request:
    """A rank stopped at a communication op."""
    rank: int
    node: G.Node
    kind: str                     # all_reduce, all_gather, reduce_scatter, all_to_all, broadcast,
                                  # shard_dim_alltoall, *_coalesced, recv, batch_recv
    members: tuple = ()           # global ranks of the group, in group-rank order
    tensors: list = field(default_factory=list)
    params: dict = field(default_factory=dict)
    comm: tuple = ()              # the communicator: (group name, members)
    value: Any = None             # the result, once every member issued its matching collective
    done: bool = False

    def describe(self) -> str:
        shapes = ", ".join(str(list(t.shape)) for t in self.tensors if isinstance(t, torch.Tensor))
        extra = ", ".join(f"{k}={v}" for k, v in self.params.items() if k not in ("recvs",))
        return f"{self.node.target} on ranks {list(self.members)} [{shapes}]" + (f" {extra}" if extra else "")


def load_collective_ops() -> None:
    """Python-registered collective ops (legacy c10d_functional, _dtensor) exist after these imports."""
    for mod in ("torch.distributed._functional_collectives", "torch.distributed.tensor._collective_utils"):
        try:
            __import__(mod)
        except Exception:   # pragma: no cover - a torch without distributed
            pass


def positional_args(target: str, args: list, kwargs: dict) -> list:
    """Arguments in schema order (kwargs placed by name, defaults filled in)."""
    try:
        fn = resolve_op(target)
    except UnsupportedOp:
        load_collective_ops()
        try:
            fn = resolve_op(target)
        except UnsupportedOp:
            return list(args) + list(kwargs.values())
    out = list(args)
    for a in fn._schema.arguments[len(args):]:
        if a.name in kwargs:
            out.append(kwargs[a.name])
        elif a.has_default_value():
            out.append(a.default_value)
        else:
            break
    return out


def _reduce(tensors: list, op: str, where: str):
    if op not in _REDUCE_OPS:
        raise UnsupportedOp(f"{where}: reduce op {op!r} is not supported ({', '.join(_REDUCE_OPS)})")
    if op == "sum" or op == "avg":
        out = functools.reduce(torch.add, tensors)
        return out / len(tensors) if op == "avg" else out
    if op == "product":
        return functools.reduce(torch.mul, tensors)
    return functools.reduce(torch.maximum if op == "max" else torch.minimum, tensors)


def _split_sizes(sizes, total, n, where):
    if sizes is None or len(sizes) == 0:
        if total % n:
            raise CollectiveMismatch(f"{where}: dim 0 of size {total} does not split evenly over {n} ranks")
        return [total // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or sum(sizes) != total:
        raise CollectiveMismatch(f"{where}: split sizes {sizes} do not tile dim 0 of size {total} over {n} ranks")
    return sizes


def collective_results(reqs: list[Request]) -> list:
    """Results of one collective, in group-rank order; ``reqs`` agree on kind and members."""
    first = reqs[0]
    n = len(reqs)
    kind = first.kind
    where = f"{first.node.target} (rank {first.rank} node {first.node.name!r})"
    if kind in ("all_reduce", "all_reduce_coalesced"):
        nt = len(first.tensors)
        outs = [_reduce([r.tensors[i] for r in reqs], first.params["reduce_op"], where) for i in range(nt)]
        return [[o.clone() for o in outs] if kind.endswith("coalesced") else outs[0].clone() for _ in reqs]
    if kind in ("all_gather", "all_gather_coalesced"):
        outs = [torch.cat([r.tensors[i] for r in reqs], dim=0) for i in range(len(first.tensors))]
        return [[o.clone() for o in outs] if kind.endswith("coalesced") else outs[0].clone() for _ in reqs]
    if kind in ("reduce_scatter", "reduce_scatter_coalesced"):
        per_tensor = []
        for i in range(len(first.tensors)):
            full = _reduce([r.tensors[i] for r in reqs], first.params["reduce_op"], where)
            if full.shape[0] % n:
                raise CollectiveMismatch(f"{where}: dim 0 of size {full.shape[0]} does not split evenly over {n} ranks")
            per_tensor.append([c.clone() for c in torch.chunk(full, n, dim=0)] if full.shape[0] else [full] * n)
        return [[pt[j] for pt in per_tensor] if kind.endswith("coalesced") else per_tensor[0][j] for j in range(n)]
    if kind == "broadcast":
        src = first.params["src"]
        if not 0 <= src < n:
            raise CollectiveMismatch(f"{where}: broadcast source {src} is not a rank of the {n}-rank group "
                                     f"(src is the rank within the group)")
        return [reqs[src].tensors[0].clone() for _ in reqs]
    if kind == "all_to_all":
        chunks = []
        for r in reqs:
            t = r.tensors[0]
            sizes = _split_sizes(r.params.get("input_split_sizes"), t.shape[0], n,
                                 f"{r.node.target} (rank {r.rank} node {r.node.name!r}) input")
            chunks.append(list(torch.split(t, sizes, dim=0)))
        outs = []
        for j, r in enumerate(reqs):
            out = torch.cat([chunks[i][j] for i in range(n)], dim=0)
            want = r.params.get("output_split_sizes")
            got = [chunks[i][j].shape[0] for i in range(n)]
            if want and [int(w) for w in want] != got:
                raise CollectiveMismatch(f"{r.node.target} (rank {r.rank} node {r.node.name!r}): output split sizes "
                                         f"{[int(w) for w in want]} but the peers send {got}")
            outs.append(out)
        return outs
    if kind == "shard_dim_alltoall":
        gd, sd = first.params["gather_dim"], first.params["shard_dim"]
        full = torch.cat([r.tensors[0] for r in reqs], dim=gd)
        if full.shape[sd] % n:
            raise CollectiveMismatch(f"{where}: dim {sd} of size {full.shape[sd]} does not split evenly over {n} ranks")
        return [c.contiguous() for c in torch.chunk(full, n, dim=sd)]
    raise UnsupportedOp(f"{where}: collective kind {kind!r}")


def check_match(reqs: list[Request]) -> None:
    a = reqs[0]
    for b in reqs[1:]:
        problem = None
        if b.kind != a.kind:
            problem = "different collectives"
        elif b.members != a.members:
            problem = "different group rank order"
        elif {k: v for k, v in a.params.items() if k not in ("input_split_sizes", "output_split_sizes")} != \
                {k: v for k, v in b.params.items() if k not in ("input_split_sizes", "output_split_sizes")}:
            problem = "different parameters"
        elif len(a.tensors) != len(b.tensors):
            problem = "different numbers of tensors"
        elif any(x.dtype != y.dtype for x, y in zip(a.tensors, b.tensors)):
            problem = "different dtypes"
        elif a.kind not in ("all_to_all", "shard_dim_alltoall", "all_gather", "all_gather_coalesced") and \
                any(x.shape != y.shape for x, y in zip(a.tensors, b.tensors)):
            problem = "different shapes"
        elif a.kind in ("all_gather", "all_gather_coalesced") and \
                any(x.shape[1:] != y.shape[1:] for x, y in zip(a.tensors, b.tensors)):
            problem = "different shapes"
        if problem:
            raise CollectiveMismatch(
                f"collective mismatch ({problem}): rank {a.rank} is at node {a.node.name!r} ({a.describe()}) "
                f"but rank {b.rank} is at node {b.node.name!r} ({b.describe()})")
