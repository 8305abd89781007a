"""Random draws: which draws of the distributed program stand for each draw of the sequential one.

A draw is a tensor of its own (``lower.Draw``), never a function of the values it is applied to.
With draws, "G_d refines G_s" means their outputs are equal *in distribution*, shown by a
coupling: a measure-preserving map from G_d's draws to G_s's.  The checker adds each coupling as
one fact (a sequential draw equals a clean term over the ranks' draws) and proves the rest as
usual; a sequential draw without one is a leaf related to nothing, so anything computed from it
fails, naming the draw and why (``Plan.uncoupled``).

**Where a draw comes from.**  Every in-graph draw consumes the rank's default generator
(frontend/rng.py records each rank's seed, the generator's state as the forward starts, the
draws ``build`` made before it, and the draws the forward makes run eagerly: a rank whose graph
drops one of those -- an unused draw -- draws elsewhere in its stream eagerly than compiled).  A draw's *position*: that stream, everything drawn from it
before (build's draws, then the forward's earlier ones) and the draw's own signature.  Two draws:

* different seeds: independent (the usual idealisation of a PRNG: streams of different seeds do
  not overlap);
* same seed and state, the same position: identical (replicas) -- if their signatures differ,
  their samples overlap: correlated;
* same seed and state, one drawn entirely before the other (its position and its own draw are a
  prefix of the other's position): independent, disjoint parts of one stream;
* anything else (another state, positions that may overlap, a rank that never seeds or whose
  graph's draws are not its eager ones): nothing is known, which no coupling may rest on.

**The coupling.**  The k-th draw of G_s pairs with every rank's k-th draw (program order; same
op, parameters and dtype).  The ranks' draws form replica classes (identical positions), and:
(a) one class of the sequential shape: the sequential draw is that class's draw (its replicas
are unioned: r1's draw = r0's); (b) several classes, pairwise independent, whose shapes tile the
sequential shape along one dim (equal on the others) and whose op draws every element
independently: the sequential draw is their concat along that dim, in order of their lowest rank;
(c) otherwise no coupling.  Over all couplings every G_d draw is used once, and two used draws of
different classes must be independent (a coupling whose classes are not is dropped).  A map so
built is measure-preserving: each coupled draw has the distribution of its sequential draw and
the coupled draws are mutually independent, as G_s's draws are.

**Without evidence** (an imported graph, an older bundle) nothing is coupled unless the user
writes ``same_rng`` ([assume] or ``--assume``): the same rule, with ranks that draw the sequential
shape taken as replicas and ranks whose draws tile it as independent streams.  Evidence, where a
bundle has it, always decides: the assumption never overrides what capture recorded.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from entangle_py.check.names import gd_leaf, source
from entangle_py.ir import graph as G
from entangle_py.ir import bundle_meta
from entangle_py.ir import ops
from entangle_py.semantics import lower as L
from entangle_py.semantics.terms import str_lit

ASSUMPTION = "same_rng"


@dataclass(frozen=True)
class Site:
    """One random draw of one program: the tensor ``key`` of node ``node``, the ``index``-th draw."""
    graph: object              # "seq" or a rank
    node: str
    key: str
    index: int
    op: str
    shape: tuple               # canonical sizes
    dtype: str
    params: tuple              # ((name, value), ...): what chooses the distribution
    source: str | None

    @property
    def leaf(self) -> str:
        return f"(Gs {str_lit(self.key)})" if self.graph == "seq" else gd_leaf(self.graph, self.key)

    @property
    def label(self) -> str:
        return self.key if self.graph == "seq" else f"r{self.graph}.{self.key}"

    def describe(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.op.split('.')[1]}({params}) {self.dtype}{list(self.shape)}"


@dataclass(frozen=True)
class Position:
    """Where in its rank's default stream a draw starts (see the module docstring)."""
    seed: int | None
    state: str
    before: tuple        # signatures of everything drawn from the stream before it
    own: tuple           # its own signature
    unknown: str = ""    # why nothing is known of the stream ("" when it is known)


@dataclass(frozen=True)
class Coupling:
    """The sequential draw ``seq`` is ``term`` (a clean term over the ranks' draws)."""
    seq: Site
    classes: tuple       # replica classes (tuples of Sites), in order of their lowest rank
    dim: int | None      # the concat dim of (b); None for one class
    basis: str           # "evidence" | ASSUMPTION
    why: str

    @property
    def term(self) -> str:
        reps = [c[0].leaf for c in self.classes]
        return reps[0] if self.dim is None else f"(concat {L.term_list(reps)} {self.dim})"

    def ordered(self, ranks: list) -> "Coupling":
        """The same coupling with its classes concatenated in the order of ``ranks`` (one rank of
        each class): the ranks' draws are independent and alike, so any order is a coupling of the
        sequential draw; the checker picks the one its data is laid out in.  Itself when ``ranks``
        does not name every class once."""
        idx = [next((i for i, c in enumerate(self.classes) if any(s.graph == r for s in c)), None) for r in ranks]
        if self.dim is None or sorted(i for i in idx if i is not None) != list(range(len(self.classes))) \
                or len(idx) != len(self.classes):
            return self
        return replace(self, classes=tuple(self.classes[i] for i in idx))

    def replica_unions(self) -> list[tuple[str, str]]:
        """(leaf, leaf of its class's first draw) for every replica: what the coupling says of G_d."""
        return [(s.leaf, c[0].leaf) for c in self.classes for s in c[1:]]


