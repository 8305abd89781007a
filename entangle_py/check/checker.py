"""The operator-by-operator refinement loop (Entangle §3-4) and ``entangle check``.

R starts as the input relation.  For each G_s operator in topological order its term over the
already-related inputs is added to the e-graph, the lemmas run until its e-class holds a clean
term (only G_d tensors, data movement and reductions over ranks) or a limit is hit, and the best
term is extracted.  No clean term: refinement fails at that operator.
"""
from __future__ import annotations

import math
import re
import time

import sympy
from dataclasses import dataclass, field, replace

from entangle_py.ir import graph as G
from entangle_py.semantics import lower as L
from entangle_py.check import spec as S
from entangle_py.config import Limits, Policy
from entangle_py.engine.egraph import CERTIFY, STEP, Engine, Outcome, _term_from_dag
from entangle_py.errors import InputError
from entangle_py.engine.lemma import load_library
from entangle_py.semantics.terms import BIG, EvalError, Var, clean_meta, is_clean, parse_sexpr, str_lit, to_sexpr
from entangle_py.check.window import DistFacts, Window, leaves_in
from entangle_py.check import culprit

SVAR = re.compile(r"\$v\d+")     # a G_s tensor's egglog global
CLEAN_VARIANTS = 32               # terms extracted per proven tensor to find its related G_d tensors


class CheckInputError(InputError):
    pass


@dataclass
class OpFailure:
    node: str
    target: str
    source: str | None
    inputs: dict            # input name -> relation text
    best: str               # best (non-clean) term found
    considered: list        # G_d tensors in the e-graph near the failure
    reason: str             # 'no clean term' | limit text
    later: list = field(default_factory=list)   # deferred ops after it, also without a clean term
    best_term: str = ""     # the best term as an s-expression (G_d leaves by key), for the witness
    # what a report needs to explain it (culprit.py): the inputs' relations and the best few terms
    # as s-expressions with their costs, lemma matches and lemma steps spent on it, and (filled
    # once the check is over) locations, producers, culprits in G_d, neighbourhoods
    inputs_terms: dict = field(default_factory=dict)
    candidates: list = field(default_factory=list)     # [{"sexpr", "cost"}], cheapest first
    lemmas: dict = field(default_factory=dict)
    iterations: int = 0
    detail: dict = field(default_factory=dict)


@dataclass
class Result:
    status: str                                  # 'refines' | 'fails' | 'unknown' | 'internal-error'
    relations: dict = field(default_factory=dict)   # checked output -> clean term text
    failure: OpFailure | None = None
    expectations: list = field(default_factory=list)  # (output, required, found, ok)
    inferred_inputs: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    ops_checked: int = 0
    collectives: list = field(default_factory=list)
    assumptions: list = field(default_factory=list)   # (name, description) of assumptions in force
    # s-expressions over G_d leaves (Gd "r<rank>.<node>"), for numeric re-checks: each checked
    # output's certificate, and a clean term found for each G_s operator on the way
    certificates: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)    # checked output -> {"verdict": holds | fails | ...}
    op_relations: dict = field(default_factory=dict)
    retired: int = 0             # times proven facts were retired for a fresh e-graph
    rechecked: bool = False      # a failure found after retiring was decided again keeping all facts
    numeric: dict | None = None  # the interpreter's second opinion (recheck.py), when it ran
    # for reports (culprit.py): each proved or failed G_s operator's lemma steps, matches and
    # location; every G_d tensor named in a relation, certificate or failure, with its location
    operators: dict = field(default_factory=dict)
    input_relations: dict = field(default_factory=dict)   # G_s input (or given tensor) -> relation
    gd_nodes: dict = field(default_factory=dict)
    limits: dict = field(default_factory=dict)
    world_size: int = 0
    joint: bool = False

    @property
    def exit_code(self) -> int:
        return {"refines": 0, "fails": 1, "unknown": 3, "internal-error": 4}[self.status]


# ----------------------------------------------------------------------------- names

class Names:
    """Stable names <-> nodes for one rank graph: port names first, then node names."""

    def __init__(self, g: G.RankGraph):
        self.g = g
        self.by_port = {p.name: p.node for p in g.inputs}
        self.by_port.update({p.name: p.node for p in g.outputs})
        self.display = {}
        for p in g.outputs + g.inputs:
            self.display.setdefault(p.node, p.name)
        self.aliases = L.naming_aliases(g)     # names given in the program (tg.log_tensor)

    def node(self, name: str) -> str | None:
        if name in self.by_port:
            return self.by_port[name]
        if self.g.has(name):
            return name
        return self.aliases.get(name)

    def show(self, node: str) -> str:
        return self.display.get(node, node)


def gd_leaf(rank: int, node: str) -> str:
    return f"(Gd {str_lit(f'r{rank}.{node}')})"


# ----------------------------------------------------------------------------- the checker

