"""The distributed program as facts: every G_d tensor a leaf ``(Gd "r<rank>.<node>")``, unioned
with its lowered definition; collectives and point-to-point transfers across ranks become clean
terms over their peers' tensors.

Collectives are paired per communicator (process group: its name and members) in the order each
rank issues them, as c10d does; sends and receives by communicator, peer, tag and order.  The
facts go into ``window.DistFacts``: the checker's exploration window decides when each enters
the e-graph.
"""
from __future__ import annotations

from entangle_py.check import spec as S
from entangle_py.check.inputs import declared_constant
from entangle_py.check.names import Names, gd_leaf, meta_text, source, split_key, unsupported_key
from entangle_py.check.result import CheckInputError
from entangle_py.check.sizes import Sizes
from entangle_py.check.window import DistFacts, data_movement, defined_term, leaves_in
from entangle_py.ir import graph as G
from entangle_py.ir import ops
from entangle_py.semantics import lower as L
from entangle_py.semantics.sexpr import head
from entangle_py.semantics.terms import given_input



# definitions that only reshape their source (a peer may be a view of a computed tensor)
_VIEWS = frozenset({"view", "transpose"})



class DistProgram:
    """Lower every rank graph of ``dist`` (``run()``): afterwards ``dvar[r][node]`` is the
    expression of each G_d tensor, ``dfacts`` their definitions, ``collectives`` the matched
    collectives (members, kind, rank -> node) and ``no_semantics`` what could not be lowered
    (op -> [(rank, node)])."""

    def __init__(self, dist: G.Bundle, dist_names: list[Names], spec: S.Spec, sizes: Sizes, replicas=()):
        """``replicas``: (leaf, leaf) pairs of random draws the evidence shows identical
        (check/random.py): the only facts relating two draws."""
        self.dist, self.dist_names, self.spec, self.sizes = dist, dist_names, spec, sizes
        self.replicas = replicas
        self.dvar: list[dict[str, str]] = [dict() for _ in dist.ranks]
        self.dfacts = DistFacts()
        self.collectives: list = []
        self.no_semantics: dict[str, list] = {}
        self.unknown: dict[str, str] = {}   # G_d tensor (r0.node) -> why its value is not known (L.Free)
        self._metas: dict[tuple, object] = {}    # (rank, G_d tensor key) -> its meta (peers)

    def run(self) -> "DistProgram":
        pending_coll = []   # (rank, node, Collective)
        self._pending_p2p = []   # (rank, node, PointToPoint), in each rank's issue order
        for r, g in enumerate(self.dist.ranks):
            low = L.Lowerer(g, constants=self.spec.constants, canon=lambda size, r=r: self.sizes.canonical(size, r))
            for n in g.nodes:
                if n.is_placeholder:
                    if isinstance(n.val, G.TensorMeta):
                        self._dist_leaf(r, n.name, n.val, given=given_input(self.dist_names[r].display.get(n.name), n.val))
                    continue
                res = low.lower(n)
                if L.draws_in(res):   # a leaf of its own, which the node's other outputs may read
                    self._dist_leaf(r, L.draw_key(n), L.draw_meta(n))
                try:
                    res = L.bind_result(res, self.dvar[r].__getitem__)
                except KeyError:   # reads an output of an op without semantics (reported below)
                    continue
                self._bind_dist(r, n, res, pending_coll)
        for leaf, rep in self.replicas:
            self._define(leaf, rep)
        self._lower_collectives(pending_coll)
        self._lower_p2p(self._pending_p2p)
        self._drop_moved_peers()
        return self

    def _drop_moved_peers(self):
        """Peers are tensors the ranks compute, or views of them; a tensor that moves data
        otherwise (a slice's zero-padded gradient, a concat, a collective's result) is already a
        clean term over its sources, and read as a sum over ranks besides it fed the sums' lemmas
        a new sum every step (adv2_flip_dim joint: slice_backward's peers, a limit instead of its
        bug)."""
        moved = {k for k in data_movement(self.dfacts)
                 if not all(head(defined_term(c)) in _VIEWS for c in self.dfacts.defn[k])}
        for key, cmds in self.dfacts.shape.items():
            self.dfacts.shape[key] = [c for c in cmds if not (c.startswith("(peer ") and leaves_in(c) & moved)]

    def _dist_leaf(self, r, name, val, given=False):
        """The leaf of a G_d tensor; ``given``: an input of the rank (values it did not compute)."""
        v = gd_leaf(r, name)
        self.dvar[r][name] = v
        self.dfacts.declare(leaves_in(v).pop(), self.sizes.shape_facts(v, val, r) + ([f"(given {v})"] if given else [])
                            + self._peer(r, name, val, v))
        port = self.dist_names[r].display.get(name)
        if port is not None and self.dist.ranks[r].node(name).is_placeholder:
            value = declared_constant(self.spec, self.sizes, port, val, r)
            if value:
                self._define(v, value)
        return v

    def _peer(self, r, name, val, v) -> list[str]:
        """``(peer a v)`` where the previous rank has a tensor ``a`` of the same node name, shape
        (sizes identical after canonicalisation) and dtype, not bool: the same value of each rank
        of an SPMD program, which lemmas may sum over ranks in rank order (entangle_py/lemmas/collective.py).
        The relation only says where to look; the lemmas' conditions are its shape and dtype."""
        self._metas[(r, name)] = val
        prev = self._metas.get((r - 1, name))
        if not (isinstance(val, G.TensorMeta) and isinstance(prev, G.TensorMeta)) or val.dtype == "bool" or \
                prev.dtype != val.dtype or len(prev.shape) != len(val.shape) or \
                any(self.sizes.canonical(a, r - 1) != self.sizes.canonical(b, r) for a, b in zip(prev.shape, val.shape)):
            return []
        return [f"(peer {gd_leaf(r - 1, name)} {v})"]

    def _bind_dist(self, r, n, res, pending_coll):
        if isinstance(res, L.NotTensor) or res is L.DRAW:
            return
        if isinstance(res, L.Free):      # a value nobody knows: a leaf of its own
            self._dist_leaf(r, n.name, n.val)
            self.unknown[f"r{r}.{n.name}"] = res.label + (f" at {source(n)}" if source(n) else "")
            return
        if isinstance(res, L.NoSemantics):
            self.no_semantics.setdefault(unsupported_key(res), []).append((r, n))
            self._dist_leaf(r, n.name, n.val) if isinstance(n.val, G.TensorMeta) else None
            return
        if isinstance(res, L.Identity):
            if res.ref in self.dvar[r]:
                self.dvar[r][n.name] = self.dvar[r][res.ref]
                self._name_output_alias(r, n.name)
            return
        if isinstance(res, L.TupleTerms):
            for i, item in enumerate(res.items):
                if not isinstance(n.val[i], G.TensorMeta):
                    continue
                key = f"{n.name}#{i}"
                if item is L.DRAW:     # its leaf is made before binding
                    continue
                if item is None:       # a value nobody knows: a leaf of its own
                    self._dist_leaf(r, key, n.val[i])
                    continue
                if isinstance(item, L.Identity):
                    if item.ref in self.dvar[r]:
                        self.dvar[r][key] = self.dvar[r][item.ref]
                    continue
                v = self._dist_leaf(r, key, n.val[i])
                if isinstance(item, L.Term):
                    self._define(v, item.text)
            return
        if isinstance(res, L.Collective):
            v = self._dist_leaf(r, n.name, n.val)
            pending_coll.append((r, n, res))
            return
        if isinstance(res, L.PointToPoint):   # leaves; a receive is defined once paired (_lower_p2p)
            for i, val in enumerate(n.val if res.batch else (n.val,)):
                if isinstance(val, G.TensorMeta):
                    self._dist_leaf(r, f"{n.name}#{i}" if res.batch else n.name, val)
            self._pending_p2p.append((r, n, res))
            return
        if isinstance(res, L.Decomposed):    # the middle value is a G_d tensor of its own
            mid = self._dist_leaf(r, f"{n.name}:{res.name}", n.val)
            self._define(mid, res.inner.text)
            v = self._dist_leaf(r, n.name, n.val)
            self._define(v, res.outer.format(inner=mid))
            return
        v = self._dist_leaf(r, n.name, n.val)
        self._define(v, res.text)

    def _define(self, leaf: str, text: str):
        """The G_d tensor ``leaf`` equals ``text``."""
        self.dfacts.define(leaves_in(leaf).pop(), f"(union {leaf} {text})")

    def _name_output_alias(self, r, node):
        """An output port on an identity (wait_tensor, copy) names the tensor it passes on."""
        names = self.dist_names[r]
        port = names.display.get(node)
        text = self.dvar[r][node]
        if port is None or not text.startswith('(Gd "'):
            return
        base = split_key(text[len('(Gd "'):-2])[1]
        if "#" not in base and base != node:
            names.display.setdefault(base, port)

    def _lower_collectives(self, pending):
        """Match each rank's collectives with its peers': per communicator (process group: its
        name and members, in group-rank order), in the order each rank issues them -- as c10d
        does.  Two groups with the same members are two communicators."""
        by_group: dict[tuple, dict[int, list]] = {}
        for r, n, c in pending:
            members = tuple(self.dist.ranks[r].groups.get(c.group, ()))
            if not members:
                raise CheckInputError(f"rank {r} node {n.name}: collective on group {c.group!r}, "
                                      f"which is not in the rank's process-group table")
            if r not in members:
                raise CheckInputError(f"rank {r} node {n.name}: collective on group {c.group!r} "
                                      f"{list(members)}, which rank {r} is not a member of")
            by_group.setdefault(G.communicator(self.dist.ranks, c.group, members), {}).setdefault(r, []).append((n, c))
        for (_, members), per_rank in by_group.items():
            counts = {r: len(per_rank.get(r, [])) for r in members}
            if len(set(counts.values())) != 1:
                raise CheckInputError(
                    f"collective sequences differ on group {list(members)}: " +
                    ", ".join(f"rank {r} issues {k}" for r, k in counts.items()))
            for k in range(counts[members[0]]):
                ops = {r: per_rank[r][k] for r in members}
                kinds = {(c.kind, c.reduce) for _, c in ops.values()}
                if len(kinds) != 1:
                    desc = ", ".join(f"rank {r}: {n.name} ({c.kind})" for r, (n, c) in ops.items())
                    raise CheckInputError(f"collective #{k + 1} on group {list(members)} does not match: {desc}")
                self._lower_collective(members, ops)
                self.collectives.append((list(members), next(iter(kinds))[0],
                                         {r: n.name for r, (n, _) in ops.items()}))

    def _lower_collective(self, members, ops):
        inputs = [self.dvar[r][ops[r][1].input] for r in members]
        kind, red = ops[members[0]][1].kind, ops[members[0]][1].reduce
        # a reduction over ranks, written in global rank order whatever the group's order
        # (addition and max are commutative; a sum over ranks is one value whatever the order)
        ranks = sorted(members)
        parts = L.term_list([self.dvar[r][ops[r][1].input] for r in ranks])
        total = f"(rsum {parts})"
        # a rank's part that is a float buffer of zeros (DDP's reduction for a parameter the rank
        # has no gradient of) adds nothing: the sum is the other parts' (x + 0.0 == x for every
        # float x; as a part, the zero would make the sum equal to its other part, a cycle), and a
        # sum of zeros only is one of them (0.0 + 0.0 == 0.0)
        live = [r for r in ranks if not self._float_zeros(r, ops[r][1].input)] or ranks[:1]
        if red in ("sum", "avg") and len(live) < len(ranks):
            kept = [self.dvar[r][ops[r][1].input] for r in live]
            total = kept[0] if len(kept) == 1 else f"(rsum {L.term_list(kept)})"
        reduced = {"sum": total, "max": f"(rmax {parts})",
                   "avg": f'(scalar "div" {total} {L.scalar_lit(len(members))})'}.get(red)
        for idx, r in enumerate(members):
            n, c = ops[r]
            out = self.dvar[r][n.name]
            if kind == "all_reduce":
                if not reduced:
                    self.no_semantics.setdefault(f"all_reduce({red})", []).append((r, n))
                    continue
                self._define(out, reduced)
            elif kind == "all_gather":       # along dim 0, in group-rank order
                if c.params[0] != len(members):
                    self.no_semantics.setdefault("all_gather_into_tensor (group size mismatch)", []).append((r, n))
                    continue
                self._define(out, f"(concat {L.term_list(inputs)} 0)")
            elif kind == "reduce_scatter":   # rank idx gets rows [idx*size, (idx+1)*size) of the sum
                if c.params[0] != len(members):
                    self.no_semantics.setdefault("reduce_scatter_tensor (group size mismatch)", []).append((r, n))
                    continue
                if not reduced:
                    self.no_semantics.setdefault(f"reduce_scatter({red})", []).append((r, n))
                    continue
                size = n.val.shape[0]       # the rank's block of the reduction, in group-rank order
                start, end = (L.dim_term(self.sizes.canonical(k * size, r)) for k in (idx, idx + 1))
                self._define(out, f"(slice {reduced} 0 {start} {end})")
            elif kind == "broadcast":         # src is a rank of the group (gloo: tests/test_interp_gloo.py)
                src = c.params[0]
                if not isinstance(src, int) or not 0 <= src < len(members):
                    self.no_semantics.setdefault(f"broadcast from group rank {src!r}", []).append((r, n))
                    continue
                root = members[src]
                self._define(out, self.dvar[root][ops[root][1].input])
            elif kind == "all_to_all":
                # rank idx receives, from every source j in rank order, source j's idx-th block
                # (an empty block, a source sending this rank nothing, is left out: it adds no row;
                # kept only if every block is empty)
                pieces, empty = [], []
                for j, src in enumerate(members):
                    sn, sc = ops[src]
                    splits = self._splits(sc.params[1], self.dist.ranks[src].node(sc.input).val, len(members), src)
                    if splits is None:
                        break
                    start = sum(splits[:idx], 0)
                    piece = (f"(slice {inputs[j]} 0 {L.dim_term(self.sizes.canonical(start, src))} "
                             f"{L.dim_term(self.sizes.canonical(start + splits[idx], src))})")
                    (empty if splits[idx] == 0 else pieces).append(piece)
                else:
                    self._define(out, f"(concat {L.term_list(pieces or empty[:1])} 0)")
                    continue
                self.no_semantics.setdefault("all_to_all_single with sizes it cannot split", []).append((r, n))

    def _float_zeros(self, r, name) -> bool:
        """Whether rank r's tensor ``name`` is an allocation of float zeros (``ops.ZERO_FILLS``)."""
        n = self.dist.ranks[r].node(name)
        return n.target in ops.ZERO_FILLS and isinstance(n.val, G.TensorMeta) and n.val.dtype in L.FLOAT_DTYPES

    def _lower_p2p(self, pending):
        """Pair point-to-point transfers (pipeline stages): the k-th receive rank d posts from
        rank s with tag t on a communicator gets the k-th tensor rank s sends to d with tag t on
        it -- peers and issue order, not the group's member set (c10d matches sends and receives
        per process group, source, destination and tag, in order).  A receive's value is the sent
        tensor; a transfer without its counterpart, or whose shape or dtype differ, is refused
        (exit 2: the program would hang or fail there)."""
        sends, recvs = {}, {}
        for r, n, p in pending:
            g = self.dist.ranks[r]
            members = tuple(g.groups.get(p.group, ()))
            if r not in members:
                raise CheckInputError(f"rank {r} node {n.name}: point-to-point on group {p.group!r} "
                                      f"{list(members)}, which rank {r} is not a member of")
            comm = G.communicator(self.dist.ranks, p.group, members)
            for i, (kind, peer, tag, tensor) in enumerate(p.ops):
                if peer not in members:
                    raise CheckInputError(f"rank {r} node {n.name}: {kind} with rank {peer}, which is not in "
                                          f"its group {list(members)}")
                out = f"{n.name}#{i}" if p.batch else n.name
                if kind == "isend":
                    sends.setdefault((comm, r, peer, tag), []).append((r, n, tensor))
                else:
                    recvs.setdefault((comm, peer, r, tag), []).append((r, n, tensor, out))
        for key in sorted(set(sends) | set(recvs), key=str):
            (_, members), src, dst, tag = key
            ss, rs = sends.get(key, []), recvs.get(key, [])
            if len(ss) != len(rs):
                raise CheckInputError(
                    f"point-to-point transfers from rank {src} to rank {dst} (tag {tag}, group {list(members)}) "
                    f"do not pair: rank {src} sends {len(ss)}"
                    f"{' (' + ', '.join(n.name for _, n, _ in ss) + ')' if ss else ''}, rank {dst} receives "
                    f"{len(rs)}{' (' + ', '.join(n.name for _, n, _, _ in rs) + ')' if rs else ''}")
            for (sr, sn, tensor), (dr, dn, buf, out) in zip(ss, rs):
                sent = self.dist.ranks[sr].node(tensor).val
                got = self.dist.ranks[dr].node(buf).val
                if not (isinstance(sent, G.TensorMeta) and isinstance(got, G.TensorMeta)) or \
                        sent.dtype != got.dtype or len(sent.shape) != len(got.shape) or \
                        not all(self.sizes.same(self.sizes.canonical(a, sr), self.sizes.canonical(b, dr))
                                for a, b in zip(sent.shape, got.shape)):
                    raise CheckInputError(
                        f"rank {dr} node {dn.name} receives {meta_text(got)} from rank {sr}, whose matching "
                        f"send {sn.name} sends {meta_text(sent)}")
                self._define(self.dvar[dr][out], self.dvar[sr][tensor])
                self.collectives.append(([src, dst], "send/recv", {sr: sn.name, dr: dn.name}))

    @staticmethod
    def _splits(sizes, val, world, rank):
        """Block sizes of an all_to_all input along dim 0: given, or equal blocks."""
        if sizes:
            return list(sizes)
        total = val.shape[0] if isinstance(val, G.TensorMeta) else None
        if total is None:
            return None
        if isinstance(total, int):
            return [total // world] * world if total % world == 0 else None
        return [total / world] * world if (total / world).is_integer else None

