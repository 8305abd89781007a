"""Where a failure is in the distributed program: the facts a report needs to point at it.

Runs once a check has its verdict, on the checker's state; it reads the e-graph (``check``
queries only, which add nothing) and the graphs, and never changes a verdict.

* **Locations.**  Every G_s operator and G_d tensor a report names gets a structured location
  (program, rank, node, file, line, function, code, ATen target) and, in a joint graph, its phase:
  ``backward`` when it is computed from a ``tangent:*`` input, else ``forward``.
* **Producers.**  The G_d operators that compute the tensors in the failure's best term.
* **Culprits.**  The failing G_s operator's best term is what the distributed program would have to
  compute for it.  Each piece of it with the operator's own head (``mm`` for an ``mm``; the parts of
  a ``concat(mm(...) over ranks)``) is aligned with the G_d operators of that head that read its
  tensors; the best-aligned one is the *counterpart*, and where the two differ -- a G_d tensor read
  where the sequential program needs another value, which the e-graph does not prove equal -- is a
  *divergence*: the G_d operator reading it and the one producing it, with their source lines.
  A backward all-reduce that should not be there shows up as ``all_reduce_1 = sum over ranks of
  tangent:out`` read where ``r0.tangent:out`` is needed.
* **Plan entries.**  A DTensor program's layouts come from its ``parallelize_module`` plan, not
  from the forward code the graph's sources point at: when a producer or culprit runs inside a
  module the plan parallelized, the plan entry (its style and line) is named with it.
* **Neighbourhood.**  Small subgraphs around the failure in G_s and G_d (drawn by ``--html``,
  listed by ``entangle explain``).
"""
from __future__ import annotations

import json

from entangle_py.check import readable as R
from entangle_py.check.names import split_key
from entangle_py.ir import graph as G
from entangle_py.ir import bundle_meta
from entangle_py.semantics import terms as T

CANDIDATES = 5          # best terms extracted for a failing operator (explain shows them)
_ALIGN_DEPTH = 6        # G_d definitions unfolded while aligning a piece with its counterpart
_UPSTREAM = 4           # operators a counterpart may be above the tensors of the best term
_MAX_COUNTERPARTS = 40  # G_d operators tried per piece and rank
_SIGNED = ("unary", "binary", "scalar", "iscalar", "reduce", "opaque")


def term_cost(t) -> int:
    """The extraction cost of a parsed term (``semantics.terms`` tuples): constructor costs plus 1
    per literal (a string, an integer), summed -- egglog's own cost of the same term."""
    if not isinstance(t, tuple):
        return 1
    c = T.BY_NAME.get(t[0].name if isinstance(t[0], T.Var) else str(t[0]))
    return (c.cost if c else 1) + sum(term_cost(a) for a in t[1:])


def key_node(key: str) -> tuple[int, str]:
    """``r1.mm_3#0`` -> (1, 'mm_3'): the rank and the graph node a G_d leaf belongs to."""
    rank, node = split_key(key)
    return rank, node.split("#")[0].split(":")[0]


class Provenance:
    """Locations and phases of nodes of both programs, for one checker."""

    def __init__(self, checker):
        self.c = checker
        self.joint = any(p.name.startswith("tangent:") for p in checker.seq.inputs) or any(
            p.name.startswith("tangent:") for g in checker.dist.ranks for p in g.inputs)
        self._backward: dict = {}

    def _graph(self, rank):
        return self.c.seq if rank is None else self.c.dist.ranks[rank]

    def phase(self, rank, node) -> str | None:
        if not self.joint:
            return None
        if rank not in self._backward:
            g = self._graph(rank)
            seen = {p.node for p in g.inputs if p.name.startswith("tangent:")}
            for n in g.nodes:           # topological order
                if not n.is_placeholder and any(r in seen for r in n.refs()):
                    seen.add(n.name)
            self._backward[rank] = seen
        return "backward" if node in self._backward[rank] else "forward"

    def name(self, rank, node) -> str:
        """The stable name a report uses (a port name where the node carries one)."""
        names = self.c.seq_names if rank is None else self.c.dist_names[rank]
        return names.show(node)

    def location(self, rank, node) -> dict:
        g = self._graph(rank)
        n = g.node(node) if g.has(node) else None
        src = n.source if n is not None else None
        loc = {"program": "seq" if rank is None else "dist", "rank": rank, "node": node,
               "name": self.name(rank, node),
               "target": n.target if n is not None else None,
               "file": src.file if src else None, "line": src.line if src else None,
               "function": src.fn if src else None, "code": src.code if src else None,
               "phase": self.phase(rank, node) if n is not None else None}
        if n is not None and n.is_placeholder:
            loc["input"] = True
        return loc

    def leaf(self, key: str) -> dict:
        """A G_d tensor (``r0.mm_1``): its display name and where it is computed."""
        rank, node = key_node(key)
        loc = self.location(rank, node)
        return {**loc, "key": key, "display": self.c.show_leaf(key)}