@dataclass(frozen=True)
class NoCoupling:
    seq: Site
    why: str


@dataclass
class Plan:
    couplings: list = field(default_factory=list)
    uncoupled: list = field(default_factory=list)
    evidence: bool = False       # the distributed bundle records where its draws come from

    def report(self, show: Callable) -> list[dict]:
        """Each sequential draw for reports, in program order: {draw, op, source, coupling (the
        term in spec syntax, ``show``-n; None when it has none), basis, why}."""
        found = [{"draw": c.seq.key, "op": c.seq.op, "source": c.seq.source, "coupling": show(c.term),
                  "basis": c.basis, "why": c.why} for c in self.couplings]
        found += [{"draw": u.seq.key, "op": u.seq.op, "source": u.seq.source, "coupling": None, "basis": None,
                   "why": u.why} for u in self.uncoupled]
        order = {s.seq.key: s.seq.index for s in self.couplings + self.uncoupled}
        return sorted(found, key=lambda d: order[d["draw"]])


# ----------------------------------------------------------------------------- sites and positions

def signature(n: G.Node) -> tuple:
    """What a random op draws, as far as its stream is concerned: op, shape, dtype, arguments."""
    val = L.draw_meta(n) if n.target in ops.RANDOM_DRAWS else n.val
    shape = tuple(str(d) for d in val.shape) if isinstance(val, G.TensorMeta) else ()
    dtype = val.dtype if isinstance(val, G.TensorMeta) else ""
    args = tuple(repr(a) for a in n.args if not isinstance(a, G.Ref)) + tuple(
        f"{k}={v!r}" for k, v in sorted(n.kwargs.items()) if not isinstance(v, G.Ref))
    return (n.target, shape, dtype, args)


def sites(g: G.RankGraph, graph, canon: Callable) -> tuple[list[Site], list[tuple]]:
    """(the draws of ``g`` whose lowering is a Draw, in program order; the signature of every op
    that consumes the stream, in program order, each site's ``index`` into it)."""
    low = L.Lowerer(g)
    out, sigs = [], []
    for n in g.nodes:
        if n.target not in ops.RANDOM_OPS:
            continue
        sigs.append(signature(n))
        if n.target not in ops.RANDOM_DRAWS or not L.draws_in(low.lower(n)):
            continue
        d = ops.RANDOM_DRAWS[n.target]
        key, val = L.draw_key(n), L.draw_meta(n)
        params = tuple((name, n.args[i] if len(n.args) > i else n.kwargs.get(name, default))
                       for name, i, default in d.params)
        out.append(Site(graph, n.name, key, len(sigs) - 1, n.target, tuple(canon(s) for s in val.shape),
                        val.dtype, params, source(n)))
    return out, sigs


def position(stream: bundle_meta.RngStream, sigs: list, site: Site) -> Position:
    return Position(stream.seed, stream.state, tuple(stream.build) + tuple(sigs[:site.index]), sigs[site.index],
                    _unknown(stream, sigs, site.graph))


def _unknown(stream: bundle_meta.RngStream, sigs: list, rank) -> str:
    """Why nothing is known of where rank ``rank``'s draws come from ("" when it is known)."""
    if not stream.seeded:
        return (f"rank {rank} never seeds its generator, so its draws come from its process's own seed (CPU: "
                f"random per process; CUDA: a fixed default): seed it (torch.manual_seed in build or at import)")
    eager = stream.forward
    if eager is None:
        return f"capture could not run rank {rank}'s forward eagerly to see the draws it makes"
    if len(eager) != len(sigs) or not all(_same_dims(sig[1], sh) for sig, sh in zip(sigs, eager)):
        return (f"rank {rank}'s forward makes {len(eager)} draws run eagerly, of shapes {[list(sh) for sh in eager]}, "
                f"but its graph {len(sigs)}, of shapes {[_shape_text(sig[1]) for sig in sigs]} (the trace drops a draw "
                f"whose result is unused): eager and compiled runs draw from different positions of the stream")
    return ""


