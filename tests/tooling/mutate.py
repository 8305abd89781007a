"""Mutants of a distributed bundle, for the mutation harness (``benchmarks/mutation_harness.py``).

``mutants(bundle)`` returns ``Mutant(kind, desc, bundle)`` values: each a deep copy of the bundle
with one change.  Kinds (``KINDS``):

  drop_collective     a collective removed on every rank: its users read its input instead
  dup_collective      a collective applied twice on every rank
  ar_to_ag            all_reduce(x) -> all_gather(x) then the first chunk (rank 0's x), or then
                      the sum of the chunks (``ar_to_ag_sum``: equivalent for a sum)
  ag_to_ar            all_gather(x) -> all_reduce of x zero-padded to the rank's chunk (equivalent)
                      or all_reduce(x) repeated W times (not)
  reduce_op           sum <-> max / avg of all_reduce / reduce_scatter
  group_reversed      a collective on a group listing the same ranks in reversed order
  group_split         a collective on a smaller group (each rank alone, or its half of the ranks)
  swap_ranks          rank graphs 0 and 1 exchanged (rank 0 runs rank 1's program on its inputs)
  swap_inputs         two same-shaped inputs of rank 0 exchanged
  slice_shift         a slice's start/end moved by one on rank 0 (where it stays in bounds)
  scalar              a scalar constant of rank 0 changed (mul/div/add/sub/comparison constants,
                      addmm alpha/beta); ``scalar_one``: a multiply by 1.0 inserted (equivalent)
  swap_operands       the operands of sub / div / mm / bmm exchanged on rank 0 (shapes permitting)
  change_dim          softmax / cat / sum over another dim of the same size on rank 0
  dropout             a tensor of rank 0 multiplied by a fixed 0/1 mask (first column zeroed)

A mutant's recorded shapes are kept as the original's; a mutation that would change a recorded
shape is skipped where this module can tell (the interpreter's shape check catches the rest:
the harness counts those mutants as invalid and excludes them).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass


from entangle_py.ir import graph as G
from entangle_py.ir import ops

KINDS = ("drop_collective", "dup_collective", "ar_to_ag", "ag_to_ar", "reduce_op", "group_reversed",
         "group_split", "swap_ranks", "swap_inputs", "slice_shift", "scalar", "swap_operands",
         "change_dim", "dropout")


@dataclass
class Mutant:
    kind: str
    desc: str
    bundle: G.Bundle


# ----------------------------------------------------------------------------- graph editing

def _copy(b: G.Bundle) -> G.Bundle:
    return copy.deepcopy(b)


def _reindex(g: G.RankGraph) -> None:
    g.__post_init__()


def _sub_ref(v, old: str, new: str):
    if isinstance(v, G.Ref):
        return G.Ref(new) if v.name == old else v
    if isinstance(v, list):
        return [_sub_ref(x, old, new) for x in v]
    if isinstance(v, tuple):
        return tuple(_sub_ref(x, old, new) for x in v)
    return v


def _rewire(g: G.RankGraph, old: str, new: str, skip=()) -> None:
    """Every reader of ``old`` (nodes not in ``skip``, output ports) reads ``new`` instead."""
    for n in g.nodes:
        if n.name in skip:
            continue
        n.args = _sub_ref(n.args, old, new)
        n.kwargs = {k: _sub_ref(v, old, new) for k, v in n.kwargs.items()}
    g.outputs = [G.Port(p.name, new) if p.node == old else p for p in g.outputs]


def _insert_after(g: G.RankGraph, after: str, nodes: list[G.Node]) -> None:
    i = next(i for i, n in enumerate(g.nodes) if n.name == after)
    g.nodes[i + 1:i + 1] = nodes
    _reindex(g)


def _fresh(g: G.RankGraph, stem: str) -> str:
    i = 0
    while g.has(f"mut_{stem}_{i}"):
        i += 1
    return f"mut_{stem}_{i}"


def _remove_unused(g: G.RankGraph) -> None:
    """Drop non-placeholder nodes nothing reads (dead after a rewiring)."""
    while True:
        used = {r for n in g.nodes for r in n.refs()} | {p.node for p in g.outputs}
        dead = [n for n in g.nodes if not n.is_placeholder and n.name not in used]
        if not dead:
            break
        g.nodes = [n for n in g.nodes if n not in dead]
    _reindex(g)


def _op_name(n: G.Node) -> str:
    return ops.op_name(n.target)


def _collectives(g: G.RankGraph) -> list[G.Node]:
    return [n for n in g.nodes if ops.is_collective(n.target)]


def _wait_of(g: G.RankGraph, name: str) -> G.Node | None:
    for n in g.nodes:
        if ops.is_wait(n.target) and n.args and n.args[0] == G.Ref(name):
            return n
    return None


def _result_name(g: G.RankGraph, coll: G.Node) -> str:
    """The node whose value is the collective's result (its wait_tensor, or itself)."""
    w = _wait_of(g, coll.name)
    return w.name if w is not None else coll.name


