"""The operator-by-operator refinement loop (Entangle §3-4) and ``entangle check``.

R starts as the input relation.  For each G_s operator in topological order its term over the
already-related inputs is added to the e-graph, the lemmas run until its e-class holds a clean
term (only G_d tensors, data movement and reductions over ranks) or a limit is hit, and the best
term is extracted.  No clean term: refinement fails at that operator.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from entangle_py.check import culprit
from entangle_py.check import random as R
from entangle_py.check import spec as S
from entangle_py.check import state as ST
from entangle_py.check.assumed import assumption_uses
from entangle_py.check.blocks import Memo, plan
from entangle_py.check.coverage import Coverage
from entangle_py.check.distributed import DistProgram
from entangle_py.check.inputs import Inputs, SpecTerms, declared_constant
from entangle_py.check.names import Display, Names, gd_leaf, gd_leaves, list_items, source, split_key
from entangle_py.check.outputs import SVAR, OutputChecks
from entangle_py.check.result import CheckInputError, OpFailure, Result
from entangle_py.check.sizes import Sizes
from entangle_py.check.window import Window, leaves_in
from entangle_py.config import ASSUMPTIONS, Limits, Policy
from entangle_py.engine.egraph import STEP, Engine
from entangle_py.lemmas import load_library
from entangle_py.ir import graph as G
from entangle_py.ir import bundle_meta
from entangle_py.semantics import lower as L
from entangle_py.semantics.terms import BIG, given_input, is_clean, parse_sexpr, str_lit, to_sexpr

__all__ = ["Checker", "CheckInputError", "OpFailure", "Result", "gd_leaf"]

CLEAN_VARIANTS = 32               # terms extracted per proven tensor to find its related G_d tensors


# ----------------------------------------------------------------------------- the checker

class Checker(OutputChecks, Coverage):
    def __init__(self, seq: G.Bundle, dist: G.Bundle, spec: S.Spec, limits: Limits | None = None,
                 lemma_files=(), progress=None, log=None, policy: Policy | None = None, refute=None):
        if seq.world_size != 1:
            raise CheckInputError(f"the sequential bundle has {seq.world_size} ranks; expected 1")
        # the state each program leaves (what it writes in place) is an output of both, checked
        self.state = ST.account(seq.ranks[0], dist.ranks)
        self.seq_bundle = replace(seq, ranks=[self.state.seq])
        self.seq, self.dist, self.spec = self.state.seq, replace(dist, ranks=list(self.state.ranks)), spec
        # (name, relation): the spec's [expect], and the states' (added once inputs are related)
        self.expectations: list[tuple[str, S.Relation]] = list(spec.expect.items())
        self.limits = limits or Limits()
        self.policy = policy or Policy()
        self.progress = progress
        self.log = log or (lambda msg: None)
        self.seq_names = Names(self.seq)
        self.dist_names = [Names(g) for g in self.dist.ranks]
        self.display = Display(self.dist_names)
        self.lib = load_library(lemma_files)
        self.lemma_files = [str(f) for f in lemma_files]
        # A numeric refuter (the pipeline gives oracle.recheck.refuter): refute(checker, node, text)
        # -> a concrete difference between the G_s tensor ``node`` and the clean term ``text`` on
        # random inputs, or None.  Asked only of an [expect] equality the window's lemmas did not
        # prove, before widening: a refuted equality is false, so it ends a search that cannot
        # succeed (the expectation is violated, as a failed search would find), never makes a proof.
        self.refute = refute
        self.refuted: dict[str, str] = {}      # [expect] name -> the difference that refuted it
        self._start()

    def _start(self):
        """The state of one pass of the operator loop: no facts yet (``_run`` makes the e-graph
        once the input relation has named the sizes)."""
        self.svar: dict[str, str] = {}        # G_s node (or node#i) -> egglog expression
        self.sfacts: dict[str, list[str]] = {}   # G_s global -> commands that create it
        self.sleaves: dict[str, set[str]] = {}   # G_s global -> G_d tensors it is related to
        self.present: set[str] = set()           # G_s globals in the e-graph
        # what input relations say between the ranks' tensors (r0.x = r1.x for a replicated x,
        # equal parts of two concats of one value), by input; kept when retiring
        self.rank_facts: dict[str, list[str]] = {}
        self.kept_rank_facts: set[str] = set()
        self.expect_seeded = False             # the [expect] terms' written-out forms are in the e-graph
        self._n = 0
        self.retired = 0                       # times proven facts were retired (a fresh e-graph)
        # retiring replaces a G_s tensor's facts by its clean terms; its own facts are kept here
        # (G_s global -> facts, clean terms) for deciding a failure found after it (_restore)
        self.retired_facts: dict[str, tuple[list[str], list[str]]] = {}
        self.rechecked = False                 # a failure was decided again after _restore
        self.memoized: set[str] = set()        # G_s operators of blocks proved or reused (check/blocks.py)
        self._narrow: set[str] = set()         # G_s operators last tried without all of G_d
        self._exhausted: set[str] = set()      # G_s operators whose attempt a limit on resources ended

    # -- helpers ---------------------------------------------------------------------------
    def _fresh(self) -> str:
        self._n += 1
        return f"$v{self._n}"

    # -- G_s tensors: facts kept so that they can be brought into the e-graph when used -------
    def _new_svar(self, text: str, val=None) -> str:
        """A G_s tensor defined by ``text`` (a term over G_d leaves and other G_s globals)."""
        v = self._fresh()
        self.sfacts[v] = [f"(let {v} {text})"] + self.sizes.shape_facts(v, val)
        self.sleaves[v] = leaves_in(text).union(*(self.sleaves.get(u, ()) for u in SVAR.findall(text)))
        return v

    def _relink(self, v: str):
        """``v``'s G_d tensors again from what its facts name now: the tensors it reads may have
        been related since ``v`` was defined (a block's facts are all defined before its proof)."""
        text = " ".join(self.sfacts[v])
        self.sleaves[v] = leaves_in(text).union(*(self.sleaves.get(u, ()) for u in SVAR.findall(text) if u != v))

    def _add_sfact(self, v: str, text: str):
        """``v`` also equals ``text`` (said before ``v`` is brought into the e-graph)."""
        self.sfacts[v].append(f"(union {v} {text})")
        self.sleaves[v] |= leaves_in(text)

    def _new_input(self, pname: str, val) -> str:
        """The G_s input ``pname``: a leaf, marked given when a user's integer input (terms.given_input)."""
        v = self._new_svar(f"(Gs {str_lit(pname)})", val)
        if given_input(pname, val):
            self.sfacts[v].append(f"(given {v})")
        return v

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

    def _around(self, v: str) -> bool:
        """The G_d connected to the tensors ``v`` is computed from; False when it was there."""
        found = self.window.around(self.sleaves[v])
        self.engine.add(*found)
        return bool(found)

    def _widen(self) -> bool:
        """All of G_d into the e-graph; False when it was all there already."""
        if self.window.complete:
            return False
        self.engine.add(*self.window.everything())
        return True

    # -- input relation --------------------------------------------------------------------
    def input_relations(self) -> dict:
        """Spec relations for G_s inputs, with missing ones inferred from shapes (``inferred``)."""
        self.inputs = Inputs(self.seq, self.dist, self.spec, self.seq_names, self.dist_names)
        rels = self.inputs.relations(self._needed_nodes(), self._given_tensors())
        self.inferred = self.inputs.inferred
        return rels

    def insert_inputs(self, rels: dict):
        """G_s inputs and their relations (into the e-graph when an operator reads them)."""
        for pname in self.inputs.free:
            node = self.seq_names.node(pname)
            val = self.seq.node(node).val
            v = self._new_input(pname, val)
            value = declared_constant(self.spec, self.sizes, pname, val, "seq")
            if value:
                self._add_sfact(v, value)
            self.svar[node] = v
        for pname, rel in rels.items():
            self.inputs.check_shapes(pname, rel)
            node = self.seq_names.node(pname)
            v = self._new_input(pname, self.seq.node(node).val)
            self.svar[node] = v
            terms = self.spec_terms.relation_terms(rel, pname, f"input {pname!r}")
            texts = []
            for t in terms:
                text = self.spec_terms.text(t, f"input {pname!r}")
                if rel.term is not None:     # an explicit term must have the tensor's shape
                    mismatch = self._shape_mismatch(parse_sexpr(text), self.seq.node(node).val)
                    if mismatch:
                        raise CheckInputError(f"input {pname!r}: the relation {rel} {mismatch}")
                self._add_sfact(v, text)
                texts.append(text)
            self.rank_facts[v] = [f"(union {texts[0]} {t})" for t in texts[1:]]
            # concats equal to one tensor (sharded over one mesh dim, replicated over another)
            # have equal parts where the parts line up: r0.w = r2.w for concat(r0.w, r1.w) =
            # concat(r2.w, r3.w).  A sum over ranks says nothing of its parts.
            for t in terms[1:]:
                for a, b in self.spec_terms.equal_parts(terms[0], t):
                    ta, tb = self.spec_terms.text(a, f'input {pname!r}'), self.spec_terms.text(b, f'input {pname!r}')
                    self.sfacts[v].append(f"(union {ta} {tb})")
                    self.rank_facts[v].append(f"(union {ta} {tb})")
                    self.sleaves[v] |= leaves_in(ta) | leaves_in(tb)

    # -- main loop -------------------------------------------------------------------------
    def run(self) -> Result:
        res = self._run()
        res.retired, res.rechecked = self.retired, self.rechecked
        return res

    def _refuted_only(self, res: Result) -> bool:
        """Every operator and output related, and each violated expectation refuted numerically."""
        violated = [name for name, _, _, ok in res.expectations if ok is False]
        return (res.status == "fails" and res.failure is None and bool(violated)
                and all(name in self.refuted for name in violated))

    def _run(self) -> Result:
        res = Result("refines")
        self.refuted = {}
        self.op_relations = res.op_relations
        self.op_stats = res.operators
        res.limits = {"iterations": self.limits.iterations, "enodes": self.limits.nodes,
                      "matches": self.limits.matches, "seconds": self.limits.seconds,
                      "memory_bytes": self.limits.memory_bytes()}
        res.assumptions = [(a, ASSUMPTIONS[a]) for a in self.spec.assume]
        res.capture_notes = bundle_meta.capture_notes(self.dist)
        self.no_semantics: dict[str, list] = {}
        t0 = time.perf_counter()
        rels = self.input_relations()
        self._expect_states(rels)
        self.sizes = Sizes(self.seq, self.dist, self.seq_names, self.dist_names, rels)
        self.engine = Engine(self.lib, assume=self.spec.assume, dims=self.sizes.solver)
        for r, g in enumerate(self.dist.ranks):
            self._check_semantics(g, r)
        self._check_semantics(self.seq, "seq")
        self._refuse_unsupported()   # before inserting anything: never guess an op's meaning
        # random draws: each sequential draw coupled with the ranks' draws, from evidence or same_rng
        self.draws = R.plan(self.seq, self.dist, assume=R.ASSUMPTION in self.spec.assume,
                            canon=self.sizes.canonical, same=self.sizes.same)
        self.coupled = {c.seq.key: c for c in self.draws.couplings}
        res.random_draws = self.draws.report(lambda t: self.show_term(parse_sexpr(t)))
        dist = DistProgram(self.dist, self.dist_names, self.spec, self.sizes,
                           [u for c in self.draws.couplings for u in c.replica_unions()]).run()
        self.dvar, self.dfacts, self.collectives = dist.dvar, dist.dfacts, dist.collectives
        self.engine.prepare(c for cmds in self.dfacts.defn.values() for c in cmds)
        self.no_semantics.update(dist.no_semantics)
        res.unknown_values = dict(dist.unknown)
        self.window = Window(self.dfacts, self.policy.window_depth)
        self.spec_terms = SpecTerms(self.seq, self.dist, self.spec, self.seq_names, self.dist_names,
                                    self.sizes, self.dvar)
        res.inferred_inputs = {k: str(v) for k, v in self.inferred.items()}
        res.input_relations = {k: str(v) for k, v in rels.items()}
        res.given = {k: str(v) for k, v in self._given_tensors().items()}
        self.insert_inputs(rels)
        res.collectives = self.collectives
        self._refuse_unsupported()   # collectives with a reduction we do not model
        self.engine.flush()
        res.timings["insert"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        low = L.Lowerer(self.seq, constants=self.spec.constants, canon=lambda size: self.sizes.canonical(size, "seq"))
        ops = [n for n in self.seq.nodes if not n.is_placeholder]
        needed = self._needed_nodes()
        outputs = {p.node for p in self.checked_outputs}
        # Deferred: G_s ops without a clean term yet (intermediates no rank materialises, such as
        # the sequential program's own vocabulary mask).  Only outputs need clean terms, so an op
        # is deferred while fewer than `policy.deferred` are; an op proven clean absorbs the
        # deferred ops it depends on.  Otherwise refinement fails at the earliest deferred op.
        deferred: list[OpFailure] = []
        stack = plan(self.seq, self.dist.ranks, self.policy.memo_min_ops) if self.policy.memoize else None
        for i, n in enumerate(ops):
            if self.progress:
                self.progress(i, len(ops), n.name)
            if stack is not None and i == stack.seq.start and not deferred:
                done = Memo(self, low, ops, stack, needed).run()
                if done is not None:
                    res.blocks = {"proved": done[0], "reused": done[1], "count": stack.count,
                                  "period": stack.seq.period}
                    res.ops_checked += sum(1 for k in range(done[1] + 1) for m in stack.seq.block(ops, k)
                                           if m.name in needed)
                stack = None
            if n.name not in needed or n.name in self.svar or n.name in self.memoized:
                continue
            if not deferred and self.engine.size() > self.policy.window_nodes:
                self._retire(ops[i:], needed)
            self._proved = None
            # an operator that may be deferred is not tried with all of G_d (_prove): one that can
            # never be related (the sequential program's own vocabulary mask) must not bring it in.
            # Whether it has a clean term with all of G_d is decided only where the check would
            # end (_decide)
            deferrable = n.name not in outputs and len(deferred) < self.policy.deferred
            waiting = {self.svar[d.node] for d in deferred}     # (an identity of one shares its global)
            out = self._relate(low, n, widen="all" if not deferrable else
                               "none" if any(self.svar.get(ref) in waiting for ref in n.refs()) else "around")
            if out is not None and deferrable and out.reason == "no clean term":
                deferred.append(out)
                continue
            if out is not None:
                out, deferred = self._decide(deferred, out, n)
                if out is not None:
                    res.status = ("fails" if out.reason == "no clean term" else
                                  "internal-error" if out.reason.startswith("internal") else "unknown")
                    res.failure = out
                    break
            if deferred and self._proved == n.name:
                below = self._ancestors(self.seq.node(n.name).refs())
                deferred = [d for d in deferred if d.node not in below]
            res.ops_checked += 1
        if res.failure is None and deferred:
            out, _ = self._decide(deferred, None, None)
            if out is not None:
                res.status, res.failure = "fails", out
        res.timings["infer"] = time.perf_counter() - t1
        if res.failure is None:
            self._finish(res)
            if res.status == "fails" and self.retired_facts and not self._refuted_only(res):
                # retiring dropped facts a certificate may need: decided again on every fact
                self._restore()
                res.status, res.failure, res.relations, res.certificates, res.expectations = "refines", None, {}, {}, []
                self.refuted = {}
                self._finish(res)
            self._unmatched_writes(res)
        else:
            self._expectations_blocked_by(res, res.failure.node)
        self._output_verdicts(res)
        res.unchecked = list(self.unchecked)
        res.constants = {k: v for k, v in self.spec.constants.items()}
        # a user's lemmas are the user's facts: the verdict names those that applied
        user = {Path(f).stem: f for f in self.lemma_files}
        res.user_lemmas = {f: sorted(lem.name for lem in self.lib.lemmas
                                     if lem.family == stem and self.engine.matches.get(lem.name))
                           for stem, f in user.items()}
        # the couplings as the draws were related (in the order their data is laid out)
        self.draws.couplings = [self.coupled[c.seq.key] for c in self.draws.couplings]
        res.random_draws = self.draws.report(lambda t: self.show_term(parse_sexpr(t)))
        res.assumption_uses = assumption_uses(self, res)
        res.work = self._work()
        f = res.failure
        for d in [f.node, *f.later] if f and not f.reason.startswith("output ") else ():
            if d in self.op_stats:
                self.op_stats[d]["status"] = "unknown" if f.reason.startswith("limit") and d == f.node else "failed"
        culprit.annotate(self, res)       # where it is in both programs (reports only)
        return res

    def _work(self) -> dict:
        """The check's work: peak e-nodes, lemma steps, matches (all, by family), search seconds."""
        family = {lem.name: lem.family for lem in self.lib.lemmas}
        by_family: dict[str, int] = {}
        for name, k in self.engine.matches.items():
            by_family[family[name]] = by_family.get(family[name], 0) + k
        return {"peak_enodes": self.engine.peak_nodes, "lemma_steps": self.engine.steps,
                "matches": sum(self.engine.matches.values()), "matches_by_family": dict(sorted(by_family.items())),
                "seconds_by_family": {k: round(v, 3) for k, v in sorted(self.engine.family_seconds.items())}}

    def _laid_out_like_data(self, c: R.Coupling, n: G.Node) -> R.Coupling:
        """A coupling whose ranks' draws are concatenated (sharded data) in the order the ranks'
        parts of the draw's input are (its best clean term a concat along the coupling's dim):
        any order couples independent draws alike, and this is the one that moves with the data."""
        x = n.args[0] if n.args and isinstance(n.args[0], G.Ref) else None
        if c.dim is None or x is None or x.name not in self.svar:
            return c
        self._bring(self.svar[x.name])
        cost, best = self.engine.extract(self.svar[x.name])
        head = best[0].name if isinstance(best, tuple) and hasattr(best[0], "name") else None
        if cost >= BIG or head != "concat" or best[2] != c.dim:
            return c
        ranks = []
        for part in list_items(best[1]):
            owners = {split_key(leaf[1])[0] for leaf in gd_leaves(part)}
            if len(owners) != 1:
                return c
            ranks.append(owners.pop())
        return c.ordered(ranks)

    def _relate(self, low: L.Lowerer, n: G.Node, widen: str = "all") -> OpFailure | None:
        v = self._define(low, n)
        return None if v is None else self._prove(n, v, widen)

    def _define(self, low: L.Lowerer, n: G.Node, layout: bool = True) -> str | None:
        """``n``'s G_s facts (its globals and their definitions); the global to relate now, or
        None (no tensor, an identity, a free tensor, outputs related lazily by their getitem).
        ``layout``: a random draw's coupling follows its input's proven layout (not when a block's
        operators are all defined before any is proved: check/blocks.py)."""
        res = low.lower(n)
        if L.draws_in(res):      # a random draw: a leaf, equal to its coupling's term if it has one
            key = L.draw_key(n)
            v = self.svar[key] = self._new_svar(f"(Gs {str_lit(key)})", L.draw_meta(n))
            if key in self.coupled:
                if layout:
                    self.coupled[key] = self._laid_out_like_data(self.coupled[key], n)
                c = self.coupled[key]
                self._add_sfact(v, c.term)
        try:
            res = L.bind_result(res, self.svar.__getitem__)
        except KeyError as e:      # an operand that is no tensor the checker relates (a SymInt input)
            ref = e.args[0] if e.args else "?"
            what = self.seq.node(ref).val if isinstance(ref, str) and self.seq.has(ref) else None
            raise CheckInputError(
                f"{n.target} at {source(n) or n.name} reads {self.seq_names.show(ref) if isinstance(ref, str) else ref}"
                f"{' (a symbolic size)' if what is not None and not isinstance(what, G.TensorMeta) else ''} as a "
                f"tensor operand, which the term language cannot express") from None
        if isinstance(res, L.NotTensor) or res is L.DRAW:
            return None
        if isinstance(res, L.Identity):
            if res.ref in self.svar:
                self.svar[n.name] = self.svar[res.ref]
                if "#" in res.ref:          # an output of a multi-output op: relate it now
                    return self.svar[n.name]
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
                if item is L.DRAW:
                    continue
                if isinstance(item, L.Identity):
                    if item.ref in self.svar:
                        self.svar[key] = self.svar[item.ref]
                    continue
                # an output without a term is a free tensor: related to nothing
                text = item.text if item is not None else f"(Gs {str_lit(key)})"
                self.svar[key] = self._new_svar(text, n.val[i])
            return None    # related lazily: by the getitem that uses an output
        self.svar[n.name] = self._new_svar(res.text, n.val)
        return self.svar[n.name]

    def _prove(self, n: G.Node, v: str, widen: str = "all") -> OpFailure | None:
        """Relate ``n`` (its G_s global ``v``): lemma steps in its window, then, before it fails,
        with more of G_d: ``widen`` "all" (an operator whose failure ends the check), all of it
        and the spec's terms; "gd", all of it (a deferred operator decided where the check would
        end); "around" (one that may be deferred), what is connected to its
        inputs' related tensors (``Window.around``); "none" (one reading a deferred operator's
        value: it waits with it), nothing more.  An operator no rank computes (the sequential
        program's own vocabulary mask) must not bring every layer in, nor keep it in the e-graph
        for the operators after it; whether a deferred operator has a clean term with all of G_d
        is decided where the check would end (``_decide``)."""
        self._bring(v)
        self._explore(v)
        matches = self.engine.matches.copy()
        outcome = self.engine.prove_clean(v, self.limits)
        steps, seconds = outcome.iterations, outcome.seconds

        def more() -> bool:     # not clean, and no limit on resources ended the attempt
            return outcome.status == "saturated" or outcome.kind == "iterations"

        def again():
            nonlocal outcome, steps, seconds
            outcome = self.engine.prove_clean(v, self.limits)
            steps, seconds = steps + outcome.iterations, seconds + outcome.seconds
        if widen in ("all", "gd"):      # never fail for want of G_d facts, nor of the spec's own terms
            if more() and self._widen():
                again()
            if widen == "all" and more() and self._seed_expected():
                again()
        elif widen == "around" and more() and self._around(v):
            again()
        if outcome.kind not in (None, "iterations"):
            self._exhausted.add(n.name)
        if widen in ("around", "none"):
            self._narrow.add(n.name)
        else:
            self._narrow.discard(n.name)
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
                return OpFailure(node=n.name, target=n.target, source=source(n), inputs={},
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
        considered = sorted({self.show_term(l) for l in gd_leaves(best)})
        reason = "no clean term" if outcome.status == "saturated" else f"limit: {outcome.limit}"
        if outcome.status == "limit" and outcome.limit and "iterations" in outcome.limit and not self._grows():
            reason = "no clean term"
        return OpFailure(node=n.name, target=n.target, source=source(n),
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
        found = self.engine.variants(v, culprit.CANDIDATES)
        return sorted(({"sexpr": to_sexpr(t), "cost": culprit.term_cost(t)} for t in found),
                      key=lambda c: c["cost"])

    def _retire(self, remaining, needed):
        """A fresh e-graph holding only what the remaining operators can use: each live G_s
        tensor as its clean terms.  Per-step cost follows the e-graph's size (egglog rebuilds
        changed tables in full), so this keeps the cost per operator flat in model depth.
        Dropping facts can only lose proofs, never make one, and a failure found after retiring
        is decided again with the dropped facts back (``_restore``)."""
        read = {p.node for p in self.checked_outputs}
        read.update(ref for n in remaining if n.name in needed and n.name not in self.svar for ref in n.refs())
        # a nonzero whose row count sizes a remaining tensor: its relation is that size's (_same_count)
        read.update(c for n in remaining if n.name in needed and n.name not in self.svar for c in self._counted_in(n))
        live = {v for k, v in self.svar.items() if k.split("#")[0] in read}
        # what the relations of the inputs used so far say between the ranks' tensors (r0.x =
        # r1.x for a replicated x) is kept: the ranks' copies of a value computed from x (a
        # replicated KV head) are only equal through it, and no clean term records it.  Only
        # that: an input's whole relation, brought back at every retiring, would keep every
        # layer's weights in the e-graph and make the cost per operator grow with depth.
        self.kept_rank_facts.update(f for v in self.rank_facts if v in self.present for f in self.rank_facts[v])
        kept, stack = {}, list(live)
        while stack:
            v = stack.pop()
            if v in kept or v not in self.present:
                continue
            if self.engine.is_clean(v):
                terms = self._clean_terms(v)
                shapes = [c for c in self.sfacts[v] if c.startswith("(set ")]
                kept[v] = [f"(let {v} {terms[0]})"] + [f"(union {v} {t})" for t in terms[1:]] + shapes
                own = self.retired_facts.get(v, (self.sfacts[v], []))[0]
                self.retired_facts[v] = (own, terms)
            else:             # not proven yet (a deferred op, an output of a multi-output op)
                kept[v] = self.sfacts[v]
                stack.extend(SVAR.findall(" ".join(kept[v])))
        self.engine.reset()
        self.window.reset()
        self.present = set()
        self.expect_seeded = False
        for v, facts in kept.items():
            self.sfacts[v] = facts
            self.sleaves[v] = leaves_in(" ".join(facts))
        self.engine.add(*sorted(self.kept_rank_facts))
        self.retired += 1

    def _decide(self, deferred: list[OpFailure], out: OpFailure | None, n: G.Node | None):
        """The check would end: at ``out``, operator ``n``'s failure, or (``n`` None) with the
        ``deferred`` operators that no clean consumer absorbed.  Before a failure is reported the
        deferred operators, earliest first, are decided with all of G_d in a fresh e-graph
        (``_restore``: retired facts back, nothing later operators derived; not the spec's terms
        for outputs: they are intermediates); the first without a clean term is the failure.
        ``out`` itself is decided again there where it was tried without all of G_d or with facts
        retired; a limit on resources (or an internal error) stands.  Returns (the failure, or
        None when every operator is related after all; the deferred operators still without a
        clean term)."""
        if out is not None and out.reason.startswith("internal"):
            out.later = [d.node for d in deferred]
            return out, deferred
        final = out is not None and (out.node in self._exhausted or
                                     (out.reason != "no clean term" and out.node not in self._narrow))
        restored = bool(self.retired_facts)
        if deferred or restored:
            self._restore()
        pending = []
        for d in deferred:      # (intermediates: the spec's terms of outputs are not seeded for them)
            again = self._prove(self.seq.node(d.node), self.svar[d.node], "gd")
            if again is not None:
                pending.append(again)
                if again.reason != "no clean term":
                    break       # a limit: unknown from here
        if out is not None and not final and (restored or out.node in self._narrow):
            out = self._prove(n, self.svar[n.name])
        if out is None and n is not None:
            return None, pending
        failures = pending + ([out] if out is not None else [])
        if not failures:
            return None, []
        failures[0].later = [f.node for f in failures[1:]]
        return failures[0], pending

    def _restore(self):
        """A fresh e-graph for deciding a failure: each retired G_s tensor's own facts back beside
        its clean terms (retiring dropped the first: structure a lemma may need), the ranks'
        equalities, and all of G_d; nothing later operators' lemma steps derived (a deferred
        operator is decided as it would have been at its turn).  Of the G_s facts only those the
        operators being decided read come in (``_bring``): their cone, not every fact of the check."""
        if self.retired_facts:
            self.rechecked = True
        for v, (own, terms) in self.retired_facts.items():
            self.sfacts[v] = own + [f"(union {v} {t})" for t in terms]
            self.sleaves[v] = leaves_in(" ".join(self.sfacts[v]))
        self.retired_facts = {}
        self.engine.reset()
        self.window.reset()
        self.present = set()
        self.expect_seeded = False
        self.engine.add(*sorted(self.kept_rank_facts))
        self._widen()

    def _clean_terms(self, v: str) -> list[str]:
        """``v``'s cheapest clean terms, cheapest first."""
        return [to_sexpr(t) for t in self.engine.variants(v, CLEAN_VARIANTS) if is_clean(t)]

    def _grows(self) -> bool:
        before = self.engine.size()
        self.engine.run1(STEP)
        return self.engine.size() > before

    def _prove_equal(self, a: str, b: str) -> bool:
        return self._saturate_equal(a, b) or (self._widen() and self._saturate_equal(a, b))

    def _saturate_equal(self, a: str, b: str) -> bool:
        return self.engine.saturate(lambda: self.engine.equal(a, b), self.limits).status == "reached"

    # -- display (culprit and reports) ---------------------------------------------------------
    def show_leaf(self, key: str) -> str:
        return self.display.leaf(key)

    def show_term(self, t) -> str:
        return self.display.term(t)
