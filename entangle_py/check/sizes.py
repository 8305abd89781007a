"""Symbolic sizes across the programs: one name per size, and Z3 over them.

Each capture names its own symbols (``s0``, ``s1``...), so equal names in two graphs mean
nothing.  ``Sizes`` renames every symbol per graph (``seq_s0``, ``r1_s0``) and identifies a rank's
symbol with a sequential one only where an input of both graphs has the two on the same,
unsharded axis.  It gives Z3 (``engine.dims.DimSolver``) every symbol's range and guard under
those names; the engine answers size questions with that solver.

A ``nonzero`` result's row count (an unbacked ``u0``: known only from the values) is named after
the node that computes it (``rows@<graph>@<node>``); in terms it is ``(DRows <that tensor>)``, so
the sizes of two programs' nonzero results are one e-class exactly where their values are.
"""
from __future__ import annotations

from entangle_py.check import spec as S
from entangle_py.engine.dims import DimSolver
from entangle_py.ir import graph as G
from entangle_py.lazy import sympy
from entangle_py.semantics import lower as L
from entangle_py.semantics.terms import str_lit


class Sizes:
    def __init__(self, seq: G.RankGraph, dist: G.Bundle, seq_names, dist_names, rels: dict):
        """``rels``: the input relations (G_s input port -> Relation) that say which axes are
        sharded; ``seq_names``/``dist_names``: port name -> node lookups (``names.Names``)."""
        self._map = _unify(seq, dist, seq_names, dist_names, rels)
        self._rows = {graph: _nonzero_rows(g, graph) for graph, g in [("seq", seq)] + list(enumerate(dist.ranks))}
        self.solver = DimSolver()
        for graph, g in [("seq", seq)] + list(enumerate(dist.ranks)):
            for name, (lo, hi) in g.symbols.items():
                if name in self._rows[graph]:
                    continue        # a term's size (DRows), never an unknown Z3 reasons about
                self.solver.add_symbol(self.canonical(G.symbolic.make_symbol(name), graph).name, lo, hi)
            for guard in g.guards:
                self.solver.add_guard(self.canonical(guard, graph))

    def canonical(self, size, graph):
        """``size`` of ``graph`` ("seq" or a rank) under the checker's symbol names."""
        if isinstance(size, int) or not hasattr(size, "free_symbols") or not size.free_symbols:
            return size
        mapping = {**self._map.get(graph, {}), **self._rows.get(graph, {})}
        prefix = "seq_" if graph == "seq" else f"r{graph}_"
        subs = {sym: mapping.get(sym.name) or G.symbolic.make_symbol(prefix + sym.name) for sym in size.free_symbols}
        return size.xreplace(subs)

    def le(self, a, b) -> bool:
        """a <= b is proven for every size the ranges and guards allow."""
        if isinstance(a, int) and isinstance(b, int):
            return a <= b
        return self.solver.proves_le(sympy.sympify(a), sympy.sympify(b))

    def same(self, a, b) -> bool:
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        a, b = sympy.sympify(a), sympy.sympify(b)
        return sympy.expand(a - b) == 0 or (self.solver.proves_le(a, b) and self.solver.proves_le(b, a))

    def shape_facts(self, var: str, val, graph="seq") -> list[str]:
        """egglog facts giving the e-class ``var`` the rank, sizes and dtype of tensor ``val``."""
        if not isinstance(val, G.TensorMeta):
            return []
        dtype = [f"(set (dtype {var}) {str_lit(val.dtype)})"] if val.dtype else []
        sizes = [self.canonical(s, graph) for s in val.shape]
        # a size counted from values (DRows) is a term over a tensor of the graph: it is the
        # size of the term lowered for the node, not a fact set here
        return [f"(set (ndim {var}) {len(val.shape)})"] + dtype + [
            f"(set (dim {var} {i}) {L.dim_term(s)})" for i, s in enumerate(sizes) if not L.counted(s)]


def _nonzero_rows(g: G.RankGraph, graph) -> dict:
    """Each nonzero's unbacked row count in ``g`` -> its name in the checker (see the module)."""
    return {sym: L.rows_symbol(graph, node) for sym, node in g.nonzero_counts().items()}


def _unify(seq, dist, seq_names, dist_names, rels) -> dict:
    """rank -> {rank symbol name -> sequential symbol} where an input's relation puts a tensor of
    that rank on the same, unsharded axis as the sequential input (a symbol seen against two
    sequential ones stays private)."""
    out = {r: ({}, set()) for r in range(len(dist_names))}
    for pname, rel in rels.items():
        snode = seq_names.node(pname)
        sv = seq.node(snode).val if snode is not None else None
        if not isinstance(sv, G.TensorMeta):
            continue
        for r, name, whole in _parts(rel, pname, len(dist_names), len(sv.shape)):
            dnode = dist_names[r].node(name)
            dv = dist.ranks[r].node(dnode).val if dnode is not None else None
            if not isinstance(dv, G.TensorMeta) or len(sv.shape) != len(dv.shape):
                continue
            m, conflicts = out[r]
            for i, (a, b) in enumerate(zip(sv.shape, dv.shape)):
                if i not in whole or not (getattr(a, "is_Symbol", False) and getattr(b, "is_Symbol", False)):
                    continue
                target = G.symbolic.make_symbol("seq_" + a.name)
                if m.get(b.name, target) != target:
                    conflicts.add(b.name)
                m[b.name] = target
    return {r: {k: v for k, v in m.items() if k not in conflicts} for r, (m, conflicts) in out.items()}


def _parts(rel: S.Relation, pname: str, world: int, ndim: int) -> list[tuple[int, str, set]]:
    """(rank, its tensor's name, the axes it holds whole) for each rank tensor the relation lays
    the sequential tensor on: a placement, every rank's ``pname`` (a sharded axis is not whole);
    an explicit term, only the ranks it names, where it is one tensor or a concat of them (the
    concat axis not whole) -- any other term keeps its ranks' sizes their own."""
    axes = set(range(ndim))
    if rel.term is None:
        sharded = {p.dim % ndim for p in rel.placements if isinstance(p, S.Shard)} if ndim else set()
        return [(r, pname, axes - sharded) for r in range(world)]
    t = rel.term
    if isinstance(t, S.Leaf):
        return [(t.rank, t.name, axes)]
    if isinstance(t, S.Call) and t.op == "concat" and all(isinstance(a, S.Leaf) for a in t.args) and ndim:
        d = t.attr("dim", 0)
        if isinstance(d, int) and -ndim <= d < ndim:
            return [(a.rank, a.name, axes - {d % ndim}) for a in t.args]
    return []
