"""The input relation: how the ranks hold each input of the sequential program, and the spec's
terms over G_d tensors.

``Inputs`` takes each G_s input's relation from the spec, from the DTensor placements capture
recorded, or infers it from shapes (replicate, or a shard along the one differing axis) and
refuses what it cannot infer (exit 2).  ``SpecTerms`` writes a spec term (``concat``, ``sum``,
``slice`` over ``r<k>.<name>`` tensors) as egglog text over the G_d leaves, with its dims and
slice bounds checked against the ranks' shapes.
"""
from __future__ import annotations

import json

from entangle_py.check import spec as S
from entangle_py.check.names import Names, gd_leaf
from entangle_py.check.result import CheckInputError
from entangle_py.check.sizes import Sizes
from entangle_py.ir import graph as G
from entangle_py.ir import bundle_meta
from entangle_py.semantics import lower as L
from entangle_py.semantics.terms import str_lit


def declared_constant(spec: S.Spec, sizes: Sizes, port: str, val, graph) -> str | None:
    """The value of a tensor constant the spec declares ([constants]), as a term, or None."""
    if port in spec.constants and isinstance(val, G.TensorMeta):
        text = L.fill_text(spec.constants[port], val.dtype)
        if text is not None:
            return (f"(cst {str_lit(text)} {L.shape_list(val.shape, lambda s: sizes.canonical(s, graph))} "
                    f"{str_lit(val.dtype)})")
    return None


class Inputs:
    def __init__(self, seq: G.RankGraph, dist: G.Bundle, spec: S.Spec, seq_names: Names, dist_names: list[Names]):
        self.seq, self.dist, self.spec = seq, dist, spec
        self.seq_names, self.dist_names = seq_names, dist_names
        self.inferred: dict = {}     # input -> relation inferred (not given by the spec)
        self.free: list = []         # undeclared tensor constants: free leaves

    def relations(self, needed: set, given: dict) -> dict:
        """Spec relations for the G_s inputs in ``needed`` (nodes a checked output reads) and the
        ``given`` tensors, with missing ones inferred from shapes (``inferred``); undeclared
        tensor constants are ``free`` (related to nothing)."""
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
        inferred = {}
        self.free = []
        for name, rel in given.items():   # cut tensors: inputs of the checked region
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
                self.free.append(pname)
                continue
            rel = self.dtensor_relation(pname) or self.infer_placement(pname, val)
            rels[pname] = rel
            inferred[pname] = rel
        self.inferred = inferred
        return rels

    def dtensor_relation(self, pname: str) -> S.Relation | None:
        """The relation a DTensor program declares for an input by its placements (recorded by
        capture), or None when it holds the input as a plain tensor."""
        text = self.dist.meta.get(bundle_meta.DTENSOR_PLACEMENTS)
        if not text:
            return None
        try:
            placements = json.loads(text)
        except ValueError:
            raise CheckInputError(f"the distributed bundle's {bundle_meta.DTENSOR_PLACEMENTS} is not valid JSON") from None
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

    def infer_placement(self, pname: str, val: G.TensorMeta) -> S.Relation:
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
        if any(not isinstance(d, int) for s in shapes + [seq_shape] for d in s):
            # each capture names its own sizes: x_size0 of the sequential program and of a rank are
            # not one size (a rank's may be its shard of it), so shapes say nothing alike
            raise CheckInputError(
                f"cannot infer how the ranks hold input {pname!r}: its sizes are symbolic (sequential "
                f"{[str(d) for d in seq_shape]}, rank 0 {[str(d) for d in shapes[0]]}), and symbols of different "
                f"captures are not comparable; add it to [inputs] in the spec, e.g. \"{pname}\" = \"shard(0)\" "
                f"or \"replicate\"")
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

    def check_shapes(self, pname: str, rel: S.Relation):
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