def tensor_meta(n: G.Node) -> G.TensorMeta | None:
    return n.val if isinstance(n.val, G.TensorMeta) else None


def _same_meta(a: G.Node, b: G.Node) -> bool:
    return tensor_meta(a) is not None and tensor_meta(a) == tensor_meta(b)


def _group_arg_index(n: G.Node) -> int | None:
    """Position of the group name argument of a functional collective."""
    op = _op_name(n)
    return {"all_reduce": 2, "all_gather_into_tensor": 2, "reduce_scatter_tensor": 3, "broadcast": 2,
            "all_to_all_single": 3}.get(op)


def _pick(items: list, k: int) -> list:
    """At most k items spread over the list (deterministic)."""
    if len(items) <= k:
        return list(items)
    step = len(items) / k
    return [items[int(i * step)] for i in range(k)]


def _indexed_collectives(b: G.Bundle) -> list[list[G.Node]]:
    """Collectives matched across ranks by issue order: [[rank0's i-th, rank1's i-th, ...], ...]."""
    per = [_collectives(g) for g in b.ranks]
    n = min(len(p) for p in per)
    return [[per[r][i] for r in range(b.world_size)] for i in range(n)]


def _meta(shape, dtype) -> G.TensorMeta:
    return G.TensorMeta(tuple(shape), dtype)


# ----------------------------------------------------------------------------- collective kinds

def _drop_collective(b: G.Bundle, k: int):
    for row in _pick(_indexed_collectives(b), k):
        m = _copy(b)
        names = []
        ok = True
        for r, g in enumerate(m.ranks):
            c = _collectives(g)[_index_in(b, row, r)]
            src = c.args[0]
            res = g.node(_result_name(g, c))
            if not isinstance(src, G.Ref) or not _same_meta(g.node(src.name), res):
                ok = False
                break
            _rewire(g, res.name, src.name)
            _remove_unused(g)
            names.append(c.name)
        if ok:
            yield Mutant("drop_collective", f"drop {_op_name(row[0])} {names[0]!r} on every rank", m)


def _index_in(b: G.Bundle, row: list[G.Node], r: int) -> int:
    return [n.name for n in _collectives(b.ranks[r])].index(row[r].name)


def _dup_collective(b: G.Bundle, k: int):
    for row in _pick(_indexed_collectives(b), k):
        m = _copy(b)
        ok = True
        for r, g in enumerate(m.ranks):
            c = _collectives(g)[_index_in(b, row, r)]
            res = g.node(_result_name(g, c))
            src = c.args[0]
            if not isinstance(src, G.Ref) or not _same_meta(g.node(src.name), res):
                ok = False
                break
            c2 = G.Node(_fresh(g, "coll"), c.target, (G.Ref(res.name),) + tuple(c.args[1:]), dict(c.kwargs),
                        res.val, c.source, c.module)
            nodes = [c2]
            last = c2.name
            if res.name != c.name:
                w2 = G.Node(_fresh(g, "wait") + "_w", res.target, (G.Ref(c2.name),), {}, res.val, res.source, res.module)
                nodes.append(w2)
                last = w2.name
            _rewire(g, res.name, last)
            c2.args = (G.Ref(res.name),) + tuple(c.args[1:])
            _insert_after(g, res.name, nodes)
        if ok:
            yield Mutant("dup_collective", f"apply {_op_name(row[0])} {row[0].name!r} twice on every rank", m)


