"""Ranks that run the same graph up to their rank constants, grouped into classes (issue 28, item 2).

A rank's *canonical form* is its graph with node names replaced by their positions and every
*rank constant* taken out into a list beside it: the number literals in operator arguments (a
vocab shard's offset ``rank * rows``, a slice's start, a scale), which process group an argument
names (its size stays in the form; its name, members and this rank's index in it are constants),
and the rank's random stream (seed and generator state) when its graph draws.  Everything else is the form: targets,
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
from entangle_py.ir.ops import RANDOM_OPS


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
    if stream is not None and any(n.target in RANDOM_OPS for n in g.nodes):    # a stream no draw reads is no constant
        constants.append(("random stream", (stream.seeded, stream.seed, stream.state)))
    return form, constants


def _node_form(n: G.Node, arg) -> tuple:
    return (n.target,
            tuple(arg(a, f"node {n.name} arg {k}") for k, a in enumerate(n.args)),
            tuple((key, arg(v, f"node {n.name} arg {key}")) for key, v in sorted(n.kwargs.items())),
            repr(G.encode_val(n.val)))


def rank_classes(bundle: G.Bundle) -> list[RankClass]:
    """The bundle's ranks grouped by canonical form, then split where a number literal's values
    over a group's members are neither one value nor affine in the rank (``c = a * rank + b``, as
    a shard's offset is): a replica scaling by 3 where the others scale by 1 is a class of its
    own.  Classes in order of their first rank."""
    streams = rng_streams(bundle) or {}
    forms: dict[tuple, list[tuple[int, list]]] = {}
    form_of: dict[int, tuple] = {}
    for g in bundle.ranks:
        form, constants = canonical_form(g, streams.get(g.rank))
        forms.setdefault(form, []).append((g.rank, constants))
        form_of[g.rank] = form
    groups = [part for members in forms.values() for part in _split(members)]
    groups.sort(key=lambda members: members[0][0])
    first = groups[0] if groups else None
    classes = []
    for members in groups:
        ranks = tuple(r for r, _ in members)
        rep = members[0][1]
        varying = tuple((where, tuple(c[k][1] for _, c in members))
                        for k, (where, _) in enumerate(rep)
                        if any(c[k][1] != rep[k][1] for _, c in members))
        differs = None if members is first else _difference(bundle, first, members, form_of)
        classes.append(RankClass(ranks, varying, differs))
    return classes


def _split(members: list[tuple[int, list]]) -> list[list[tuple[int, list]]]:
    """Members of one form, split by the first number literal whose values are not rank constants."""
    for k, (where, _) in enumerate(members[0][1]):
        values = [c[k][1] for _, c in members]
        if not _is_number(values[0]) or _affine([r for r, _ in members], values):
            continue
        parts: dict = {}
        for m in members:
            parts.setdefault(m[1][k][1], []).append(m)
        return [p for part in parts.values() for p in _split(part)]
    return [members]


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _affine(ranks: list[int], values: list) -> bool:
    """Whether values[i] = a * ranks[i] + b for one a and b (one value: a = 0)."""
    from fractions import Fraction
    if not all(_is_number(v) and v == v for v in values):    # v == v: not nan
        return False
    if len(set(values)) == 1:
        return True
    try:
        v = [Fraction(x) for x in values]
    except (OverflowError, ValueError):     # inf
        return False
    a = (v[1] - v[0]) / (ranks[1] - ranks[0])
    return all(v[i] == v[0] + a * (ranks[i] - ranks[0]) for i in range(len(v)))


def _difference(bundle, first, members, form_of) -> str:
    """Where a class departs from the first one: its graph, or the literals that split it off."""
    a, b = bundle.rank(first[0][0]), bundle.rank(members[0][0])
    if form_of[a.rank] != form_of[b.rank]:
        return first_difference(a, b, (form_of[a.rank], form_of[b.rank]))
    ca, cb = first[0][1], members[0][1]
    diffs = [f"{where} = {vb!r} where rank {a.rank} has {va!r}"
             for (where, va), (_, vb) in zip(ca, cb) if _is_number(va) and va != vb]
    return "; ".join(diffs[:3]) + (f" (+{len(diffs) - 3} more)" if len(diffs) > 3 else "")


def first_difference(a: G.RankGraph, b: G.RankGraph, forms=None) -> str:
    """Where rank b's canonical form first departs from rank a's, in words (``forms``: theirs,
    where the caller has them)."""
    fa, fb = forms or (canonical_form(a)[0], canonical_form(b)[0])
    for k, (x, y) in enumerate(zip(fa[0], fb[0])):
        if x != y:
            n = b.nodes[k]
            at = f" at {n.source.file}:{n.source.line}" if n.source else ""
            return (f"operator {k} of rank {b.rank}: {n.name} = {n.target}{at}, where rank {a.rank} has "
                    f"{a.nodes[k].name} = {a.nodes[k].target}" + ("" if x[0] != y[0] else " with other arguments"))
    if len(fa[0]) != len(fb[0]):
        return f"rank {b.rank} has {len(fb[0])} operators, rank {a.rank} {len(fa[0])}"
    for kind, pa, pb in (("inputs", a.inputs, b.inputs), ("outputs", a.outputs, b.outputs)):
        na, nb = [p.name for p in pa], [p.name for p in pb]
        if na != nb:
            only_b, only_a = [n for n in nb if n not in na], [n for n in na if n not in nb]
            return (f"rank {b.rank}'s {kind} " + (f"{', '.join(only_b)}" if only_b else "(in another order)")
                    + (f" where rank {a.rank} has {', '.join(only_a)}" if only_a else ""))
    for name, x, y in zip(["inputs", "outputs", "symbols", "guards"], fa[1:], fb[1:]):
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