class Checker:
    def __init__(self, seq: G.Bundle, dist: G.Bundle, spec: S.Spec, limits: Limits | None = None,
                 lemma_files=(), progress=None, log=None, policy: Policy | None = None):
        if seq.world_size != 1:
            raise CheckInputError(f"the sequential bundle has {seq.world_size} ranks; expected 1")
        self.seq_bundle = seq
        self.seq, self.dist, self.spec = seq.ranks[0], dist, spec
        self.limits = limits or Limits()
        self.policy = policy or Policy()
        self.progress = progress
        self.log = log or (lambda msg: None)
        self.seq_names = Names(self.seq)
        self.dist_names = [Names(g) for g in dist.ranks]
        self.lib = load_library(lemma_files)
        self.same_rng = "same_rng" in spec.assume
        self._start()

    def _start(self):
        """The state of one pass of the operator loop: an empty e-graph and no facts."""
        self.engine = Engine(self.lib, assume=self.spec.assume)
        self.svar: dict[str, str] = {}        # G_s node (or node#i) -> egglog expression
        self.dvar: list[dict[str, str]] = [dict() for _ in self.dist.ranks]
        self.dfacts = DistFacts()              # G_d facts, inserted as the window reaches them
        self.sfacts: dict[str, list[str]] = {}   # G_s global -> commands that create it
        self.sleaves: dict[str, set[str]] = {}   # G_s global -> G_d tensors it is related to
        self.present: set[str] = set()           # G_s globals in the e-graph
        self._n = 0
        self.retired = 0                       # times proven facts were retired (a fresh e-graph)

    # -- helpers ---------------------------------------------------------------------------
    def _fresh(self) -> str:
        self._n += 1
        return f"$v{self._n}"

    def _shape_facts(self, var: str, val, graph="seq") -> list[str]:
        if not isinstance(val, G.TensorMeta):
            return []
        return [f"(set (ndim {var}) {len(val.shape)})"] + [
            f"(set (dim {var} {i}) {L.dim_term(self._canonical_size(s, graph))})" for i, s in enumerate(val.shape)]

    # -- G_s tensors: facts kept so that they can be brought into the e-graph when used -------
    def _new_svar(self, text: str, val=None) -> str:
        """A G_s tensor defined by ``text`` (a term over G_d leaves and other G_s globals)."""
        v = self._fresh()
        self.sfacts[v] = [f"(let {v} {text})"] + self._shape_facts(v, val)
        self.sleaves[v] = leaves_in(text).union(*(self.sleaves.get(u, ()) for u in SVAR.findall(text)))
        return v

    def _add_sfact(self, v: str, text: str):
        """``v`` also equals ``text`` (said before ``v`` is brought into the e-graph)."""
        self.sfacts[v].append(f"(union {v} {text})")
        self.sleaves[v] |= leaves_in(text)

    def _bring(self, v: str):
        """Put a G_s tensor's facts, and those of what they name, into the e-graph."""
        stack = [v]
        while stack:        # post-order: what a tensor's facts name goes in before them
            u = stack[-1]
            if u in self.present:
                stack.pop()
                continue
            text = " ".join(self.sfacts[u])
            missing = [w for w in SVAR.findall(text) if w != u and w not in self.present]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            self.present.add(u)
            self.engine.add(*self.window.commands(leaves_in(text)), *self.sfacts[u])

    def _explore(self, v: str):
        """G_d near the tensors ``v`` is computed from (the paper's exploration of T_rel)."""
        self.engine.add(*self.window.explore(self.sleaves[v]))

    def _widen(self) -> bool:
        """All of G_d into the e-graph; False when it was all there already."""
        if self.window.complete:
            return False
        self.engine.add(*self.window.everything())
        return True

    def _canonical_size(self, size, graph):
        """Symbols are named per capture: rename them so that equal names mean equal sizes.

        A rank's symbol is identified with a sequential one only where an input of both graphs
        has the two symbols on the same, unsharded axis; otherwise it stays private to the rank.
        """
        if isinstance(size, int) or not hasattr(size, "free_symbols") or not size.free_symbols:
            return size
        mapping = self._sym_map.get(graph, {})
        prefix = "seq_" if graph == "seq" else f"r{graph}_"
        subs = {sym: mapping.get(sym.name) or G.symbolic.make_symbol(prefix + sym.name) for sym in size.free_symbols}
        return size.xreplace(subs)

    def _unify_symbols(self, rels: dict):
        self._sym_map = {}
        for r, names in enumerate(self.dist_names):
            m, conflicts = {}, set()
            for pname, rel in rels.items():
                snode, dnode = self.seq_names.node(pname), names.node(pname)
                if snode is None or dnode is None:
                    continue
                sv, dv = self.seq.node(snode).val, self.dist.ranks[r].node(dnode).val
                if not (isinstance(sv, G.TensorMeta) and isinstance(dv, G.TensorMeta)) or len(sv.shape) != len(dv.shape):
                    continue
                sharded = {p.dim % len(sv.shape) for p in rel.placements if isinstance(p, S.Shard)} if sv.shape else set()
                for i, (a, b) in enumerate(zip(sv.shape, dv.shape)):
                    if i in sharded or not (getattr(a, "is_Symbol", False) and getattr(b, "is_Symbol", False)):
                        continue
                    target = G.symbolic.make_symbol("seq_" + a.name)
                    if m.get(b.name, target) != target:
                        conflicts.add(b.name)
                    m[b.name] = target
            self._sym_map[r] = {k: v for k, v in m.items() if k not in conflicts}

    def _register_symbols(self):
        """Give Z3 (engine.dims) every symbol's range and every guard, under canonical names."""
        dims = self.engine.dims
        for graph, g in [("seq", self.seq)] + list(enumerate(self.dist.ranks)):
            for name, (lo, hi) in g.symbols.items():
                sym = self._canonical_size(G.symbolic.make_symbol(name), graph)
                dims.add_symbol(sym.name, lo, hi)
            for guard in g.guards:
                dims.add_guard(self._canonical_size(guard, graph))

    def _term_of(self, t: S.Term, where: str) -> str:
        """egglog text of a spec term over G_d tensors (normalised: ``S.normalize_term``)."""
        if isinstance(t, S.Leaf):
            node = self._spec_node(t, where)
            return self.dvar[t.rank].get(node) or gd_leaf(t.rank, node)
        args = [self._term_of(a, where) for a in t.args]
        if t.op in ("sum", "max"):
            return f"({'rsum' if t.op == 'sum' else 'rmax'} {_list(args)})"
        if t.op == "concat":
            return f"(concat {_list(args)} {t.attr('dim')})"      # dims are non-negative in terms
        if t.op == "slice":
            return f"(slice {args[0]} {t.attr('dim')} {L.dim_term(t.attr('start'))} {L.dim_term(t.attr('end'))})"
        raise CheckInputError(f"{where}: operator {t.op!r} is not supported in input relations yet")

    def _spec_node(self, t: S.Leaf, where: str) -> str:
        if not 0 <= t.rank < self.dist.world_size:
            raise CheckInputError(f"{where}: rank {t.rank} does not exist (world size {self.dist.world_size})")
        node = self.dist_names[t.rank].node(t.name)
        if node is None:
            raise CheckInputError(f"{where}: rank {t.rank} has no tensor named {t.name!r}")
        return node

    def _normalize(self, t: S.Term, where: str) -> S.Term:
        """An explicit relation with its dims and slice bounds checked against the ranks' shapes
        and written out (``S.normalize_term``); exit 2 on what the term language cannot say."""
        def shape_of(leaf):
            val = self.dist.ranks[leaf.rank].node(self._spec_node(leaf, where)).val
            if not isinstance(val, G.TensorMeta):
                raise CheckInputError(f"{where}: r{leaf.rank}.{leaf.name} is not a tensor")
            return tuple(self._canonical_size(s, leaf.rank) for s in val.shape)

        def le(a, b):
            return self.engine.dims.proves_le(sympy.sympify(a), sympy.sympify(b))
        try:
            return S.normalize_term(t, shape_of, where, le)[0]
        except S.SpecError as e:
            raise CheckInputError(str(e)) from None

    def _relation_terms(self, rel: S.Relation, name: str, where: str | None = None) -> list:
        """The spec's relation for G_s tensor ``name`` as clean terms (dims normalised by its
        number of dims)."""
        node = self.seq_names.node(name)
        val = self.seq.node(node).val if node is not None else None
        ndim = len(val.shape) if isinstance(val, G.TensorMeta) else None
        if rel.term is not None:
            return [self._normalize(rel.term, where or f"relation for {name!r}")]
        try:
            return S.relation_terms(rel, name, self.dist.world_size, self.spec.mesh, ndim=ndim)
        except S.SpecError as e:
            raise CheckInputError(str(e)) from None

    # -- G_d -------------------------------------------------------------------------------
    def insert_dist(self):
        """Every G_d node: a leaf, unioned with its lowered definition (collectives across ranks),
        as facts that the exploration window puts into the e-graph."""
        pending_coll = []   # (rank, node, Collective)
        self._pending_p2p = []   # (rank, node, PointToPoint), in each rank's issue order
        for r, g in enumerate(self.dist.ranks):
            low = L.Lowerer(g, lambda name, r=r: self.dvar[r][name], constants=self.spec.constants,
                             same_rng=self.same_rng, canon=lambda size, r=r: self._canonical_size(size, r))
            for n in g.nodes:
                if n.is_placeholder:
                    if isinstance(n.val, G.TensorMeta):
                        self._dist_leaf(r, n.name, n.val)
                    continue
                try:
                    res = low.lower(n)
                except KeyError:   # reads an output of an op without semantics (reported below)
                    continue
                self._bind_dist(r, n, res, pending_coll)
        self._lower_collectives(pending_coll)
        self._lower_p2p(self._pending_p2p)
        self.window = Window(self.dfacts, self.policy.window_depth)

    def _dist_leaf(self, r, name, val):
        v = gd_leaf(r, name)
        self.dvar[r][name] = v
        self.dfacts.declare(leaves_in(v).pop(), self._shape_facts(v, val, r))
        port = self.dist_names[r].display.get(name)
        if port is not None and self.dist.ranks[r].node(name).is_placeholder:
            value = self._declared_constant(port, val, r)
            if value:
                self._define(v, value)
        return v

    def _declared_constant(self, port, val, graph) -> str | None:
        """The value of a tensor constant the spec declares ([constants])."""
        if port in self.spec.constants and isinstance(val, G.TensorMeta):
            text = L._fill_text(self.spec.constants[port], val.dtype)
            if text is not None:
                return f"(cst {str_lit(text)} {L.shape_list(val.shape, lambda s: self._canonical_size(s, graph))})"
        return None

    def _bind_dist(self, r, n, res, pending_coll):
        if isinstance(res, L.NotTensor):
            return
        if isinstance(res, L.Free):      # a value nobody knows: a leaf of its own
            self._dist_leaf(r, n.name, n.val)
            return
        if isinstance(res, L.NoSemantics):
            self.no_semantics.setdefault(_unsupported_key(res), []).append((r, n))
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
                if item is None:       # a value nobody knows (a random draw): a leaf of its own
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
        base = text[len('(Gd "'):-2].split(".", 1)[1]
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
        parts = _list([self.dvar[r][ops[r][1].input] for r in sorted(members)])
        reduced = {"sum": f"(rsum {parts})", "max": f"(rmax {parts})",
                   "avg": f'(scalar "div" (rsum {parts}) {L._scalar(len(members))})'}.get(red)
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
                self._define(out, f"(concat {_list(inputs)} 0)")
            elif kind == "reduce_scatter":   # rank idx gets rows [idx*size, (idx+1)*size) of the sum
                if c.params[0] != len(members):
                    self.no_semantics.setdefault("reduce_scatter_tensor (group size mismatch)", []).append((r, n))
                    continue
                if not reduced:
                    self.no_semantics.setdefault(f"reduce_scatter({red})", []).append((r, n))
                    continue
                size = n.val.shape[0]       # the rank's block of the reduction, in group-rank order
                start, end = (L.dim_term(self._canonical_size(k * size, r)) for k in (idx, idx + 1))
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
                pieces = []
                for j, src in enumerate(members):
                    sn, sc = ops[src]
                    splits = self._splits(sc.params[1], self.dist.ranks[src].node(sc.input).val, len(members), src)
                    if splits is None:
                        break
                    start = sum(splits[:idx], 0)
                    pieces.append(f"(slice {inputs[j]} 0 {L.dim_term(self._canonical_size(start, src))} "
                                  f"{L.dim_term(self._canonical_size(start + splits[idx], src))})")
                else:
                    self._define(out, f"(concat {_list(pieces)} 0)")
                    continue
                self.no_semantics.setdefault("all_to_all_single with sizes it cannot split", []).append((r, n))

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
                        not all(self._same_size(self._canonical_size(a, sr), self._canonical_size(b, dr))
                                for a, b in zip(sent.shape, got.shape)):
                    raise CheckInputError(
                        f"rank {dr} node {dn.name} receives {_meta_text(got)} from rank {sr}, whose matching "
                        f"send {sn.name} sends {_meta_text(sent)}")
                self._define(self.dvar[dr][out], self.dvar[sr][tensor])
                self.collectives.append(([src, dst], "send/recv", {sr: sn.name, dr: dn.name}))

    def _same_size(self, a, b) -> bool:
        a, b = sympy.sympify(a), sympy.sympify(b)
        return sympy.expand(a - b) == 0 or (self.engine.dims.proves_le(a, b) and self.engine.dims.proves_le(b, a))

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

    # -- input relation --------------------------------------------------------------------
    def input_relations(self) -> dict:
        """Spec relations for G_s inputs, with missing ones inferred from shapes."""
        rels = {}
        ports = {p.name: p.node for p in self.seq.inputs}
        for name in list(self.spec.inputs) + list(self.spec.cut):
            if self.seq_names.node(name) is None:
                raise CheckInputError(f"spec names {name!r}, which the sequential graph does not have "
                                      f"(inputs: {', '.join(sorted(ports)[:8])}...)")
        for name in self.spec.constants:
            graphs = [self.seq] + list(self.dist.ranks)
            if not any(p.name == name for g in graphs for p in g.inputs):
                raise CheckInputError(f"[constants] names {name!r}, which no graph has as an input "
                                      f"(tensor constants are inputs named const:<attribute>)")
        needed = self._needed_nodes()
        inferred = {}
        self.free_inputs = []
        for name, rel in self._given_tensors().items():   # cut tensors: inputs of the checked region
            rels[name] = rel
        for pname, node in ports.items():
            if node not in needed or pname in rels or node in rels:
                continue          # not read by a checked output (or above a cut)
            val = self.seq.node(node).val
            if pname in self.spec.inputs or node in self.spec.inputs:
                rels[pname] = self.spec.inputs.get(pname) or self.spec.inputs[node]
                continue
            if not isinstance(val, G.TensorMeta):
                continue
            if pname.startswith(L.CONST_PORT_PREFIX):
                # a declared constant is its value (spec [constants]); an undeclared one is a free
                # leaf: its value is never assumed, nor inferred equal to the ranks'
                self.free_inputs.append(pname)
                continue
            rel = self._dtensor_relation(pname) or self._infer_placement(pname, val)
            rels[pname] = rel
            inferred[pname] = rel
        self.inferred = inferred
        return rels

    def _dtensor_relation(self, pname: str) -> S.Relation | None:
        """The relation a DTensor program declares for an input by its placements (recorded by
        capture), or None when it holds the input as a plain tensor."""
        import json
        from entangle_py.frontend.capture import DTENSOR_PLACEMENTS
        text = self.dist.meta.get(DTENSOR_PLACEMENTS)
        if not text:
            return None
        try:
            placements = json.loads(text)
        except ValueError:
            raise CheckInputError(f"the distributed bundle's {DTENSOR_PLACEMENTS} is not valid JSON") from None
        rel = placements.get(pname) if isinstance(placements, dict) else None
        if rel is None:
            return None
        if not isinstance(rel, str) or rel.startswith("unmapped:"):
            raise CheckInputError(f"input {pname!r} is a DTensor whose placements the spec language cannot say "
                                  f"({str(rel)[len('unmapped: '):]}); give its relation in [inputs]")
        try:
            return S.parse_relation(rel, f"DTensor placements of {pname!r}", S.Mesh())
        except S.SpecError as e:
            raise CheckInputError(str(e)) from None

    def _infer_placement(self, pname: str, val: G.TensorMeta) -> S.Relation:
        W = self.dist.world_size
        shapes = []
        for r, names in enumerate(self.dist_names):
            node = names.node(pname)
            dv = self.dist.ranks[r].node(node).val if node else None
            if not isinstance(dv, G.TensorMeta):
                held = [q for q, nm in enumerate(self.dist_names) if nm.node(pname) is not None]
                raise CheckInputError(
                    f"input {pname!r}: rank {r} has no such tensor input; add it to [inputs] in the spec" +
                    (f", naming the rank that holds it (a pipeline stage's tensor), e.g. \"{pname}\" = "
                     f"\"r{held[0]}.{pname}\"" if held else ""))
            shapes.append(tuple(dv.shape))
        seq_shape = tuple(val.shape)
        if all(s == seq_shape for s in shapes):
            return S.Relation(placements=(S.Replicate(),))
        if all(len(s) == len(seq_shape) for s in shapes):
            diff = [d for d in range(len(seq_shape)) if any(s[d] != seq_shape[d] for s in shapes)]
            if len(diff) == 1 and sum(s[diff[0]] for s in shapes) == seq_shape[diff[0]] and W > 1:
                return S.Relation(placements=(S.Shard(diff[0]),))
        raise CheckInputError(
            f"cannot infer how the ranks hold input {pname!r} (sequential shape {list(seq_shape)}, "
            f"rank shapes {[list(s) for s in shapes]}); add it to [inputs] in the spec, e.g. "
            f"\"{pname}\" = \"shard(0)\" or \"partial\"")

    def _check_shapes(self, pname: str, rel: S.Relation):
        """Shapes that contradict the spec are bad input, not a refinement failure."""
        if rel.term is not None or len(rel.placements) != 1 or self.spec.mesh.shape:
            return
        seq_val = self.seq.node(self.seq_names.node(pname)).val
        shapes = []
        for r, names in enumerate(self.dist_names):
            node = names.node(pname)
            if node is None:
                raise CheckInputError(f"spec relates {pname!r}, but rank {r} has no tensor of that name")
            shapes.append(tuple(self.dist.ranks[r].node(node).val.shape))
        want, p = tuple(seq_val.shape), rel.placements[0]
        ok = all(len(s) == len(want) for s in shapes)
        if ok and isinstance(p, S.Shard):
            d = p.dim + len(want) if p.dim < 0 else p.dim
            ok = 0 <= d < len(want) and all(s[:d] + s[d + 1:] == want[:d] + want[d + 1:] for s in shapes)
            if ok and all(isinstance(s[d], int) for s in shapes) and isinstance(want[d], int):
                ok = sum(s[d] for s in shapes) == want[d]
        elif ok:
            ok = all(s == want for s in shapes)
        if not ok:
            raise CheckInputError(f"spec says {pname!r} = {rel}, but the sequential shape is {list(want)} "
                                  f"and the ranks' shapes are {[list(s) for s in shapes]}")

    def insert_inputs(self, rels: dict):
        """G_s inputs and their relations (into the e-graph when an operator reads them)."""
        for pname in getattr(self, "free_inputs", ()):
            node = self.seq_names.node(pname)
            val = self.seq.node(node).val
            v = self._new_svar(f"(Gs {str_lit(pname)})", val)
            value = self._declared_constant(pname, val, "seq")
            if value:
                self._add_sfact(v, value)
            self.svar[node] = v
        for pname, rel in rels.items():
            self._check_shapes(pname, rel)
            node = self.seq_names.node(pname)
            v = self._new_svar(f"(Gs {str_lit(pname)})", self.seq.node(node).val)
            self.svar[node] = v
            terms = self._relation_terms(rel, pname, f"input {pname!r}")
            for t in terms:
                text = self._term_of(t, f"input {pname!r}")
                if rel.term is not None:     # an explicit term must have the tensor's shape
                    mismatch = self._shape_mismatch(parse_sexpr(text), self.seq.node(node).val)
                    if mismatch:
                        raise CheckInputError(f"input {pname!r}: the relation {rel} {mismatch}")
                self._add_sfact(v, text)
            # concats equal to one tensor (sharded over one mesh dim, replicated over another)
            # have equal parts where the parts line up: r0.w = r2.w for concat(r0.w, r1.w) =
            # concat(r2.w, r3.w).  A sum over ranks says nothing of its parts.
            for t in terms[1:]:
                for a, b in self._equal_parts(terms[0], t):
                    ta, tb = self._term_of(a, f'input {pname!r}'), self._term_of(b, f'input {pname!r}')
                    self.sfacts[v].append(f"(union {ta} {tb})")
                    self.sleaves[v] |= leaves_in(ta) | leaves_in(tb)

    def _spec_meta(self, t: S.Term):
        """(shape, dtype) of a spec term over G_d tensors, or None when not a concat of leaves."""
        if isinstance(t, S.Leaf):
            val = self.dist.ranks[t.rank].node(self.dist_names[t.rank].node(t.name)).val
            return (tuple(val.shape), val.dtype) if isinstance(val, G.TensorMeta) else None
        if t.op != "concat" or not t.args:
            return None
        metas = [self._spec_meta(a) for a in t.args]
        if any(m is None for m in metas) or len({m[1] for m in metas}) != 1:
            return None
        d = t.attr("dim", 0) % len(metas[0][0]) if metas[0][0] else None
        if d is None or len({len(m[0]) for m in metas}) != 1:
            return None
        shape = list(metas[0][0])
        shape[d] = sum(m[0][d] for m in metas)
        return tuple(shape), metas[0][1]

    def _equal_parts(self, a: S.Term, b: S.Term):
        """Pairs of subterms of two concat terms of one value that are equal because every part
        lines up with its counterpart (same shape and dtype, same concat dim): concat is injective."""
        if not (isinstance(a, S.Call) and isinstance(b, S.Call) and a.op == b.op == "concat"
                and len(a.args) == len(b.args) and self._spec_meta(a) is not None
                and self._spec_meta(a) == self._spec_meta(b)):
            return
        nd = len(self._spec_meta(a)[0])
        if a.attr("dim", 0) % nd != b.attr("dim", 0) % nd:
            return
        pairs = list(zip(a.args, b.args))
        if any(self._spec_meta(x) is None or self._spec_meta(x) != self._spec_meta(y) for x, y in pairs):
            return
        for x, y in pairs:
            if x != y:
                yield x, y
                yield from self._equal_parts(x, y)

    # -- main loop -------------------------------------------------------------------------
    def run(self) -> Result:
        res = self._run()
        if res.status != "refines" and self.retired:
            # retiring dropped facts (G_s structure a lemma may match); it only saves time, so a
            # failure found with it is decided again with every fact kept
            retired = self.retired
            self.policy = replace(self.policy, window_nodes=math.inf)
            self._start()
            res = self._run()
            res.retired, res.rechecked = retired, True
        else:
            res.retired = self.retired
        return res

    def _run(self) -> Result:
        res = Result("refines")
        self.op_relations = res.op_relations
        self.op_stats = res.operators
        res.limits = {"iterations": self.limits.iterations, "enodes": self.limits.nodes,
                      "seconds": self.limits.seconds}
        from entangle_py.engine.lemma import ASSUMPTIONS
        res.assumptions = [(a, ASSUMPTIONS[a]) for a in self.spec.assume if a != "same_rng"]
        self.no_semantics: dict[str, list] = {}
        self.collectives: list = []
        t0 = time.perf_counter()
        rels = self.input_relations()
        self._unify_symbols(rels)
        self._register_symbols()
        for r, g in enumerate(self.dist.ranks):
            self._check_semantics(g, r)
        self._check_semantics(self.seq, "seq")
        self._refuse_unsupported()   # before inserting anything: never guess an op's meaning
        self.insert_dist()
        res.inferred_inputs = {k: str(v) for k, v in self.inferred.items()}
        res.input_relations = {k: str(v) for k, v in rels.items()}
        self.insert_inputs(rels)
        res.collectives = self.collectives
        self._refuse_unsupported()   # collectives with a reduction we do not model
        self.engine.flush()
        res.timings["insert"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        low = L.Lowerer(self.seq, lambda name: self.svar[name], constants=self.spec.constants,
                        same_rng=self.same_rng, canon=lambda size: self._canonical_size(size, "seq"))
        ops = [n for n in self.seq.nodes if not n.is_placeholder]
        needed = self._needed_nodes()
        outputs = {p.node for p in self.checked_outputs}
        if self.same_rng and any(n in needed for n in low.draws):
            res.assumptions.append(("same_rng", ASSUMPTIONS["same_rng"]))
        # Deferred: G_s ops without a clean term yet (intermediates no rank materialises, such as
        # the sequential program's own vocabulary mask).  Only outputs need clean terms, so an op
        # is deferred while fewer than `policy.deferred` are; an op proven clean absorbs the
        # deferred ops it depends on.  Otherwise refinement fails at the earliest deferred op.
        deferred: list[OpFailure] = []
        for i, n in enumerate(ops):
            if self.progress:
                self.progress(i, len(ops), n.name)
            if n.name not in needed or n.name in self.svar:
                continue
            if not deferred and self.engine.size() > self.policy.window_nodes:
                self._retire(ops[i:], needed)
            self._proved = None
            out = self._relate(low, n)
            if out is not None:
                if (out.reason == "no clean term" and n.name not in outputs
                        and len(deferred) < self.policy.deferred):
                    deferred.append(out)
                    continue
                if deferred:
                    out, later = deferred[0], [d.node for d in deferred[1:]] + [out.node]
                    out.later = later
                res.status = ("fails" if out.reason == "no clean term" else
                              "internal-error" if out.reason.startswith("internal") else "unknown")
                res.failure = out
                break
            if deferred and self._proved == n.name:
                below = self._ancestors(self.seq.node(n.name).refs())
                deferred = [d for d in deferred if d.node not in below]
            res.ops_checked += 1
        if res.failure is None and deferred:
            res.status, res.failure = "fails", deferred[0]
            res.failure.later = [d.node for d in deferred[1:]]
        res.timings["infer"] = time.perf_counter() - t1
        if res.failure is None:
            self._finish(res)
        else:
            self._expectations_blocked_by(res, res.failure.node)
        self._output_verdicts(res)
        f = res.failure
        for d in [f.node, *f.later] if f and not f.reason.startswith("output ") else ():
            if d in self.op_stats:
                self.op_stats[d]["status"] = "unknown" if f.reason.startswith("limit") and d == f.node else "failed"
        culprit.annotate(self, res)       # where it is in both programs (reports only)
        return res

    def _expectations_blocked_by(self, res: Result, failed: str):
        """After a failure, an expectation on an output computed from the failed operator cannot
        hold as required: report it violated -- or, when a limit stopped the check, unknown (None):
        nothing was shown either way.  A failure elsewhere leaves it unchecked, unreported."""
        limit = res.status == "unknown"
        for name, rel in self.spec.expect.items():
            _, node = self._expect_target(name)
            if failed in self._ancestors([node]):
                found = (f"unknown: a limit was hit at {failed}, which it is computed from" if limit
                         else f"no clean term: it is computed from {failed}")
                res.expectations.append((name, str(rel), found, None if limit else False))

    def _output_verdicts(self, res: Result):
        """Every checked output's own verdict: holds (its certificate), fails, unknown (a limit was
        hit on the way to it), or not reached (the check stopped elsewhere before it)."""
        f = res.failure
        for p in self.checked_outputs:
            if p.name in res.relations:
                res.outputs[p.name] = {"verdict": "holds", "certificate": res.relations[p.name]}
            elif f is None:
                continue
            elif f.node == p.node or f.node in self._ancestors([p.node]) or f.reason.startswith(f"output {p.name}:"):
                verdict = {"fails": "fails", "unknown": "unknown"}.get(res.status, "internal-error")
                res.outputs[p.name] = {"verdict": verdict, "at": f.node}
            else:
                res.outputs[p.name] = {"verdict": "not reached", "at": f.node}

    def _needed_nodes(self) -> set:
        """G_s nodes that checked outputs depend on (others are not verified)."""
        check = self.spec.check
        outs = [p for p in self.seq.outputs if check is None or p.name in check or p.node in check]
        if check is not None:
            known = {p.name for p in self.seq.outputs} | {p.node for p in self.seq.outputs}
            unknown = [c for c in check if c not in known and not self.seq.has(c)]
            if unknown:
                raise CheckInputError(f"[outputs] check names {unknown[0]!r}, which is not an output of the sequential graph")
            outs += [G.Port(c, c) for c in check if c not in known]
        cut = {self.seq_names.node(c) for c in self._given_tensors()}
        self.checked_outputs = outs
        return self._ancestors([p.node for p in outs], stop=cut)   # a cut tensor is given

    def _ancestors(self, nodes, stop=()) -> set:
        """``nodes`` and every G_s node they are computed from (not looking past ``stop``)."""
        seen, stack = set(), list(nodes)
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            if name not in stop:
                stack.extend(self.seq.node(name).refs())
        return seen

    def _expect_target(self, name: str):
        """(port name, node) of the G_s output an [expect] entry names."""
        port = next((p for p in self.seq.outputs if p.name == name or p.node == name), None)
        node = port.node if port else (name if self.seq.has(name) else None)
        if node is None:
            raise CheckInputError(f"[expect] names {name!r}, which is not a checked output of the sequential graph")
        return (port.name if port else name), node

    def _given_tensors(self) -> dict:
        """Tensors related by the spec that are not inputs of G_s: the [cut], and [inputs] entries
        naming an inner tensor (e.g. by a name a naming op gave it)."""
        ports = {p.name for p in self.seq.inputs} | {p.node for p in self.seq.inputs}
        out = {k: v for k, v in self.spec.inputs.items() if k not in ports}
        out.update(self.spec.cut)
        return out

    def _refuse_unsupported(self):
        if self.no_semantics:   # every unsupported op, in one line
            raise CheckInputError("; ".join(
                f"no semantics for {op} ({len(where)} nodes, first at "
                f"{where[0][1].source or f'rank {where[0][0]} node {where[0][1].name}'})"
                for op, where in self.no_semantics.items()))

    def _check_semantics(self, g, rank):
        low = L.Lowerer(g, lambda name: "", constants=self.spec.constants, same_rng=self.same_rng)
        for n in g.nodes:
            if n.is_placeholder:
                continue
            try:
                res = low.lower(n)
            except (KeyError, TypeError, IndexError):
                continue
            if isinstance(res, L.NoSemantics):
                self.no_semantics.setdefault(_unsupported_key(res), []).append((rank, n))
            elif isinstance(res, L.PointToPoint) and rank == "seq":   # a one-rank program has no peer
                self.no_semantics.setdefault(f"{n.target} in the sequential program", []).append((rank, n))

    def _relate(self, low: L.Lowerer, n: G.Node) -> OpFailure | None:
        res = low.lower(n)
        if isinstance(res, L.NotTensor):
            return None
        if isinstance(res, L.Identity):
            if res.ref in self.svar:
                self.svar[n.name] = self.svar[res.ref]
                if "#" in res.ref:          # an output of a multi-output op: relate it now
                    return self._prove(n, self.svar[n.name])
            return None
        if isinstance(res, L.Free):   # a free G_s tensor (undeclared constant, empty): related to nothing
            self.svar[n.name] = self._new_svar(f"(Gs {str_lit(n.name)})", n.val)
            return None
        if isinstance(res, L.Decomposed):
            mid = self._new_svar(res.inner.text, n.val)
            res = L.Term(res.outer.format(inner=mid))
        if isinstance(res, L.Collective):   # a collective in G_s runs on one rank: identity
            self.svar[n.name] = self.svar[res.input]
            return None
        if isinstance(res, L.TupleTerms):
            for i, item in enumerate(res.items):
                key = f"{n.name}#{i}"
                if isinstance(item, L.Identity):
                    if item.ref in self.svar:
                        self.svar[key] = self.svar[item.ref]
                    continue
                # an output without a term (a dropout mask) is a free tensor: related to nothing
                text = item.text if item is not None else f"(Gs {str_lit(key)})"
                self.svar[key] = self._new_svar(text, n.val[i])
            return None    # related lazily: by the getitem that uses an output
        v = self.svar[n.name] = self._new_svar(res.text, n.val)
        return self._prove(n, v)

    def _prove(self, n: G.Node, v: str) -> OpFailure | None:
        self._bring(v)
        self._explore(v)
        matches = self.engine.matches.copy()
        outcome = self.engine.prove_clean(v, self.limits)
        steps, seconds = outcome.iterations, outcome.seconds
        if outcome.status != "clean" and self._widen():   # never fail for want of G_d facts
            outcome = self.engine.prove_clean(v, self.limits)
            steps, seconds = steps + outcome.iterations, seconds + outcome.seconds
        stats = self.op_stats[n.name] = {"status": "related" if outcome.status == "clean" else "not clean",
                                         "iterations": steps, "seconds": round(seconds, 4),
                                         "lemmas": dict((self.engine.matches - matches).most_common())}
        if outcome.status == "clean":
            self._proved = n.name
            if not self.window.complete:   # where exploration goes on from
                found = self._clean_terms(v)
                self.sleaves[v] = leaves_in(" ".join(found))
                self.op_relations[n.name] = found[0]
            else:
                self.op_relations[n.name] = to_sexpr(self.engine.extract(v)[1])
            relation = parse_sexpr(self.op_relations[n.name])
            mismatch = self._shape_mismatch(relation, n.val)
            if mismatch:     # a wrong lemma or lowering, caught at the operator where it acts
                return OpFailure(node=n.name, target=n.target, source=_src(n), inputs={},
                                 best=self.show_term(relation), considered=[],
                                 reason=f"internal soundness error: the relation {mismatch}")
            return None
        cost, best = self.engine.extract(v)
        inputs = {}
        for ref in dict.fromkeys(n.refs()):
            if ref in self.svar:
                self._bring(self.svar[ref])
                c, t = self.engine.extract(self.svar[ref])
                inputs[self.seq_names.show(ref)] = self.show_term(t) + ("" if c < BIG else "  (not clean)")
        considered = sorted({self.show_term(l) for l in _leaves(best)})
        reason = "no clean term" if outcome.status == "saturated" else f"limit: {outcome.limit}"
        if outcome.status == "limit" and outcome.limit and "iterations" in outcome.limit and not self._grows():
            reason = "no clean term"
        return OpFailure(node=n.name, target=n.target, source=_src(n),
                         inputs=inputs, best=self.show_term(best), considered=considered, reason=reason,
                         best_term=to_sexpr(best), inputs_terms=self._input_terms(n),
                         candidates=self._candidates(v), lemmas=stats["lemmas"], iterations=steps)

    def _input_terms(self, n: G.Node) -> dict:
        """The best term of each G_s tensor ``n`` reads, as s-expressions (for reports)."""
        out = {}
        for ref in dict.fromkeys(n.refs()):
            if ref in self.svar:
                out[self.seq_names.show(ref)] = to_sexpr(self.engine.extract(self.svar[ref])[1])
        return out

    def _candidates(self, v: str) -> list[dict]:
        """The cheapest few terms of ``v`` (egglog's variants) with their costs, cheapest first."""
        out = self.engine.run1(f"(extract {v} {culprit.CANDIDATES})")[0]
        found = [_term_from_dag(out.termdag, tid) for tid in out.terms]
        return sorted(({"sexpr": to_sexpr(t), "cost": culprit.term_cost(t)} for t in found),
                      key=lambda c: c["cost"])

    def _retire(self, remaining, needed):
        """A fresh e-graph holding only what the remaining operators can use: each live G_s
        tensor as its clean terms.  Per-step cost follows the e-graph's size (egglog rebuilds
        changed tables in full), so this keeps the cost per operator flat in model depth.
        Dropping facts can only lose proofs, never make one, and ``run`` decides a failure found
        after retiring again with every fact kept."""
        read = {p.node for p in self.checked_outputs}
        read.update(ref for n in remaining if n.name in needed and n.name not in self.svar for ref in n.refs())
        live = {v for k, v in self.svar.items() if k.split("#")[0] in read}
        kept, stack = {}, list(live)
        while stack:
            v = stack.pop()
            if v in kept or v not in self.present:
                continue
            if self.engine.is_clean(v):
                terms = self._clean_terms(v)
                shapes = [c for c in self.sfacts[v] if c.startswith("(set ")]
                kept[v] = [f"(let {v} {terms[0]})"] + [f"(union {v} {t})" for t in terms[1:]] + shapes
            else:             # not proven yet (a deferred op, an output of a multi-output op)
                kept[v] = self.sfacts[v]
                stack.extend(SVAR.findall(" ".join(kept[v])))
        self.engine.reset()
        self.window.reset()
        self.present = set()
        for v, facts in kept.items():
            self.sfacts[v] = facts
            self.sleaves[v] = leaves_in(" ".join(facts))
        self.retired += 1

    def _clean_terms(self, v: str) -> list[str]:
        """``v``'s cheapest clean terms, cheapest first."""
        out = self.engine.run1(f"(extract {v} {CLEAN_VARIANTS})")[0]
        found = (_term_from_dag(out.termdag, tid) for tid in out.terms)
        return [to_sexpr(t) for t in found if is_clean(t)]

    def _grows(self) -> bool:
        before = self.engine.size()
        self.engine.run1(STEP)
        return self.engine.size() > before

    def _finish(self, res: Result):
        """The output relation: for every checked output, a clean term over what the distributed
        program returns (and the tensors the spec names as given) -- nothing else may appear in
        a certificate, however the operator-by-operator relations went.  Expectations are decided
        first, on values (e-graph equality with the spec's terms)."""
        allowed = self._certificate_leaves()
        self.engine.add(*self.window.commands(allowed))
        self.engine.add(*(f"(certleaf (Gd {str_lit(k)}))" for k in sorted(allowed)))
        checked = []
        for name, rel in self.spec.expect.items():
            pname, node = self._expect_target(name)
            if node not in self.svar:
                raise CheckInputError(f"[expect] names {name!r}, which is not a checked output of the sequential graph")
            ok = True
            for t in self._relation_terms(rel, pname, f"[expect] {name!r}"):
                text = self._term_of(t, f"[expect] {name!r}")
                mismatch = self._shape_mismatch(parse_sexpr(text), self.seq.node(node).val) if rel.term else None
                if mismatch:         # an explicit term must have the output's shape
                    raise CheckInputError(f"[expect] {name!r}: the relation {rel} {mismatch}")
                tv = self._new_svar(text)
                self._bring(tv)
                self._bring(self.svar[node])
                if not self._prove_equal(self.svar[node], tv):
                    ok = False
            checked.append((name, pname, str(rel), ok))
        # certificates after the expectations: a proven relation (the concat of the ranks'
        # gradients) is then in the e-class and is the term shown when it is the cheapest
        for p in self.checked_outputs:
            v = self.svar.get(p.node)
            if v is None:
                raise CheckInputError(f"output {p.name!r} of the sequential graph was not related (its node "
                                      f"{p.node} is not a tensor the checker understands)")
            self._bring(v)
            found = self._certify(v, allowed)
            if found is None or isinstance(found, Outcome):
                res.status, res.failure = "fails", self._not_returned(p, v, allowed)
                if found is not None:
                    res.status, res.failure.reason = "unknown", f"limit: {found.limit} (output {p.name})"
                break
            term, _ = found
            mismatch = self._shape_mismatch(term, self.seq.node(p.node).val)
            if mismatch:
                res.status = "internal-error"
                res.failure = OpFailure(node=p.node, target=self.seq.node(p.node).target,
                                        source=_src(self.seq.node(p.node)), inputs={}, best=self.show_term(term),
                                        considered=sorted({self.show_term(l) for l in _leaves(term)}),
                                        reason=f"internal soundness error: the certificate {mismatch}")
                break
            res.relations[p.name] = self.show_term(term)
            res.certificates[p.name] = to_sexpr(term)
        for name, key, rel, ok in checked:
            res.expectations.append((name, rel, res.relations.get(key, "?"), ok))
            if not ok and res.status == "refines":
                res.status = "fails"

    def _certificate_leaves(self) -> set[str]:
        """G_d tensors a certificate may name: every rank's outputs, the given tensors, and the
        ranks' tensors of the name an [outputs] check entry gives an inner G_s tensor (the spec
        then names the end of a region in both programs, as [cut] names its start)."""
        keys = set()
        outputs = {p.name for p in self.seq.outputs} | {p.node for p in self.seq.outputs}
        inner = [c for c in self.spec.check or () if c not in outputs]
        for r, g in enumerate(self.dist.ranks):
            for p in g.outputs:
                keys |= leaves_in(self.dvar[r].get(p.node, ""))
            for c in inner:
                node = self.dist_names[r].node(c)
                if node is not None:
                    keys |= leaves_in(self.dvar[r].get(node, ""))
        for name, rel in self._given_tensors().items():
            for t in self._relation_terms(rel, name, f"spec {name!r}"):
                keys |= leaves_in(self._term_of(t, f"spec {name!r}"))
        return keys

    def _certify(self, v: str, allowed: set[str]):
        """(term, cost) of a clean term of ``v`` over ``allowed`` leaves, running the lemmas (and
        widening to all of G_d) until one is found: None if there is none, an Outcome when a
        limit was hit first."""
        def goal():
            self.engine.run1(CERTIFY)
            return self.engine.holds(f"(cert {v})")
        out = self.engine.saturate(goal, self.limits)
        if out.status != "reached" and self._widen():
            out = self.engine.saturate(goal, self.limits)
        if out.status == "reached":
            return self.engine.certificate(v, allowed)
        return out if out.status == "limit" else None

    def _not_returned(self, p: G.Port, v: str, allowed: set[str]) -> OpFailure:
        """The failure for an output whose value the distributed program does not return."""
        n = self.seq.node(p.node)
        cost, best = self.engine.extract(v)
        returned = sorted(self.show_leaf(k) for k in allowed)
        if cost < BIG:
            why = (f"its relation {self.show_term(best)} names tensors the distributed program computes "
                   f"but does not return")
        else:
            why = "it has no clean term at all"
        return OpFailure(node=p.node, target=n.target, source=_src(n), inputs={}, best=self.show_term(best),
                         best_term=to_sexpr(best), considered=sorted({self.show_term(l) for l in _leaves(best)}),
                         reason=f"output {p.name}: {why} (returned: {', '.join(returned[:8])}"
                                f"{' ...' if len(returned) > 8 else ''})")

    def _shape_mismatch(self, term, val) -> str | None:
        """Why a certificate's shape or dtype differs from its G_s tensor's, or None."""
        if not isinstance(val, G.TensorMeta):
            return None
        solver = self.engine.dims

        def leaf(key):
            r, node = key.split(".", 1)
            r = int(r[1:])
            base, _, i = node.partition("#")
            base = base.split(":")[0]       # a lowering's helper (mean's <node>:sum) has its node's shape
            meta = self.dist.ranks[r].node(base).val
            meta = meta[int(i)] if i else meta
            return tuple(self._canonical_size(s, r) for s in meta.shape), meta.dtype

        def size(d):
            value = solver.value(d)
            if value is None:
                raise EvalError(f"size {to_sexpr(d)} is not a size expression")
            return value

        def same(a, b):
            a, b = sympy.sympify(a), sympy.sympify(b)
            return sympy.expand(a - b) == 0 or (solver.proves_le(a, b) and solver.proves_le(b, a))

        want = tuple(self._canonical_size(s, "seq") for s in val.shape)
        try:
            shape, dtype = clean_meta(term, leaf, size, same)
        except EvalError as e:
            return f"{self.show_term(term)} is ill-shaped ({e})"
        if len(shape) != len(want) or not all(same(a, b) for a, b in zip(shape, want)):
            return f"has shape {list(shape)} but the sequential tensor has {list(want)}"
        if dtype is not None and dtype != val.dtype:
            return f"has dtype {dtype} but the sequential tensor has {val.dtype}"
        return None

    def _prove_equal(self, a: str, b: str) -> bool:
        return self._saturate_equal(a, b) or (self._widen() and self._saturate_equal(a, b))

    def _saturate_equal(self, a: str, b: str) -> bool:
        return self.engine.saturate(lambda: self.engine.equal(a, b), self.limits).status == "reached"

    # -- display ---------------------------------------------------------------------------
    def show_leaf(self, key: str) -> str:
        """``r0.mm_1`` -> ``r0.out`` when the node carries a port name."""
        rank, node = key.split(".", 1)
        r = int(rank[1:])
        base = node.split("#")[0]
        return f"r{r}.{self.dist_names[r].show(base)}" + (f"[{node.split('#')[1]}]" if "#" in node else "")

    def show_term(self, t) -> str:
        if not isinstance(t, tuple):
            return str(t)
        head = t[0].name if isinstance(t[0], Var) else str(t[0])
        args = t[1:]
        if head == "Gd":
            return self.show_leaf(args[0])
        if head == "Gs":
            return f"seq.{args[0]}"
        if head in ("Cons", "Nil"):
            return ", ".join(self.show_term(x) for x in _list_items(t))
        if head in ("concat",):
            return f"concat({self.show_term(args[0])}, dim={args[1]})"
        if head in ("rsum", "rmax"):
            return f"{'sum' if head == 'rsum' else 'max'}({self.show_term(args[0])})"
        if head == "DLit":
            return str(args[0])
        if head in ("unary", "scalar", "binary", "opaque"):
            name = str(args[0]).split("|")[0]
            rest = [self.show_term(a) for a in args[1:]]
            return f"{name}({', '.join(rest)})"
        return f"{head}({', '.join(self.show_term(a) for a in args)})"


def _unsupported_key(res: L.NoSemantics) -> str:
    if isinstance(res, L.Refused):
        return f"{res.op} called with {res.why} (the term language cannot express it)"
    return res.op


def _meta_text(v) -> str:
    return f"{v.dtype}{list(v.shape)}" if isinstance(v, G.TensorMeta) else "no tensor"


def _src(n: G.Node) -> str | None:
    return str(n.source) if n.source else None


def _list(items) -> str:
    out = "(Nil)"
    for x in reversed(items):
        out = f"(Cons {x} {out})"
    return out


def _list_items(t):
    out = []
    while isinstance(t, tuple) and isinstance(t[0], Var) and t[0].name == "Cons":
        out.append(t[1])
        t = t[2]
    return out


def _leaves(t):
    if isinstance(t, tuple):
        if isinstance(t[0], Var) and t[0].name == "Gd":
            yield t
        else:
            for a in t[1:]:
                yield from _leaves(a)
