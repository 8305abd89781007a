"""Repeated blocks (a transformer's layers): recognised, and their facts compared by renaming.

Layer memoization (Scalify's technique; docs/memoization.md has the argument).  A stack repeats
one block: the same operators, arguments, constants and shapes, each block reading the previous
block's output.  ``find_stack`` proposes the blocks of one graph from its operator list (a
heuristic: what it proposes is only a candidate), ``block_map`` the correspondence between block
0 and block k (node to node, and each tensor read from outside the block to its counterpart).
What makes reuse sound is checked on the facts themselves, never on the heuristic: ``Renaming``
maps the names of block 0 (G_s globals, G_s leaves, G_d leaves) to those of block k, and
``same_facts`` requires every fact the proof of block 0 could have used, renamed, to be exactly
the corresponding fact of block k.
"""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from functools import cached_property

from entangle_py.check.names import split_key
from entangle_py.check.window import leaves_in
from entangle_py.ir import graph as G

TOKEN = re.compile(r'\((Gd|Gs) "((?:[^"\\]|\\.)*)"\)|(\$v\d+)')


@dataclass(frozen=True)
class Stack:
    """Blocks of ``period`` consecutive operators from operator index ``start``, ``count`` of them."""
    start: int
    period: int
    count: int

    def block(self, ops: list, k: int) -> list:
        return ops[self.start + k * self.period: self.start + (k + 1) * self.period]

    @property
    def end(self) -> int:
        return self.start + self.count * self.period


def operators(g: G.RankGraph) -> list:
    return [n for n in g.nodes if not n.is_placeholder]


def _shape(n: G.Node) -> str:
    """An operator without the names it reads: target, arguments with every reference a marker,
    constants, result's meta."""
    def strip(a):
        if isinstance(a, G.Ref):
            return "@"
        if isinstance(a, (tuple, list)):
            return tuple(strip(x) for x in a)
        if isinstance(a, dict):
            return tuple(sorted((k, strip(v)) for k, v in a.items()))
        return a
    return repr((n.target, strip(n.args), strip(n.kwargs), n.val))