def _shape_text(shape: tuple) -> list:
    return [int(d) if d.lstrip("-").isdigit() else d for d in shape]


def _same_dims(graph_shape: tuple, eager_shape: tuple) -> bool:
    """A graph draw's shape (sizes as text) is the eager one (ints); a symbolic size matches any."""
    return len(graph_shape) == len(eager_shape) and all(
        not d.lstrip("-").isdigit() or int(d) == e for d, e in zip(graph_shape, eager_shape))


_CPU_SEED_SPAN = 2 ** 32     # torch's CPU generator (mt19937) is seeded by a seed's low 32 bits


def relation(a: Position, b: Position) -> tuple[str, str]:
    """("same" | "independent" | "unknown", why) of two draws' positions."""
    if a.unknown or b.unknown:
        return "unknown", a.unknown or b.unknown
    if a.seed % _CPU_SEED_SPAN != b.seed % _CPU_SEED_SPAN:
        return "independent", f"seeds {a.seed} and {b.seed}"
    if a.seed != b.seed:     # one stream on CPU (mt19937 keeps a seed's low 32 bits), two on CUDA
        return "unknown", (f"seeds {a.seed} and {b.seed} differ only above their low 32 bits, all a CPU generator "
                           f"keeps: on CPU both draw from one stream")
    if a.state != b.state:
        return "unknown", (f"seed {a.seed} on both, but the generator's state differs as the forward starts "
                           "(the program drew or set it before the forward, beyond what capture sees)")
    if a.before == b.before:
        if a.own == b.own:
            return "same", f"seed {a.seed}, the same position in its stream"
        return "unknown", f"seed {a.seed}: two different draws from the same position overlap"
    if _prefix(a.before + (a.own,), b.before) or _prefix(b.before + (b.own,), a.before):
        return "independent", f"seed {a.seed}: one drawn after the other in one stream"
    return "unknown", f"seed {a.seed}: what was drawn before them differs, so their parts of the stream may overlap"


def _prefix(a: tuple, b: tuple) -> bool:
    return len(a) <= len(b) and b[:len(a)] == a


# ----------------------------------------------------------------------------- the plan

def plan(seq: G.RankGraph, dist: G.Bundle, *, assume: bool, canon: Callable, same: Callable) -> Plan:
    """The couplings of every draw of ``seq`` (see the module docstring).  ``assume``: the user
    wrote same_rng; ``canon(size, graph)`` a size under the checker's names; ``same(a, b)``:
    two sizes are equal for every size the programs allow."""
    seq_sites, _ = sites(seq, "seq", lambda s: canon(s, "seq"))
    ranks = [sites(g, r, lambda s, r=r: canon(s, r)) for r, g in enumerate(dist.ranks)]
    streams = bundle_meta.rng_streams(dist)
    out = Plan(evidence=streams is not None)
    if not seq_sites:
        return out
    positions = {}
    if streams is not None:
        for r, (found, sigs) in enumerate(ranks):
            for s in found:
                positions[s] = position(streams[r], sigs, s)
    for k, s in enumerate(seq_sites):
        decided = _couple(s, k, [found[k] if k < len(found) else None for found, _ in ranks], positions,
                          streams is not None, assume, same)
        (out.couplings if isinstance(decided, Coupling) else out.uncoupled).append(decided)
    if streams is not None:
        _drop_correlated(out, positions)
    return out


def _couple(s: Site, k: int, theirs: list, positions: dict, evidence: bool, assume: bool,
            same) -> Coupling | NoCoupling:
    missing = [r for r, d in enumerate(theirs) if d is None]
    if missing:
        return NoCoupling(s, f"it is the sequential program's random draw #{k + 1}, and rank {missing[0]} makes "
                             f"only {k if k else 'no'} random draw{'' if k == 1 else 's'}")
    for d in theirs:
        if (d.op, d.params, d.dtype) != (s.op, s.params, s.dtype):
            return NoCoupling(s, f"it is {s.describe()}, but rank {d.graph}'s draw in its place is {d.describe()}")
    if evidence:
        return _couple_by_evidence(s, theirs, positions, same)
    if not assume:
        return NoCoupling(s, "the distributed bundle does not record where its ranks' draws come from (an imported "
                             "graph, or a bundle captured before capture recorded it); write [assume] same_rng = true "
                             "(or --assume same_rng) if the ranks that draw its whole shape draw the same values and "
                             "ranks that draw parts of it draw from independent streams")
    whole = [d for d in theirs if _same_shape(d.shape, s.shape, same)]
    classes = (tuple(whole),) if len(whole) == len(theirs) else tuple((d,) for d in theirs) if not whole else None
    if classes is None:
        return NoCoupling(s, "under same_rng: some ranks draw its whole shape and others parts of it")
    return _by_shape(s, classes, ASSUMPTION, "assumed (same_rng): " + (
        f"ranks {_ranks(classes[0])} draw it identically" if len(classes) == 1 else
        f"ranks {_ranks(theirs)} draw its parts from independent streams"), same)