# ----------------------------------------------------------------------------- culprits

def _signature(t):
    """A term's head, with the op name for the generic heads (``binary add``); constants an op
    name carries (dropout's p, masked_fill's value) are left out, so that an op with the wrong
    constant still counts as the counterpart, and the constant as where it differs."""
    h = R.head(t)
    if h in _SIGNED and len(t) > 1 and isinstance(t[1], str):
        op = t[1].split("|")[0].split("#")[0] if h == "opaque" else t[1].split(":")[0]
        return (h, op)
    return (h,)


def _pieces(t, sig) -> list:
    """Maximal subterms of ``t`` with the operator's signature."""
    if not isinstance(t, tuple):
        return []
    if _signature(t) == sig:
        return [t]
    return [p for a in t[1:] for p in _pieces(a, sig)]


def _size(t) -> int:
    return 1 + sum(_size(a) for a in t[1:]) if isinstance(t, tuple) and R.head(t) != "Gd" else 1


class _Aligner:
    def __init__(self, checker):
        self.c = checker
        self._defs: dict[str, list] = {}
        self._equal: dict = {}

    def defs(self, key: str) -> list:
        if key not in self._defs:
            out = []
            for cmd in self.c.dfacts.defn.get(key, ()):
                u = R.parse(cmd)
                if R.head(u) == "union" and len(u) == 3:
                    out.append(u[2])
            self._defs[key] = out
        return self._defs[key]

    def equal(self, a, b) -> bool:
        ta, tb = R.to_text(a), R.to_text(b)
        k = (ta, tb)
        if k not in self._equal:
            self._equal[k] = ta == tb or self.c.engine.equal(ta, tb)
        return self._equal[k]

    def align(self, p, g, owner: str, depth: int):
        """(matched size, divergences) of needed term ``p`` against G_d term ``g`` found inside
        the definition of ``owner``."""
        if p == g:
            return _size(p), []
        hp, hg = R.head(p), R.head(g)
        if hp is None or hg is None:       # literals: an op's constant (dropout p, a dim, ...)
            return 0, [self._div(p, g, owner, None)]
        if hg == "Gd":
            if self.equal(p, g):
                return _size(p), []
            if hp != "Gd" and depth > 0:
                for d in self.defs(g[1]):
                    if _signature(d) == _signature(p) and len(d) == len(p):
                        return self.align(p, d, g[1], depth - 1)
            return 0, [self._div(p, g, owner, g[1])]
        if hp == "Gd" or _signature(p) != _signature(g) or len(p) != len(g):
            if self.equal(p, g):
                return _size(p), []
            return 0, [self._div(p, g, owner, None)]
        score, divs = 1, []
        for a, b in zip(p[1:], g[1:]):
            if not isinstance(a, tuple) or not isinstance(b, tuple):
                if a != b:      # a constant (p, a size, a dim) differs: the whole term is what differs
                    return (0, []) if self.equal(p, g) else (0, [self._div(p, g, owner, None)])
                score += 1
                continue
            s, d = self.align(a, b, owner, depth)
            score += s
            divs += d
        if divs and self.equal(p, g):
            return _size(p), []
        return score, divs

    def _div(self, p, g, owner, producer):
        return {"needed": R.to_text(p), "found": R.to_text(g), "owner": owner, "producer": producer}

    def counterparts(self, piece, sig, rank: int) -> list[str]:
        """G_d tensors of ``rank`` defined with the signature ``sig`` that are computed (within a
        few operators) from a tensor of ``piece``."""
        want = set(R.leaves(piece))
        facts = self.c.dfacts
        prefix = f"r{rank}."
        out = []
        for key in facts.defn:
            if not key.startswith(prefix) or not any(_signature(d) == sig for d in self.defs(key)):
                continue
            frontier, seen, hit = {key}, {key}, False
            for _ in range(_UPSTREAM):
                frontier = {d for k in frontier for d in facts.deps.get(k, ())} - seen
                seen |= frontier
                if frontier & want:
                    hit = True
                    break
            if hit:
                out.append(key)
                if len(out) >= _MAX_COUNTERPARTS:
                    break
        return out