def _ar_to_ag(b: G.Bundle, k: int):
    rows = [row for row in _indexed_collectives(b) if _op_name(row[0]) == "all_reduce"]
    for row in _pick(rows, k):
        for variant in ("first", "sum"):
            m = _copy(b)
            ok = True
            for r, g in enumerate(m.ranks):
                c = _collectives(g)[_index_in(b, row, r)]
                x = c.args[0]
                meta = tensor_meta(c)
                if not isinstance(x, G.Ref) or meta is None or not meta.shape or len(c.args) < 3:
                    ok = False
                    break
                if variant == "sum" and c.args[1] != "sum":
                    ok = False
                    break
                group = c.args[2]
                members = g.groups.get(group)
                if members is None:
                    ok = False
                    break
                W = len(members)
                d0 = meta.shape[0]
                gathered = _meta((W * d0,) + tuple(meta.shape[1:]), meta.dtype)
                c.target = "_c10d_functional.all_gather_into_tensor.default"
                c.args = (x, W, group)
                c.val = gathered
                res = g.node(_result_name(g, c))
                res.val = gathered
                if variant == "first":
                    post = [G.Node(_fresh(g, "slice"), "aten.slice.Tensor", (G.Ref(res.name), 0, 0, d0), {}, meta)]
                else:
                    v = _fresh(g, "view")
                    post = [G.Node(v, "aten.view.default", (G.Ref(res.name), [W, d0] + list(meta.shape[1:])), {},
                                   _meta((W, d0) + tuple(meta.shape[1:]), meta.dtype)),
                            G.Node(_fresh(g, "sum"), "aten.sum.dim_IntList", (G.Ref(v), [0]), {}, meta)]
                _rewire(g, res.name, post[-1].name)
                _insert_after(g, res.name, post)
            if ok:
                yield Mutant("ar_to_ag" if variant == "first" else "ar_to_ag_sum",
                             f"all_reduce {row[0].name!r} -> all_gather then "
                             f"{'the first chunk' if variant == 'first' else 'the sum of the chunks'}", m)


def _ag_to_ar(b: G.Bundle, k: int):
    rows = [row for row in _indexed_collectives(b) if _op_name(row[0]) == "all_gather_into_tensor"]
    for row in _pick(rows, k):
        for variant in ("pad", "repeat"):
            m = _copy(b)
            ok = True
            for r, g in enumerate(m.ranks):
                c = _collectives(g)[_index_in(b, row, r)]
                x = c.args[0]
                out = tensor_meta(c)
                if not isinstance(x, G.Ref) or out is None or tensor_meta(g.node(x.name)) is None:
                    ok = False
                    break
                xin = tensor_meta(g.node(x.name))
                group = c.args[2]
                members = g.groups.get(group)
                if members is None or r not in members:
                    ok = False
                    break
                W = len(members)
                d0 = xin.shape[0]
                if not isinstance(d0, int):
                    ok = False
                    break
                pre = []
                src = x
                if variant == "pad":
                    pos = members.index(r)
                    pad = [0, 0] * (len(xin.shape) - 1) + [pos * d0, (W - 1 - pos) * d0]
                    p = G.Node(_fresh(g, "pad"), "aten.constant_pad_nd.default", (x, pad, 0.0), {}, out)
                    pre = [p]
                    src = G.Ref(p.name)
                    red_meta = out
                else:
                    red_meta = xin
                c.target = "_c10d_functional.all_reduce.default"
                c.args = (src, "sum", group)
                c.val = red_meta
                res = g.node(_result_name(g, c))
                res.val = red_meta
                post = []
                if variant == "repeat":
                    post = [G.Node(_fresh(g, "cat"), "aten.cat.default", ([G.Ref(res.name)] * W,), {}, out)]
                    _rewire(g, res.name, post[-1].name)
                    _insert_after(g, res.name, post)
                if pre:
                    i = next(i for i, n in enumerate(g.nodes) if n.name == c.name)
                    g.nodes[i:i] = pre
                    _reindex(g)
            if ok:
                yield Mutant("ag_to_ar" if variant == "repeat" else "ag_to_ar_pad",
                             f"all_gather {row[0].name!r} -> all_reduce of "
                             f"{'x repeated W times' if variant == 'repeat' else 'x zero-padded to its chunk'}", m)


def _reduce_op(b: G.Bundle, k: int):
    rows = [row for row in _indexed_collectives(b) if _op_name(row[0]) in ("all_reduce", "reduce_scatter_tensor")]
    for row in _pick(rows, k):
        old = row[0].args[1]
        for new in [o for o in ("sum", "max", "avg") if o != old]:
            m = _copy(b)
            for r, g in enumerate(m.ranks):
                c = _collectives(g)[_index_in(b, row, r)]
                c.args = (c.args[0], new) + tuple(c.args[2:])
            yield Mutant("reduce_op", f"{_op_name(row[0])} {row[0].name!r}: {old} -> {new}", m)