def _couple_by_evidence(s: Site, theirs: list, positions: dict, same) -> Coupling | NoCoupling:
    unknown = [d for d in theirs if positions[d].unknown]
    if unknown:
        return NoCoupling(s, positions[unknown[0]].unknown)
    classes: list[list[Site]] = []
    for d in theirs:
        for c in classes:
            if relation(positions[c[0]], positions[d])[0] == "same":
                c.append(d)
                break
        else:
            classes.append([d])
    classes = tuple(tuple(c) for c in classes)
    for i, a in enumerate(classes):
        for b in classes[i + 1:]:
            rel, why = relation(positions[a[0]], positions[b[0]])
            if rel != "independent":
                return NoCoupling(s, f"ranks {_ranks(a)} and {_ranks(b)} draw it from streams whose parts may "
                                     f"overlap ({why})")
    if len(classes) == 1:
        why = (f"ranks {_ranks(classes[0])} draw it identically ({relation(positions[theirs[0]], positions[theirs[-1]])[1]})"
               if len(theirs) > 1 else f"rank {theirs[0].graph} draws it")
    else:
        why = f"ranks {', '.join(_ranks(c) for c in classes)} draw from independent streams ({_seeds(classes, positions)})"
    return _by_shape(s, classes, "evidence", why, same)


def _by_shape(s: Site, classes: tuple, basis: str, why: str, same) -> Coupling | NoCoupling:
    shapes = [c[0].shape for c in classes]
    if len(classes) == 1:
        if _same_shape(shapes[0], s.shape, same):
            return Coupling(s, classes, None, basis, why)
        return NoCoupling(s, f"{why}, of shape {list(shapes[0])}, not the sequential shape {list(s.shape)}"
                             + (": one draw repeated on parts of the data is not one draw of the whole, whose "
                                "elements are independent" if len(classes[0]) > 1 else ""))
    if not ops.RANDOM_DRAWS[s.op].elementwise:
        return NoCoupling(s, f"{why}, but {s.op} is one whole draw, not elements drawn independently: only one draw "
                             f"of the whole shape stands for it")
    for d in range(len(s.shape)):
        if all(len(sh) == len(s.shape) and all(same(a, b) for i, (a, b) in enumerate(zip(sh, s.shape)) if i != d)
               for sh in shapes) and same(sum((sh[d] for sh in shapes), 0), s.shape[d]):
            return Coupling(s, classes, d, basis, why)
    return NoCoupling(s, f"{why}, of shapes {', '.join(str(list(sh)) for sh in shapes)}, which do not tile the "
                         f"sequential shape {list(s.shape)} along one dim"
                         + (" (each is the whole shape: the sequential program draws once)"
                            if all(_same_shape(sh, s.shape, same) for sh in shapes) else ""))


def _drop_correlated(out: Plan, positions: dict):
    """No two used draws of different classes may be anything but independent: a coupling whose
    draws may overlap with another's is dropped (both are)."""
    used = [(c, cls[0]) for c in out.couplings for cls in c.classes]
    bad: dict[int, str] = {}
    by_seed: dict = {}
    for i, (c, rep) in enumerate(used):
        by_seed.setdefault(positions[rep].seed, []).append(i)
    for group in by_seed.values():
        for x, i in enumerate(group):
            for j in group[x + 1:]:
                (ci, a), (cj, b) = used[i], used[j]
                if ci is cj:
                    continue
                rel, why = relation(positions[a], positions[b])
                if rel != "independent":
                    bad.setdefault(id(ci), f"{a.label} and {b.label} (the draw coupled with {cj.seq.key}) "
                                           f"are not independent ({why})")
                    bad.setdefault(id(cj), f"{b.label} and {a.label} (the draw coupled with {ci.seq.key}) "
                                           f"are not independent ({why})")
    if bad:
        out.uncoupled += [NoCoupling(c.seq, bad[id(c)]) for c in out.couplings if id(c) in bad]
        out.couplings = [c for c in out.couplings if id(c) not in bad]
        out.uncoupled.sort(key=lambda u: u.seq.index)


def _same_shape(a: tuple, b: tuple, same) -> bool:
    return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))


def _ranks(draws) -> str:
    return ", ".join(str(d.graph) for d in draws)


def _seeds(classes, positions) -> str:
    seeds = [positions[c[0]].seed for c in classes]
    if len(set(seeds)) == len(seeds):
        return "seeds " + ", ".join(map(str, seeds))
    return "seeds " + ", ".join(map(str, seeds)) + "; draws of one seed one after the other"