def locate(checker, failure) -> list[dict]:
    """Counterparts of the failing operator in G_d and where they differ from its best terms.

    Every candidate term (the best first) is cut into pieces with the operator's signature; each
    piece is aligned with the G_d operators of that signature that read its tensors, and the best
    alignment over all candidates wins.  When no G_d operator has the signature (the distributed
    program computes another op: floor division for a division), the G_d operators of the same
    ATen op reading the piece's tensors are the counterparts."""
    v = checker.svar.get(failure.node)
    if not failure.best_term or v is None or not checker.sfacts.get(v):
        return []
    defn = R.parse(checker.sfacts[v][0])
    if R.head(defn) != "let":
        return []
    sig = _signature(defn[2])
    terms = [failure.best_term] + [c["sexpr"] for c in failure.candidates if c["sexpr"] != failure.best_term]
    al = _Aligner(checker)
    best = None
    for text in terms:
        term = R.expand(R.parse(text))
        found, scores = [], []
        for piece in _pieces(term, sig) or [term]:
            choice = _align_piece(al, checker, failure, piece, sig)
            if choice is None:
                continue
            scores.append(choice[0][0])
            found.append({"counterpart": choice[1], "piece": R.to_text(piece), "divergences": choice[2]})
        # per piece: a term cut in W per-rank pieces is not W times as good (or bad) as one piece
        if found and (best is None or sum(scores) / len(scores) > best[0]):
            best = (sum(scores) / len(scores), found)
    return best[1] if best else []


def _align_piece(al: _Aligner, checker, failure, piece, sig):
    """(score, counterpart key, divergences) of the best G_d counterpart of one piece, or None."""
    ranks = sorted({key_node(k)[0] for k in R.leaves(piece)}) or list(range(checker.dist.world_size))
    choice = None
    for rank in ranks:
        keys = al.counterparts(piece, sig, rank) if _signature(piece) == sig else []
        same_sig = bool(keys)
        if not keys:
            keys = _same_op_readers(checker, failure, piece, rank)
        for key in keys:
            for d in al.defs(key):
                if same_sig and _signature(d) != sig:
                    continue
                score, divs = al.align(piece, d, key, _ALIGN_DEPTH)
                rank_key = (score - 2 * len(divs), -len(divs))
                if choice is None or rank_key > choice[0]:
                    choice = (rank_key, key, divs)
    return choice


def _same_op_readers(checker, failure, piece, rank: int) -> list[str]:
    """Keys of the G_d nodes of ``rank`` running the failing operator's ATen op on a tensor of
    ``piece`` (what the distributed program computes in its place)."""
    if not checker.seq.has(failure.node):
        return []
    op = checker.seq.node(failure.node).op
    read = {key_node(k)[1] for k in R.leaves(piece) if key_node(k)[0] == rank}
    g = checker.dist.ranks[rank]
    return [f"r{rank}.{n.name}" for n in g.nodes
            if n.op == op and read & set(n.refs()) and f"r{rank}.{n.name}" in checker.dfacts.defn]


def _merge(found, prov: Provenance, show) -> list[dict]:
    """One culprit per place in the program (the same divergence on every rank is one, with the
    ranks listed), counterparts that match fully left out."""
    out: dict = {}
    for f in found:
        rank, node = key_node(f["counterpart"])
        for d in f["divergences"]:
            culprit = d["producer"] or d["owner"]
            crank, cnode = key_node(culprit)
            orank, onode = key_node(d["owner"])
            k = (cnode, onode, _unranked(d["needed"]), _unranked(d["found"]))
            if k in out:
                if crank not in out[k]["ranks"]:
                    out[k]["ranks"].append(crank)
                continue
            producer_def = None
            if d["producer"]:
                defs = _Aligner(prov.c).defs(d["producer"])
                producer_def = R.to_text(defs[0]) if defs else None
            out[k] = {
                "location": prov.location(crank, cnode),
                "reader": prov.location(orank, onode),
                "counterpart": prov.location(rank, node),
                "needed": show(d["needed"]), "needed_sexpr": d["needed"],
                "found": show(d["found"]), "found_sexpr": d["found"],
                "found_definition": show(producer_def) if producer_def else None,
                "found_definition_sexpr": producer_def,
                "ranks": [crank],
            }
    return list(out.values())