def _group_reversed(b: G.Bundle, k: int):
    for row in _pick(_indexed_collectives(b), k):
        m = _copy(b)
        ok = True
        for r, g in enumerate(m.ranks):
            c = _collectives(g)[_index_in(b, row, r)]
            gi = _group_arg_index(c)
            if gi is None or gi >= len(c.args) or c.args[gi] not in g.groups or len(g.groups[c.args[gi]]) < 2:
                ok = False
                break
            name = "mut_rev_" + str(c.args[gi])
            g.groups[name] = list(reversed(g.groups[c.args[gi]]))
            c.args = tuple(name if i == gi else a for i, a in enumerate(c.args))
        if ok:
            yield Mutant("group_reversed", f"{_op_name(row[0])} {row[0].name!r} on its group in reversed rank order", m)


def _group_split(b: G.Bundle, k: int):
    for row in _pick(_indexed_collectives(b), k):
        if _op_name(row[0]) not in ("all_reduce", "broadcast"):
            continue     # the group size is in the other collectives' shapes
        m = _copy(b)
        ok = True
        for r, g in enumerate(m.ranks):
            c = _collectives(g)[_index_in(b, row, r)]
            gi = _group_arg_index(c)
            members = g.groups.get(c.args[gi]) if gi is not None and gi < len(c.args) else None
            if not members or len(members) < 2 or r not in members:
                ok = False
                break
            half = len(members) // 2
            pos = members.index(r)
            mine = members[:half] if pos < half else members[half:]
            name = f"mut_split_{c.args[gi]}_{'lo' if pos < half else 'hi'}"
            g.groups[name] = list(mine)
            c.args = tuple(name if i == gi else a for i, a in enumerate(c.args))
            if _op_name(c) == "broadcast" and c.args[1] >= len(mine):
                c.args = (c.args[0], 0) + tuple(c.args[2:])
        if ok:
            yield Mutant("group_split", f"{_op_name(row[0])} {row[0].name!r} on a half-size group", m)


# ----------------------------------------------------------------------------- rank / input kinds

def _swap_ranks(b: G.Bundle, k: int):
    if b.world_size < 2:
        return
    e0, e1 = (dict(G._encode_rank(g), rank=None) for g in b.ranks[:2])
    if e0 == e1:
        return      # SPMD ranks with identical programs: the swap changes nothing
    m = _copy(b)
    m.ranks[0], m.ranks[1] = m.ranks[1], m.ranks[0]
    m.ranks[0].rank, m.ranks[1].rank = 0, 1
    yield Mutant("swap_ranks", "rank graphs 0 and 1 exchanged", m)


def _swap_inputs(b: G.Bundle, k: int):
    g0 = b.ranks[0]
    ins = [(p, g0.node(p.node)) for p in g0.inputs if tensor_meta(g0.node(p.node)) is not None]
    pairs = []
    for i in range(len(ins)):
        for j in range(i + 1, len(ins)):
            if ins[i][1].val == ins[j][1].val:
                pairs.append((ins[i][0].name, ins[j][0].name))
    for a, c in _pick(pairs, k):
        m = _copy(b)
        g = m.ranks[0]
        na, nc = g.input_node(a).name, g.input_node(c).name
        g.inputs = [G.Port(p.name, nc if p.name == a else na if p.name == c else p.node) for p in g.inputs]
        yield Mutant("swap_inputs", f"rank 0 inputs {a!r} and {c!r} exchanged", m)


# ----------------------------------------------------------------------------- local kinds (rank 0)

def _local_sites(b: G.Bundle, pred) -> list[str]:
    return [n.name for n in b.ranks[0].nodes if not n.is_placeholder and pred(n)]


def _slice_shift(b: G.Bundle, k: int):
    def ok(n):
        return n.target == "aten.slice.Tensor" and len(n.args) >= 4 and all(isinstance(a, int) for a in n.args[1:4])
    for name in _pick(_local_sites(b, ok), k):
        g = b.ranks[0]
        n = g.node(name)
        src = tensor_meta(g.node(n.args[0].name)) if isinstance(n.args[0], G.Ref) else None
        if src is None:
            continue
        d, start, end = n.args[1], n.args[2], n.args[3]
        size = src.shape[d]
        if not isinstance(size, int):
            continue
        end = min(end, size)
        for delta in (1, -1):
            if 0 <= start + delta and end + delta <= size:
                m = _copy(b)
                mn = m.ranks[0].node(name)
                mn.args = (mn.args[0], d, start + delta, end + delta) + tuple(mn.args[4:])
                yield Mutant("slice_shift", f"rank 0 slice {name!r}: [{start}:{end}] -> [{start + delta}:{end + delta}]", m)
                break


