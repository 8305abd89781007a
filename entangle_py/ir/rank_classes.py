"""Ranks that run the same graph up to their rank constants, grouped into classes (issue 28, item 2).

A rank's *canonical form* is its graph with node names replaced by their positions and every
*rank constant* taken out into a list beside it: the number literals in operator arguments (a
vocab shard's offset ``rank * rows``, a slice's start, a scale), which process group an argument
names (its size stays in the form; its name, members and this rank's index in it are constants),
and the rank's random stream (seed and generator state).  Everything else is the form: targets,
the order and wiring of operators, shapes and dtypes, port names, symbols and guards.  Ranks
with equal forms are one class; within a class the constants that differ between members are
listed (where, and each member's value).

This is detection only: every rank is still checked.  docs/scale-out.md says what checking one
rank per class would need to be sound; a replica that differs in anything but its rank
constants (a stale weight it reads, an update it skips) has a form of its own, and one whose
constants differ (a rank-dependent seed) is listed with them.
"""
from __future__ import annotations

from dataclasses import dataclass

from entangle_py.ir import graph as G
from entangle_py.ir.bundle_meta import rng_streams


@dataclass(frozen=True)
class RankClass:
    ranks: tuple[int, ...]
    # rank constants whose values differ between members: (where, (value of each member, in ranks' order))
    varying: tuple[tuple[str, tuple], ...] = ()
    # for a class other than the first: where its representative's graph departs from the first's
    differs: str | None = None

    def to_json(self) -> dict:
        return {"ranks": list(self.ranks), "varying_constants": [{"where": w, "values": [repr(v) for v in vals]}
                                                                 for w, vals in self.varying],
                "differs_from_first_class": self.differs}


def canonical_form(g: G.RankGraph, stream=None) -> tuple[tuple, list[tuple[str, object]]]:
    """(form, constants): the graph with names as positions and rank constants as holes, and the
    constants in order, each with where it stands (``node <name> arg <path>``)."""
    index = {n.name: i for i, n in enumerate(g.nodes)}
    constants: list[tuple[str, object]] = []

    def arg(v, where):
        if isinstance(v, G.Ref):
            return ("ref", index.get(v.name, v.name))
        if isinstance(v, G.TorchConst):
            return ("torch", v.kind, v.value)
        if v is None or isinstance(v, bool):
            return v
        if isinstance(v, (int, float)):
            constants.append((where, v))
            return ("#", type(v).__name__)
        if isinstance(v, str) and v in g.groups:
            members = tuple(g.groups[v])
            constants.append((where, (v, members, members.index(g.rank) if g.rank in members else None)))
            return ("group", len(members))
        if isinstance(v, (list, tuple)):
            return tuple(arg(x, f"{where}[{k}]") for k, x in enumerate(v))
        if isinstance(v, str):
            return ("str", v)
        return ("other", G.encode_arg(v).__repr__())

    nodes = tuple(_node_form(n, arg) for n in g.nodes)
    form = (nodes,
            tuple((p.name, index.get(p.node)) for p in g.inputs),
            tuple((p.name, index.get(p.node)) for p in g.outputs),
            tuple(sorted((k, repr(v)) for k, v in g.symbols.items())),
            tuple(repr(x) for x in g.guards))
    if stream is not None:
        constants.append(("random stream", (stream.seeded, stream.seed, stream.state)))
    return form, constants


def _node_form(n: G.Node, arg) -> tuple:
    return (n.target,
            tuple(arg(a, f"node {n.name} arg {k}") for k, a in enumerate(n.args)),
            tuple((key, arg(v, f"node {n.name} arg {key}")) for key, v in sorted(n.kwargs.items())),
            repr(G.encode_val(n.val)))


def rank_classes(bundle: G.Bundle) -> list[RankClass]:
    """The bundle's ranks grouped by canonical form, classes in order of their first rank."""
    streams = rng_streams(bundle) or {}
    forms: dict[tuple, list[tuple[int, list]]] = {}
    for g in bundle.ranks:
        form, constants = canonical_form(g, streams.get(g.rank))
        forms.setdefault(form, []).append((g.rank, constants))
    classes = []
    first = bundle.ranks[0] if bundle.ranks else None
    for members in forms.values():
        ranks = tuple(r for r, _ in members)
        rep = members[0][1]
        varying = tuple((where, tuple(c[k][1] for _, c in members))
                        for k, (where, _) in enumerate(rep)
                        if any(c[k][1] != rep[k][1] for _, c in members))
        differs = None if ranks[0] == first.rank else first_difference(first, bundle.rank(ranks[0]))
        classes.append(RankClass(ranks, varying, differs))
    return classes


def first_difference(a: G.RankGraph, b: G.RankGraph) -> str:
    """Where rank b's canonical form first departs from rank a's, in words."""
    fa, fb = canonical_form(a)[0], canonical_form(b)[0]
    for k, (x, y) in enumerate(zip(fa[0], fb[0])):
        if x != y:
            n = b.nodes[k]
            at = f" at {n.source.file}:{n.source.line}" if n.source else ""
            return (f"operator {k} of rank {b.rank}: {n.name} = {n.target}{at}, where rank {a.rank} has "
                    f"{a.nodes[k].name} = {a.nodes[k].target}" + ("" if x[0] != y[0] else " with other arguments"))
    if len(fa[0]) != len(fb[0]):
        return f"rank {b.rank} has {len(fb[0])} operators, rank {a.rank} {len(fa[0])}"
    parts = ["inputs", "outputs", "symbols", "guards"]
    for name, x, y in zip(parts, fa[1:], fb[1:]):
        if x != y:
            return f"rank {b.rank}'s {name} differ from rank {a.rank}'s"
    return f"rank {b.rank} and rank {a.rank} differ"     # not reached: their forms differ somewhere


def describe(classes: list[RankClass], limit: int = 3) -> list[str]:
    """One line per class, for the terminal."""
    lines = []
    for c in classes:
        ranks = ", ".join(map(str, c.ranks))
        line = f"rank class {{{ranks}}}: one graph up to rank constants"
        if c.varying:
            shown = "; ".join(f"{w} = {', '.join(map(repr, vals))}" for w, vals in c.varying[:limit])
            line += f"; constants differing: {shown}" + (f" (+{len(c.varying) - limit} more)" if len(c.varying) > limit else "")
        if c.differs:
            line += f"; differs from the first class at {c.differs}"
        lines.append(line)
    return lines