def _unranked(text: str) -> str:
    """A term's text with its leaves' ranks dropped: the same divergence on two ranks is one."""
    return R.show(text, lambda k: split_key(k)[1])


# ----------------------------------------------------------------------------- neighbourhoods

_SEQ_NODES, _DIST_NODES = 16, 28


def _subgraph(prov: Provenance, rank, core: list[str], roles: dict, up: int, down: int, cap: int) -> dict:
    g = prov._graph(rank)
    users = g.users()
    keep = list(dict.fromkeys(c for c in core if g.has(c)))
    frontier = list(keep)
    for _ in range(up):
        frontier = [r for n in frontier for r in g.node(n).refs() if r not in keep]
        keep += list(dict.fromkeys(frontier))
    keep += [u for n in list(keep[:len(core)]) for u in users.get(n, []) if u not in keep][:max(0, down * 4)]
    keep = list(dict.fromkeys(keep))[:cap]
    ks = set(keep)
    nodes = [{**prov.location(rank, n), "role": roles.get(n, "context")} for n in keep]
    edges = [[r, n] for n in keep for r in dict.fromkeys(g.node(n).refs()) if r in ks]
    return {"rank": rank, "nodes": nodes, "edges": edges}


def neighbourhood(prov: Provenance, failure, culprits: list, producers: list) -> dict:
    c = prov.c
    seq = _subgraph(prov, None, [failure.node], {failure.node: "failing"}, 2, 1, _SEQ_NODES) \
        if c.seq.has(failure.node) else {"rank": None, "nodes": [], "edges": []}
    # G_d: around the first culprit's counterpart (the rank it is on), else the best term's tensors
    if culprits:
        cu = culprits[0]
        rank = cu["counterpart"]["rank"]
        roles = {cu["counterpart"]["node"]: "counterpart"}
        core = [cu["counterpart"]["node"]]
        path = [x for x in (cu["reader"], cu["location"]) if x["rank"] == rank]
        for x in path:
            core.append(x["node"])
        roles[cu["location"]["node"]] = "culprit"
        leaves = [p["node"] for p in producers if p["rank"] == rank]
    else:
        ranks = sorted({p["rank"] for p in producers}) or [0]
        rank = ranks[0]
        leaves = [p["node"] for p in producers if p["rank"] == rank]
        core, roles = [], {}
    for n in leaves:
        roles.setdefault(n, "in best term")
    core += leaves
    dist = _subgraph(prov, rank, _path_nodes(c.dist.ranks[rank], core), roles, 1, 1, _DIST_NODES)
    return {"seq": seq, "dist": dist}


def _path_nodes(g: G.RankGraph, core: list[str], depth: int = 8) -> list[str]:
    """``core`` and the nodes on a shortest path up from the first to each other one (what
    connects a counterpart to the culprit it reads)."""
    core = [n for n in dict.fromkeys(core) if g.has(n)]
    if len(core) < 2:
        return core
    parent, frontier = {core[0]: None}, [core[0]]
    for _ in range(depth):
        nxt = []
        for x in frontier:
            for r in g.node(x).refs():
                if r not in parent:
                    parent[r] = x
                    nxt.append(r)
        frontier = nxt
    out = list(core)
    for b in core[1:]:
        x = parent.get(b) if b in parent else None
        while x is not None and x != core[0]:
            if x not in out:
                out.append(x)
            x = parent[x]
    return out


# ----------------------------------------------------------------------------- the report's facts