_SCALAR_OPS = ("aten.mul.Tensor", "aten.mul.Scalar", "aten.div.Tensor", "aten.div.Scalar", "aten.add.Tensor",
               "aten.sub.Tensor", "aten.add.Scalar", "aten.sub.Scalar", "aten.lt.Scalar", "aten.ge.Scalar",
               "aten.gt.Scalar", "aten.le.Scalar", "aten.masked_fill.Scalar", "aten.pow.Tensor_Scalar",
               "aten.rsub.Scalar")


def _changed(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v + 1
    if isinstance(v, float):
        return v * 2 if v != 0 else 1.0
    return None


def _scalar(b: G.Bundle, k: int):
    def site(n):
        if n.target in _SCALAR_OPS:
            return any(_changed(a) is not None for a in n.args[1:])
        return n.target in ("aten.addmm.default", "aten.baddbmm.default")
    mms = ("aten.addmm.default", "aten.baddbmm.default")
    sites = _local_sites(b, site)
    # constants of elementwise ops first, then one addmm / baddbmm (alpha and beta)
    for name in _pick([x for x in sites if b.ranks[0].node(x).target not in mms], k) + \
            _pick([x for x in sites if b.ranks[0].node(x).target in mms], 1):
        n = b.ranks[0].node(name)
        if n.target in mms:
            for kw in ("alpha", "beta"):
                m = _copy(b)
                mn = m.ranks[0].node(name)
                old = mn.kwargs.get(kw, 1)
                mn.kwargs = {**mn.kwargs, kw: 2 * old if old else 1}
                yield Mutant("scalar", f"rank 0 {n.target.split('.')[1]} {name!r}: {kw} {old} -> {mn.kwargs[kw]}", m)
            continue
        i = next(i for i, a in enumerate(n.args) if i >= 1 and _changed(a) is not None)
        m = _copy(b)
        mn = m.ranks[0].node(name)
        new = _changed(n.args[i])
        mn.args = tuple(new if j == i else a for j, a in enumerate(mn.args))
        yield Mutant("scalar", f"rank 0 {n.target} {name!r}: constant {n.args[i]!r} -> {new!r}", m)
    # an equivalent one: multiply a float tensor by 1.0
    for name in _pick(_local_sites(b, lambda n: tensor_meta(n) is not None and tensor_meta(n).dtype.startswith("float")), 1):
        m = _copy(b)
        g = m.ranks[0]
        n = g.node(name)
        new = G.Node(_fresh(g, "one"), "aten.mul.Tensor", (G.Ref(name), 1.0), {}, n.val)
        _rewire(g, name, new.name)
        _insert_after(g, name, [new])
        yield Mutant("scalar_one", f"rank 0 {name!r} multiplied by 1.0", m)


def _swap_operands(b: G.Bundle, k: int):
    targets = ("aten.sub.Tensor", "aten.div.Tensor", "aten.mm.default", "aten.bmm.default", "aten.rsub.Tensor")
    g = b.ranks[0]

    def site(n):
        if n.target not in targets or len(n.args) < 2:
            return False
        a, c = n.args[0], n.args[1]
        if not (isinstance(a, G.Ref) and isinstance(c, G.Ref)):
            return False
        ta, tc = tensor_meta(g.node(a.name)), tensor_meta(g.node(c.name))
        if ta is None or tc is None:
            return False
        if "mm" in n.target:
            # (a b) @ (b c) swapped is (b c) @ (a b): needs c == a, and the result (b, b) == (a, c)
            return ta.shape == tc.shape and ta.shape[-1] == ta.shape[-2]
        return ta.shape == tc.shape == tensor_meta(n).shape
    for name in _pick(_local_sites(b, site), k):
        m = _copy(b)
        mn = m.ranks[0].node(name)
        mn.args = (mn.args[1], mn.args[0]) + tuple(mn.args[2:])
        yield Mutant("swap_operands", f"rank 0 {mn.target} {name!r}: operands exchanged", m)


def _change_dim(b: G.Bundle, k: int):
    g = b.ranks[0]
    sites = []
    for n in g.nodes:
        t = tensor_meta(n)
        if n.is_placeholder or t is None:
            continue
        src = tensor_meta(g.node(n.args[0].name)) if n.args and isinstance(n.args[0], G.Ref) else None
        if n.target in ("aten._softmax.default", "aten._log_softmax.default", "aten.softmax.int") and src:
            nd = len(src.shape)
            d = n.args[1] % nd if nd else 0
            alts = [x for x in range(nd) if x != d and src.shape[x] != 1]
            if alts:
                sites.append((n.name, 1, alts[-1]))
        elif n.target == "aten.sum.dim_IntList" and src and isinstance(n.args[1], list) and len(n.args[1]) == 1:
            nd = len(src.shape)
            d = n.args[1][0] % nd
            alts = [x for x in range(nd) if x != d and src.shape[x] == src.shape[d]]
            if alts:
                sites.append((n.name, 1, [alts[0]]))
        elif n.target == "aten.cat.default" and isinstance(n.args[0], list):
            parts = [tensor_meta(g.node(a.name)) for a in n.args[0] if isinstance(a, G.Ref)]
            if len(parts) != len(n.args[0]) or any(p is None for p in parts):
                continue
            nd = len(t.shape)
            d = (n.args[1] if len(n.args) > 1 else n.kwargs.get("dim", 0)) % nd
            for x in range(nd):
                if x == d:
                    continue
                # cat along x gives the same shape only if the parts' shapes permit
                new = list(parts[0].shape)
                new[x] = sum(p.shape[x] for p in parts)
                same = all(all(p.shape[i] == parts[0].shape[i] for i in range(nd) if i != x) for p in parts)
                if same and tuple(new) == tuple(t.shape):
                    sites.append((n.name, 1, x))
                    break
    for name, i, new in _pick(sites, k):
        m = _copy(b)
        mn = m.ranks[0].node(name)
        args = list(mn.args)
        old = args[i] if i < len(args) else None
        if i < len(args):
            args[i] = new
        else:
            args.append(new)
        mn.args = tuple(args)
        yield Mutant("change_dim", f"rank 0 {mn.target} {name!r}: dim {old} -> {new}", m)


def _dropout(b: G.Bundle, k: int):
    g = b.ranks[0]

    def site(n):
        t = tensor_meta(n)
        return (t is not None and t.dtype.startswith("float") and len(t.shape) >= 1
                and all(isinstance(s, int) for s in t.shape) and t.shape[-1] >= 2 and n.namespace == "aten")
    for name in _pick(_local_sites(b, site), k):
        m = _copy(b)
        g = m.ranks[0]
        n = g.node(name)
        t = tensor_meta(n)
        ones, zeros, mask, out = (_fresh(g, s) for s in ("ones", "zeros", "mask", "drop"))
        zshape = list(t.shape[:-1]) + [1]
        dt = G.TorchConst("dtype", t.dtype)
        dev = G.TorchConst("device", "cpu")
        nodes = [
            G.Node(ones, "aten.full.default", (list(t.shape), 1.0), {"dtype": dt, "device": dev}, t),
            G.Node(zeros, "aten.full.default", (zshape, 0.0), {"dtype": dt, "device": dev}, _meta(zshape, t.dtype)),
            G.Node(mask, "aten.slice_scatter.default", (G.Ref(ones), G.Ref(zeros), len(t.shape) - 1, 0, 1), {}, t),
            G.Node(out, "aten.mul.Tensor", (G.Ref(name), G.Ref(mask)), {}, t),
        ]
        _rewire(g, name, out)
        _insert_after(g, name, nodes)
        yield Mutant("dropout", f"rank 0 {name!r} multiplied by a fixed mask (first column zeroed)", m)


_GENERATORS = {
    "drop_collective": _drop_collective,
    "dup_collective": _dup_collective,
    "ar_to_ag": _ar_to_ag,
    "ag_to_ar": _ag_to_ar,
    "reduce_op": _reduce_op,
    "group_reversed": _group_reversed,
    "group_split": _group_split,
    "swap_ranks": _swap_ranks,
    "swap_inputs": _swap_inputs,
    "slice_shift": _slice_shift,
    "scalar": _scalar,
    "swap_operands": _swap_operands,
    "change_dim": _change_dim,
    "dropout": _dropout,
}


def mutants(bundle: G.Bundle, kinds=KINDS, per_kind: int = 2) -> list[Mutant]:
    """Mutants of ``bundle`` (at most ``per_kind`` sites per kind; some kinds give several
    variants per site).  The bundle itself is not modified."""
    out = []
    for kind in kinds:
        for mu in _GENERATORS[kind](bundle, per_kind):
            for g in mu.bundle.ranks:
                _reindex(g)
            out.append(mu)
    return out