def find_stack(g: G.RankGraph, min_count: int = 2) -> Stack | None:
    """The longest run of equal consecutive blocks in ``g``'s operator list: operator i and i + p
    alike (``_shape``) and reading alike -- both the same tensor (a mask every block reads), both
    the tensor p operators earlier than the other (the previous block's), or both inputs of the
    same meta (each block's parameters), or an input where the other reads a computed tensor of
    its meta (the first block reads the program's input, the next ones the previous block's
    output).  Largest coverage, then shortest period."""
    ops = operators(g)
    index = {n.name: i for i, n in enumerate(ops)}
    meta = {n.name: n.val for n in g.nodes if n.is_placeholder}
    ids: dict[str, int] = {}
    shapes = [ids.setdefault(_shape(n), len(ids)) for n in ops]
    refs = [list(n.refs()) for n in ops]

    def alike(i, p):
        if shapes[i] != shapes[i + p]:
            return False
        for a, b in zip(refs[i], refs[i + p]):
            if a in meta:
                if meta[a] != (meta[b] if b in meta else ops[index[b]].val):
                    return False
            elif b in meta:
                return False
            elif a != b and index[b] - index[a] != p:
                return False
        return len(refs[i]) == len(refs[i + p])

    best = None
    n = len(ops)
    for p in range(1, n // 2 + 1):
        if best is not None and (n // p) * p <= best.count * best.period:
            continue        # whole blocks of this period cannot cover more than the best
        same = list(map(operator.eq, shapes, shapes[p:]))      # the cheap half of alike (a C loop)
        if best is not None and sum(same) <= best.count * best.period - p:
            continue        # too few alike pairs at this period to cover more than the best
        i = 0
        while i + p < n:
            if not same[i] or not alike(i, p):
                i += 1
                continue
            a = i
            while i + p < n and alike(i, p):
                i += 1
            count = (i - a) // p + 1
            if count >= min_count and (best is None or count * p > best.count * best.period):
                best = Stack(a, p, count)
    return best


def block_map(g: G.RankGraph, stack: Stack, k: int) -> dict[str, str] | None:
    """Block 0's node names -> block k's: its operators, and what they read from outside the
    block (the previous block's output, parameters, shared tensors).  None when the reading is
    not one-to-one."""
    ops = operators(g)
    b0, bk = stack.block(ops, 0), stack.block(ops, k)
    m = {x.name: y.name for x, y in zip(b0, bk)}
    inside = set(m)
    for x, y in zip(b0, bk):
        ra, rb = list(x.refs()), list(y.refs())
        if len(ra) != len(rb):
            return None
        for a, b in zip(ra, rb):
            if a in inside:
                if m[a] != b:
                    return None
            elif m.setdefault(a, b) != b:
                return None
    if len(set(m.values())) != len(m):       # two names of block 0 for one of block k
        return None
    return m


class Renaming:
    """Block 0's names -> block k's in egglog text: G_d leaf keys, G_s leaf names, G_s globals.
    A name not in the maps stays (a tensor every block shares)."""

    def __init__(self, gd: dict[str, str], gs: dict[str, str], svar: dict[str, str]):
        self.gd, self.gs, self.svar = gd, gs, svar
        self.seen: dict[tuple, tuple] = {}     # every name renamed so far -> its image

    def __call__(self, text: str) -> str:
        def sub(m):
            if m.group(3):
                to = self.svar.get(m.group(3), m.group(3))
                self.seen[("$v", m.group(3))] = ("$v", to)
                return to
            table = self.gd if m.group(1) == "Gd" else self.gs
            name = m.group(2)
            to = table.get(name, name)
            self.seen[(m.group(1), name)] = (m.group(1), to)
            return f'({m.group(1)} "{to}")'
        return TOKEN.sub(sub, text)

    def injective(self) -> bool:
        """One-to-one on the maps, and on every name renamed so far (a name the maps leave as it is
        must not be the image of another)."""
        return all(len(set(t.values())) == len(t) for t in (self.gd, self.gs, self.svar)) and \
            len(set(self.seen.values())) == len(self.seen)


def gd_keys(keys, rank_maps: list[dict[str, str]]) -> dict[str, str]:
    """The G_d leaf keys of block 0 -> block k's, from each rank's node map: ``r1.mm_3#0`` ->
    ``r1.mm_9#0`` (an output index or a lowering helper's ``:suffix`` kept)."""
    out = {}
    for key in keys:
        r, node = split_key(key)
        base = re.split(r"[#:]", node, maxsplit=1)[0]
        to = rank_maps[r].get(base) if r < len(rank_maps) else None
        if to is not None:
            out[key] = f"r{r}.{to}{node[len(base):]}"
    return out


def same_facts(ren: Renaming, facts0, factsk) -> bool:
    """Every fact of block 0, renamed, is the corresponding fact of block k (as multisets)."""
    return sorted(ren(f) for f in facts0) == sorted(factsk)


# ----------------------------------------------------------------------------- memoization

@dataclass
class Plan:
    """The stack in G_s and on each rank of G_d, ``count`` blocks in all of them."""
    seq: Stack
    dist: list[Stack]
    count: int


def plan(seq: G.RankGraph, ranks: list[G.RankGraph], min_ops: int = 0) -> Plan | None:
    """The stack to memoize: alike blocks in G_s and on every rank, reuse skipping at least
    ``min_ops`` G_s operators."""
    s = find_stack(seq)
    if s is None or (s.count - 1) * s.period < min_ops:
        return None
    dist = []
    for g in ranks:
        d = find_stack(g)
        if d is None:
            return None
        dist.append(d)
    count = min([s.count] + [d.count for d in dist])
    return Plan(s, dist, count) if count >= 2 and (count - 1) * s.period >= min_ops else None


def leaf_terms(terms: list[str]) -> list[str]:
    """The relation a block's input is checked under: its clean terms that are single G_d leaves
    (each rank's copy of a replicated value), or else its cheapest clean term."""
    leaves = [t for t in terms if TOKEN.fullmatch(t) and t.startswith("(Gd ")]
    return leaves or terms[:1]


def _pair_gs_names(facts0: list[str], factsk: list[str], into: dict) -> bool:
    """G_s leaf names paired by order of occurrence (a proposal: the facts are compared after
    renaming); False when a name would pair with two."""
    def names(facts):
        return [m.group(2) for f in facts for m in TOKEN.finditer(f) if m.group(1) == "Gs"]
    a, b = names(facts0), names(factsk)
    if len(a) != len(b):
        return False
    return all(into.setdefault(x, y) == y for x, y in zip(a, b))


class Memo:
    """One stack of blocks, checked as docs/memoization.md says: every block's G_s facts defined,
    block 0 proved in an e-graph holding only its own facts (its G_s and G_d operators, and the
    relations of what it reads from outside), then block k = 1, 2, ... reused while its facts are
    block 0's renamed and the relations of what it reads hold in block 0's form."""

    def __init__(self, checker, low, ops: list, p: Plan, needed: set[str]):
        self.c, self.low, self.p, self.needed = checker, low, p, needed
        self.seq_ops = ops                                   # G_s operators (no placeholders)
        self.created: dict[str, list[str]] = {}              # G_s operator -> globals it made
        self.to_prove: dict[str, str] = {}                   # G_s operator -> global to relate
        self.keys_made: dict[str, list[str]] = {}            # G_s operator -> svar keys it set
        self.proven: dict[str, list[str]] = {}               # G_s global -> its clean terms
        self.boundary: dict[str, list[str]] = {}             # outside global -> terms it is checked under
        self.own: dict[str, list[str]] = {}                  # block 0's global -> its facts, while restarted

    def as_input(self, node: str) -> bool:
        """A G_s placeholder, or a tensor the spec gives ([cut], an inner [inputs] entry): an input
        of the block, related by its facts."""
        return self.c.seq.node(node).is_placeholder or node in self.given

    @cached_property
    def given(self) -> set[str]:
        return {self.c.seq_names.node(name) for name in self.c._given_tensors()}

    # -- block k's names --------------------------------------------------------------------
    def renaming(self, k: int) -> Renaming | None:
        c, p = self.c, self.p
        ms = block_map(c.seq, p.seq, k)
        if ms is None:
            return None
        svar, gs = {}, {}
        for a, b in ms.items():
            if a in self.created:                  # an operator of block 0
                f0 = [f for u in self.created[a] for f in c.sfacts[u]]
                fk = [f for u in self.created.get(b, []) for f in c.sfacts[u]]
                if len(self.created[a]) != len(self.created.get(b, [])):
                    return None
                for u0, uk in zip(self.created[a], self.created.get(b, [])):
                    if svar.setdefault(u0, uk) != uk:
                        return None
                if not _pair_gs_names(f0, fk, gs):
                    return None
            for suffix in ("", *(f"#{i}" for i in range(8))):
                if a + suffix in c.svar and b + suffix in c.svar:
                    if svar.setdefault(c.svar[a + suffix], c.svar[b + suffix]) != c.svar[b + suffix]:
                        return None
            if c.seq.has(a) and self.as_input(a) and self.as_input(b) and a in c.svar and b in c.svar:
                if not _pair_gs_names(c.sfacts[c.svar[a]], c.sfacts[c.svar[b]], gs):
                    return None
        rank_maps = []
        for r, g in enumerate(c.dist.ranks):
            m = block_map(g, p.dist[r], k)
            if m is None:
                return None
            rank_maps.append(m)
        inside, outside = self.gd_keys0      # the names block 0's facts and boundary terms hold
        names = {*inside, *outside, *(k for terms in self.boundary.values() for k in leaves_in(" ".join(terms)))}
        ren = Renaming(gd_keys(sorted(names), rank_maps), gs, svar)
        return ren if ren.injective() else None

    @cached_property
    def gd_keys0(self) -> tuple[list[str], list[str]]:
        """Block 0's G_d leaves on every rank, and the leaves outside it they read."""
        c = self.c
        inside = set()
        for r, g in enumerate(c.dist.ranks):
            names = {n.name for n in self.p.dist[r].block(operators(g), 0)}
            inside.update(k for k in c.dfacts.shape
                          if k.startswith(f"r{r}.") and re.split(r"[#:]", split_key(k)[1], maxsplit=1)[0] in names)
        outside = sorted({d for k in inside for d in c.dfacts.deps.get(k, ()) if d not in inside})
        return sorted(inside), outside

    def isomorphic(self, ren: Renaming, k: int) -> bool:
        """Block k's facts are block 0's renamed: G_s definitions, G_d shapes and definitions,
        the facts of the G_d leaves block 0 reads from outside, the inputs' relations; and what it
        reads from outside holds the relation block 0 was checked under, renamed."""
        c = self.c
        for a in self.block_ops(0):
            for u in self.created.get(a, ()):
                if ren.svar.get(u) is None or not same_facts(ren, c.sfacts[u], c.sfacts[ren.svar[u]]):
                    return False
        inside, outside = self.gd_keys0
        for key in inside:
            to = ren.gd.get(key)
            if to is None or not same_facts(ren, c.dfacts.shape.get(key, []), c.dfacts.shape.get(to, [])) \
                    or not same_facts(ren, c.dfacts.defn.get(key, []), c.dfacts.defn.get(to, [])):
                return False
        for key in outside:
            to = ren.gd.get(key, key)
            if not same_facts(ren, c.dfacts.shape.get(key, []), c.dfacts.shape.get(to, [])):
                return False
        for v in self.inputs0:            # the G_s inputs block 0 reads: their relations
            to = ren.svar.get(v, v)
            if not same_facts(ren, c.sfacts[v], c.sfacts[to]):
                return False
        for v, used in self.boundary.items():   # computed outside: the relation it was checked under
            to = ren(v)
            have = set(self.proven.get(to, ()))
            if not all(ren(t) in have for t in used) or not same_facts(ren, shape_facts(c.sfacts[v]),
                                                                       shape_facts(c.sfacts[to])):
                return False
        return ren.injective()      # on every name of the facts block 0 was proved from

    def covered(self, k: int) -> bool:
        """Every operator of block k the outputs need has a proved counterpart in block 0."""
        return all(a in self.needed for a, b in zip(self.block_ops(0), self.block_ops(k)) if b in self.needed)

    def block_ops(self, k: int) -> list[str]:
        return [n.name for n in self.p.seq.block(self.seq_ops, k)]

    # -- the run ----------------------------------------------------------------------------
    def run(self) -> tuple[int, int] | None:
        """(blocks proved, blocks reused), with their operators related; None, state as before,
        when block 0 could not be proved on its own facts."""
        c = self.c
        saved_svar, saved_coupled = dict(c.svar), dict(c.coupled)
        count = self.p.count
        region = [n for k in range(count) for n in self.p.seq.block(self.seq_ops, k)]
        for n in region:                 # every block's G_s facts (no proof yet) ...
            if n.name not in self.needed or n.name in c.svar:
                continue                 # ... that the checked outputs need and no spec entry gives
            before, keys = c._n, set(c.svar)
            v = c._define(self.low, n, layout=False)
            self.created[n.name] = [f"$v{j}" for j in range(before + 1, c._n + 1)]
            self.keys_made[n.name] = [k for k in c.svar if k not in keys]
            if v is not None:
                self.to_prove[n.name] = v
        block0 = set(self.block_ops(0))
        made0 = {u for a in block0 for u in self.created.get(a, ())}
        # what block 0 reads from outside: inputs read as inputs by block 1 too (its parameters,
        # shared ones), checked by their relations' facts; the others (the previous block's
        # output: the program's input, or a tensor computed before) by the relation they hold
        m1 = block_map(c.seq, self.p.seq, 1) or {}
        reads = {r for a in block0 for r in c.seq.node(a).refs() if r in c.svar and c.svar[r] not in made0}
        param = {r for r in reads if self.as_input(r) and c.seq.has(m1.get(r, "")) and self.as_input(m1[r])}
        self.inputs0 = sorted({c.svar[r] for r in param})
        computed = sorted({c.svar[r] for r in reads - param} - set(self.inputs0))
        for v in computed:                # what block 0 reads from outside: proven, its terms
            c._bring(v)
            if c.engine.prove_clean(v, c.limits).status != "clean":
                return self._abort(saved_svar, saved_coupled, {})
            self.proven[v] = c._clean_terms(v)
            self.boundary[v] = leaf_terms(self.proven[v])
        saved_facts = {v: c.sfacts[v] for v in computed}
        full = c.window
        self._isolate(computed)
        ok = True
        proved = []
        for a in self.block_ops(0):
            if a in self.to_prove and a in self.needed:
                for u in self.created[a]:    # its window: from its inputs' relations, as in the loop
                    c._relink(u)
                if c.engine.size() > c.policy.window_nodes:
                    self._restart(proved)
                if c._prove(c.seq.node(a), self.to_prove[a], "gd") is not None:
                    ok = False
                    break
                proved.append(self.to_prove[a])
                self.proven[proved[-1]] = c._clean_terms(proved[-1])
        saved_facts.update(self.own)
        for v, facts in saved_facts.items():
            c.sfacts[v] = facts
            c.sleaves[v] = leaves_of(facts)
        c.window = full
        if not ok:
            return self._abort(saved_svar, saved_coupled, block0)
        reused = 0
        for k in range(1, count):
            ren = self.renaming(k)
            if ren is None or not self.isomorphic(ren, k) or not self.covered(k):
                break
            for a in self.block_ops(0):
                v0 = self.to_prove.get(a)
                if v0 is None or a not in self.needed:
                    continue
                vk = ren.svar[v0]
                self.proven[vk] = [ren(t) for t in self.proven[v0]]
                b = self.block_ops(k)[self.block_ops(0).index(a)]
                c.op_relations[b] = self.proven[vk][0]
                c.op_stats[b] = {"status": "reused", "iterations": 0, "seconds": 0.0, "lemmas": {}, "reused_from": a}
            reused += 1
        # the blocks after the last reused one are checked as any operator is
        keep = {a for k in range(reused + 1) for a in self.block_ops(k)}
        for n in region:
            if n.name not in keep:
                for key in self.keys_made.get(n.name, ()):
                    c.svar.pop(key, None)
                for key in list(c.coupled):
                    if key in saved_coupled and key.split("#")[0] == n.name:
                        c.coupled[key] = saved_coupled[key]
        self._retire_proven(keep)
        c.memoized |= keep
        return 1, reused

    def _isolate(self, computed: list[str]):
        """An e-graph holding only block 0's own facts and the relations of what it reads."""
        from entangle_py.check.window import DistFacts, Window
        c = self.c
        inside, outside = self.gd_keys0
        facts = DistFacts()
        for k in sorted(inside + outside, key=lambda k: c.window.order.get(k, -1)):
            facts.declare(k, c.dfacts.shape.get(k, []))
        for k in inside:
            for cmd in c.dfacts.defn.get(k, ()):
                facts.define(k, cmd)
        c.engine.reset()
        c.present = set()
        c.expect_seeded = True           # the spec's output terms are no fact of a block
        c.window = Window(facts, c.policy.window_depth)
        for v in computed:
            terms = self.boundary[v]
            c.sfacts[v] = [f"(let {v} {terms[0]})"] + [f"(union {v} {t})" for t in terms[1:]] + shape_facts(c.sfacts[v])
            c.sleaves[v] = leaves_of(c.sfacts[v])

    def _restart(self, proved: list[str]):
        """As retiring does, inside block 0's e-graph: a fresh one where each global proved so far
        is its clean terms (consequences of block 0's facts, so the facts stay those of step 2)."""
        c = self.c
        for v in proved:
            if v not in self.own:
                self.own[v] = c.sfacts[v]
                terms = self.proven[v]
                c.sfacts[v] = [f"(let {v} {terms[0]})"] + [f"(union {v} {t})" for t in terms[1:]] + shape_facts(c.sfacts[v])
                c.sleaves[v] = leaves_of(c.sfacts[v])
        c.engine.reset()
        c.window.reset()
        c.present = set()

    def _abort(self, saved_svar, saved_coupled, tried) -> None:
        c = self.c
        c.svar.clear()
        c.svar.update(saved_svar)
        c.coupled.clear()
        c.coupled.update(saved_coupled)
        for a in tried:
            c.op_stats.pop(a, None)
            c.op_relations.pop(a, None)
            c._narrow.discard(a)
            c._exhausted.discard(a)
        self._fresh_egraph()
        return None

    def _fresh_egraph(self):
        c = self.c
        c.engine.reset()
        c.window.reset()
        c.present = set()
        c.expect_seeded = False
        c.engine.add(*sorted(c.kept_rank_facts))

    def _retire_proven(self, keep: set[str]):
        """As retiring does: each related global of the kept blocks as its clean terms (its own
        facts kept for deciding a later failure), in a fresh e-graph."""
        c = self.c
        for a in keep:
            v = self.to_prove.get(a)
            if v is None or a not in self.needed:
                continue
            v = c.svar.get(a, v)
            terms = self.proven.get(v)
            if not terms:
                continue
            c.retired_facts[v] = (c.sfacts[v], terms)
            c.sfacts[v] = [f"(let {v} {terms[0]})"] + [f"(union {v} {t})" for t in terms[1:]] + shape_facts(c.sfacts[v])
            c.sleaves[v] = leaves_of(c.sfacts[v])
        self._fresh_egraph()


def shape_facts(facts: list[str]) -> list[str]:
    """A G_s global's facts about its shape and dtype (kept where its definition is replaced by
    its clean terms, as retiring does)."""
    return [f for f in facts if f.startswith("(set ")]


def leaves_of(facts: list[str]) -> set[str]:
    return leaves_in(" ".join(facts))