class SpecTerms:
    """Spec terms as egglog text over G_d tensors (``dvar``: rank -> node -> expression)."""

    def __init__(self, seq: G.RankGraph, dist: G.Bundle, spec: S.Spec, seq_names: Names,
                 dist_names: list[Names], sizes: Sizes, dvar: list[dict]):
        self.seq, self.dist, self.spec = seq, dist, spec
        self.seq_names, self.dist_names = seq_names, dist_names
        self.sizes, self.dvar = sizes, dvar

    def text(self, t: S.Term, where: str) -> str:
        """egglog text of a spec term over G_d tensors (normalised: ``S.normalize_term``)."""
        if isinstance(t, S.Leaf):
            node = self.node(t, where)
            return self.dvar[t.rank].get(node) or gd_leaf(t.rank, node)
        args = [self.text(a, where) for a in t.args]
        if t.op in ("sum", "max", "mean"):
            return f"(r{t.op} {L.term_list(args)})"
        if t.op == "concat":
            return f"(concat {L.term_list(args)} {t.attr('dim')})"      # dims are non-negative in terms
        if t.op == "slice":
            return f"(slice {args[0]} {t.attr('dim')} {L.dim_term(t.attr('start'))} {L.dim_term(t.attr('end'))})"
        if t.op == "transpose":      # written as the lowering writes it: equal values, equal terms
            return L.transpose_text(args[0], t.attr("dim0"), t.attr("dim1"))
        if t.op == "permute":
            return L.permute_text(args[0], t.attr("dims"))
        if t.op == "reshape":
            return f"(view {args[0]} {L.shape_list(t.attr('shape'), lambda s: s)})"
        if t.op == "neg":       # not clean: a fact about an input, or an expectation decided by equality
            return f'(unary "neg" {args[0]})'
        raise CheckInputError(f"{where}: operator {t.op!r} is not supported in input relations yet")

    def node(self, t: S.Leaf, where: str) -> str:
        if not 0 <= t.rank < self.dist.world_size:
            raise CheckInputError(f"{where}: rank {t.rank} does not exist (world size {self.dist.world_size})")
        node = self.dist_names[t.rank].node(t.name)
        if node is None:
            raise CheckInputError(f"{where}: rank {t.rank} has no tensor named {t.name!r}")
        return node

    def normalize(self, t: S.Term, where: str) -> S.Term:
        """An explicit relation with its dims and slice bounds checked against the ranks' shapes
        and written out (``S.normalize_term``); exit 2 on what the term language cannot say."""
        def shape_of(leaf):
            val = self.dist.ranks[leaf.rank].node(self.node(leaf, where)).val
            if not isinstance(val, G.TensorMeta):
                raise CheckInputError(f"{where}: r{leaf.rank}.{leaf.name} is not a tensor")
            return tuple(self.sizes.canonical(s, leaf.rank) for s in val.shape)

        def le(a, b):
            return self.sizes.le(a, b)
        try:
            return S.normalize_term(t, shape_of, where, le)[0]
        except S.SpecError as e:
            raise CheckInputError(str(e)) from None

    def relation_terms(self, rel: S.Relation, name: str, where: str | None = None) -> list:
        """The spec's relation for G_s tensor ``name`` as clean terms (dims normalised by its
        number of dims)."""
        node = self.seq_names.node(name)
        val = self.seq.node(node).val if node is not None else None
        ndim = len(val.shape) if isinstance(val, G.TensorMeta) else None
        if rel.term is not None:
            return [self.normalize(rel.term, where or f"relation for {name!r}")]
        try:
            return S.relation_terms(rel, name, self.dist.world_size, self.spec.mesh, ndim=ndim)
        except S.SpecError as e:
            raise CheckInputError(str(e)) from None

    def meta(self, t: S.Term):
        """(shape, dtype) of a spec term over G_d tensors, or None when not a concat of leaves."""
        if isinstance(t, S.Leaf):
            val = self.dist.ranks[t.rank].node(self.dist_names[t.rank].node(t.name)).val
            return (tuple(val.shape), val.dtype) if isinstance(val, G.TensorMeta) else None
        if t.op != "concat" or not t.args:
            return None
        metas = [self.meta(a) for a in t.args]
        if any(m is None for m in metas) or len({m[1] for m in metas}) != 1:
            return None
        d = t.attr("dim", 0) % len(metas[0][0]) if metas[0][0] else None
        if d is None or len({len(m[0]) for m in metas}) != 1:
            return None
        shape = list(metas[0][0])
        shape[d] = sum(m[0][d] for m in metas)
        return tuple(shape), metas[0][1]

    def equal_parts(self, a: S.Term, b: S.Term):
        """Pairs of subterms of two concat terms of one value that are equal because every part
        lines up with its counterpart (same shape and dtype, same concat dim): concat is injective."""
        if not (isinstance(a, S.Call) and isinstance(b, S.Call) and a.op == b.op == "concat"
                and len(a.args) == len(b.args) and self.meta(a) is not None
                and self.meta(a) == self.meta(b)):
            return
        nd = len(self.meta(a)[0])
        if a.attr("dim", 0) % nd != b.attr("dim", 0) % nd:
            return
        pairs = list(zip(a.args, b.args))
        if any(self.meta(x) is None or self.meta(x) != self.meta(y) for x, y in pairs):
            return
        for x, y in pairs:
            if x != y:
                yield x, y
                yield from self.equal_parts(x, y)