def annotate(checker, res) -> None:
    """Fill ``res.failure.detail`` (location, producers, culprits, neighbourhood) and ``res.gd_nodes``
    (every G_d tensor a report names) -- for the text, JSON, HTML and SARIF reports."""
    prov = Provenance(checker)
    res.world_size = checker.dist.world_size
    res.joint = prov.joint
    names = {}

    def show(t):
        if isinstance(t, str):
            t = R.parse(t)
        for k in R.leaves(t):
            names.setdefault(k, None)
        return R.show(t, checker.show_leaf, checker.dist.world_size)

    f = res.failure
    if f is not None and f.best_term and not f.reason.startswith("internal"):
        detail = {}
        if checker.seq.has(f.node):
            detail["location"] = prov.location(None, f.node)
        detail["best"] = show(f.best_term)
        detail["inputs"] = {k: show(t) for k, t in f.inputs_terms.items()}
        for cand in f.candidates:
            cand["text"] = show(cand["sexpr"])
        producers = [prov.leaf(k) for k in R.leaves(R.parse(f.best_term))]
        detail["producers"] = producers
        try:      # an output not returned is computed right: nothing in G_d differs from it
            found = [] if f.reason.startswith("output ") else locate(checker, f)
            detail["culprits"] = _merge(found, prov, show)
        except Exception as e:     # noqa: BLE001 - a diagnostic must never turn a verdict into a crash
            detail["culprits"] = []
            detail["culprit_error"] = f"{type(e).__name__}: {e}"
        for cu in detail["culprits"]:
            for k in R.leaves(R.parse(cu["found_sexpr"])):
                names.setdefault(k, None)
        detail["neighbourhood"] = neighbourhood(prov, f, detail["culprits"], producers)
        places = [p for p in producers if not p.get("input")]
        places += [loc for cu in detail["culprits"] for loc in (cu["location"], cu["reader"])]
        plans = plan_entries(checker.dist, places)
        if plans:
            detail["plans"] = plans
        f.detail = detail
    elif f is not None and checker.seq.has(f.node):
        f.detail = {"location": prov.location(None, f.node)}
    # every checked operator: where it is, what it reads, the G_d tensors of its relation
    for name, op in res.operators.items():
        if checker.seq.has(name):
            n = checker.seq.node(name)
            op["target"] = n.target
            op["location"] = prov.location(None, name)
            op["args"] = _call_text(n, prov)
            op["reads"] = [prov.name(None, r) for r in dict.fromkeys(n.refs())]
        rel = res.op_relations.get(name)
        if rel:
            op["relation"] = show(rel)
            op["relation_sexpr"] = rel
    for cert in res.certificates.values():
        show(cert)
    for p in getattr(checker, "checked_outputs", ()):
        if p.name in res.outputs and checker.seq.has(p.node):
            res.outputs[p.name]["location"] = prov.location(None, p.node)
    res.gd_nodes = {k: prov.leaf(k) for k in sorted(names)}


def plan_entries(dist: G.Bundle, places: list[dict]) -> list[dict]:
    """The plan entries (``parallelize_module`` styles, recorded at capture) of the modules the
    given G_d locations run in: the entry of the longest module path that holds each."""
    try:
        styles = json.loads(dist.meta.get(bundle_meta.PARALLEL_STYLES) or "{}")
    except ValueError:
        return []
    out = {}
    for loc in places:
        rank, node = loc.get("rank"), loc.get("node")
        if not isinstance(rank, int) or not 0 <= rank < len(dist.ranks) or not dist.ranks[rank].has(node):
            continue
        module = dist.ranks[rank].node(node).module or ""
        held = [k for k in styles if module == k or module.startswith(k + ".")]
        if held:
            k = max(held, key=len)
            if isinstance(styles[k], dict):
                out.setdefault(k, {"module": k, **styles[k]})
    return list(out.values())


def _call_text(n: G.Node, prov: Provenance) -> str:
    def arg(a):
        if isinstance(a, G.Ref):
            return prov.name(None, a.name)
        if isinstance(a, (list, tuple)):
            return "[" + ", ".join(arg(x) for x in a) + "]"
        if isinstance(a, G.TorchConst):
            return f"{a.kind}.{a.value}"
        return repr(a) if isinstance(a, str) else str(a)
    args = [arg(a) for a in n.args] + [f"{k}={arg(v)}" for k, v in n.kwargs.items()]
    return f"{n.target}({', '.join(args)})"
