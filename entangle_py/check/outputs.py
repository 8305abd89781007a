"""What a check concludes at the outputs, as methods of ``Checker`` (checker.py): the [expect]
relations (their terms seeded, each proved or refuted, the ones a failure blocks), every checked
output's certificate -- a clean term over what the ranks return, shape-checked -- and each
output's own verdict.  They read and extend the checker's state (e-graph, window, svar/dvar)."""
from __future__ import annotations

import re

from entangle_py.check import spec as S
from entangle_py.check import state as ST
from entangle_py.check.names import gd_leaves, source, split_key
from entangle_py.check.result import CheckInputError, OpFailure, Result
from entangle_py.check.window import leaves_in
from entangle_py.engine.egraph import CERTIFY, Outcome
from entangle_py.ir import graph as G
from entangle_py.semantics import lower as L
from entangle_py.semantics.clean_shape import clean_meta
from entangle_py.semantics.terms import BIG, EvalError, parse_sexpr, str_lit, to_sexpr

SVAR = re.compile(r"\$v\d+")     # a G_s tensor's egglog global


class OutputChecks:
    """The output half of ``Checker`` (a mixin: ``Checker`` holds the state it reads)."""

    def _seed_expected(self) -> bool:
        """The explicit terms of [expect] (slices of the ranks' outputs: a fused weight's
        gradient in the weight's interleaved layout) into the e-graph, as terms only: no equality
        is assumed, they only give the lemmas the parts of the ranks' tensors to find.  False when
        there are none or they are there already."""
        if self.expect_seeded:
            return False
        self.expect_seeded = True
        texts = []
        for name, rel in self.expectations:
            if isinstance(rel.term, S.Call):
                pname, _ = self._expect_target(name)
                texts += [self.spec_terms.text(t, f"[expect] {name!r}")
                          for t in self.spec_terms.relation_terms(rel, pname, f"[expect] {name!r}")]
        for text in texts:
            self.engine.add(*self.window.commands(leaves_in(text)), f"(let {self._fresh()} {text})")
        return bool(texts)

    def _expectations_blocked_by(self, res: Result, failed: str):
        """After a failure, an expectation on an output computed from the failed operator cannot
        hold as required: report it violated -- or, when a limit stopped the check, unknown (None):
        nothing was shown either way.  A failure elsewhere leaves it unchecked, unreported."""
        limit = res.status == "unknown"
        for name, rel in self.expectations:
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

    def _expect_states(self, rels: dict):
        """The state a program writes keeps its input relation: ``mutated:<port>`` (the input
        itself where a program does not write it) is expected to relate to the ranks' states
        after the step as the input did before -- as well as anything the spec expects of it.  A
        port with no input relation (a constant the spec does not declare, a free input) is
        expected replicated: every rank's state after the step is the sequential one."""
        for w in self.state.written:
            rel = ST.relation_after(rels[w], self.state.written) if w in rels else ST.REPLICATED
            if (ST.after(w), rel) not in self.expectations:
                self.expectations.append((ST.after(w), rel))

    def expected(self, name: str) -> list:
        """The relations required of output ``name`` (port or node name): [expect] and its state's."""
        port = next((p for p in self.seq.outputs if name in (p.name, p.node)), None)
        names = {name} | ({port.name, port.node} if port else set())
        return [rel for n, rel in self.expectations if n in names]

    def _expect_target(self, name: str):
        """(port name, node) of the G_s output an [expect] entry names."""
        port = next((p for p in self.seq.outputs if p.name == name or p.node == name), None)
        node = port.node if port else (name if self.seq.has(name) else None)
        if node is None:
            raise CheckInputError(f"[expect] names {name!r}, which is not a checked output of the sequential graph")
        return (port.name if port else name), node

    def _finish(self, res: Result):
        """The output relation: for every checked output, a clean term over what the distributed
        program returns -- nothing else may appear in a certificate, however the
        operator-by-operator relations went ([cut] tensors among them).  An [outputs] check entry
        naming an inner tensor is certified last, over the ranks' tensors of its name as well.
        Expectations are decided first, on values (e-graph equality with the spec's terms)."""
        allowed = self._certificate_leaves()
        self.engine.add(*self.window.commands(allowed))
        self.engine.add(*(f"(certleaf (Gd {str_lit(k)}))" for k in sorted(allowed)))
        outputs = {p.name for p in self.seq.outputs}
        checked = []
        for name, rel in self.expectations:
            pname, node = self._expect_target(name)
            if node not in self.svar:
                raise CheckInputError(f"[expect] names {name!r}, which is not a checked output of the sequential graph")
            ok = True
            for t in self.spec_terms.relation_terms(rel, pname, f"[expect] {name!r}"):
                text = self.spec_terms.text(t, f"[expect] {name!r}")
                mismatch = self._shape_mismatch(parse_sexpr(text), self.seq.node(node).val) if rel.term else None
                if mismatch:         # an explicit term must have the output's shape
                    raise CheckInputError(f"[expect] {name!r}: the relation {rel} {mismatch}")
                tv = self._new_svar(text)
                self._bring(tv)
                self._bring(self.svar[node])
                if not self._prove_expected(name, node, text, self.svar[node], tv):
                    ok = False
            checked.append((name, pname, str(rel), ok))
        # certificates after the expectations: a proven relation (the concat of the ranks'
        # gradients) is then in the e-class and is the term shown when it is the cheapest
        for p in sorted(self.checked_outputs, key=lambda p: p.name not in outputs):
            v = self.svar.get(p.node)
            if v is None:
                raise CheckInputError(f"output {p.name!r} of the sequential graph was not related (its node "
                                      f"{p.node} is not a tensor the checker understands)")
            self._bring(v)
            leaves = allowed
            if p.name not in outputs:      # an inner tensor: the end of a region in both programs
                leaves = self._certificate_leaves(p.name)
                self.engine.add(*self.window.commands(leaves - allowed))
                self.engine.add(*(f"(certleaf (Gd {str_lit(k)}))" for k in sorted(leaves - allowed)))
            found = self._certify(v, leaves)
            if found is None or isinstance(found, Outcome):
                res.status, res.failure = "fails", self._not_returned(p, v, leaves)
                if found is not None:
                    res.status, res.failure.reason = "unknown", f"limit: {found.limit} (output {p.name})"
                break
            term, _ = found
            mismatch = self._shape_mismatch(term, self.seq.node(p.node).val)
            if mismatch:
                res.status = "internal-error"
                res.failure = OpFailure(node=p.node, target=self.seq.node(p.node).target,
                                        source=source(self.seq.node(p.node)), inputs={}, best=self.show_term(term),
                                        considered=sorted({self.show_term(l) for l in gd_leaves(term)}),
                                        reason=f"internal soundness error: the certificate {mismatch}")
                break
            res.relations[p.name] = self.show_term(term)
            res.certificates[p.name] = to_sexpr(term)
        for name, key, rel, ok in checked:
            res.expectations.append((name, rel, res.relations.get(key, "?"), ok))
            if not ok and res.status == "refines":
                res.status = "fails"

    def _certificate_leaves(self, inner: str | None = None) -> set[str]:
        """G_d tensors a certificate may name: every rank's outputs -- and, for an [outputs] check
        entry naming an inner G_s tensor (the end of a region in both programs, as [cut] names its
        start), the ranks' tensors of that name too.  Never a [cut] or other given tensor: a
        spec entry adds facts, it removes no output's obligation to be what the ranks return."""
        keys = set()
        for r, g in enumerate(self.dist.ranks):
            for p in g.outputs:
                keys |= leaves_in(self.dvar[r].get(p.node, ""))
            node = self.dist_names[r].node(inner) if inner is not None else None
            if node is not None:
                keys |= leaves_in(self.dvar[r].get(node, ""))
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
        if cost < BIG and p.name.startswith(ST.MUTATED):
            why = (f"the state after the step is {self.show_term(best)}, tensors the ranks do not hold after "
                   f"it (their state after the step is their mutated:* outputs)")
        elif cost < BIG:
            why = (f"its relation {self.show_term(best)} names tensors the distributed program computes "
                   f"but does not return")
        else:
            why = "it has no clean term at all"
        return OpFailure(node=p.node, target=n.target, source=source(n), inputs={}, best=self.show_term(best),
                         best_term=to_sexpr(best), considered=sorted({self.show_term(l) for l in gd_leaves(best)}),
                         reason=f"output {p.name}: {why} (returned: {', '.join(returned[:8])}"
                                f"{' ...' if len(returned) > 8 else ''})")

    def _shape_mismatch(self, term, val) -> str | None:
        """Why a certificate's shape or dtype differs from its G_s tensor's, or None."""
        if not isinstance(val, G.TensorMeta):
            return None
        def leaf(key):
            r, node = split_key(key)
            base, _, i = node.partition("#")
            base = base.split(":")[0]       # a lowering's helper (mean's <node>:sum) has its node's shape
            meta = self.dist.ranks[r].node(base).val
            meta = meta[int(i)] if i else meta
            return tuple(self.sizes.canonical(s, r) for s in meta.shape), meta.dtype

        def size(d):
            value = self.sizes.solver.value(d)
            if value is None:
                value = self._counted_size(d)
            if value is None:
                raise EvalError(f"size {to_sexpr(d)} is not a size expression")
            return value

        def same(a, b):
            return self.sizes.same(a, b) or self._same_count(a, b)

        want = tuple(self.sizes.canonical(s, "seq") for s in val.shape)
        try:
            shape, dtype = clean_meta(term, leaf, size, same)
        except EvalError as e:
            return f"{self.show_term(term)} is ill-shaped ({e})"
        if len(shape) != len(want) or not all(same(a, b) for a, b in zip(shape, want)):
            return f"has shape {list(shape)} but the sequential tensor has {list(want)}"
        if dtype is not None and dtype != val.dtype:
            return f"has dtype {dtype} but the sequential tensor has {val.dtype}"
        return None

    @staticmethod
    def _counted_size(d):
        """The checker's symbol for ``(DRows (Gd "r<k>.<node>"))`` in a certificate: that rank's
        nonzero row count (check/sizes.py); None for any other Dim term."""
        if isinstance(d, tuple) and len(d) == 2 and getattr(d[0], "name", d[0]) == "DRows":
            t = d[1]
            if isinstance(t, tuple) and getattr(t[0], "name", None) == "Gd":
                return L.rows_symbol(*split_key(t[1]))
        return None

    def _same_count(self, a, b) -> bool:
        """Two nonzero row counts are one size where the e-graph proves their tensors equal."""
        at = [L.rows_node(x) for x in (a, b)]
        if None in at:
            return False
        vs = [self.svar.get(node) if graph == "seq" else self.dvar[int(graph)].get(node) for graph, node in at]
        if None in vs:
            return False
        for v in vs:        # (in the e-graph: a retiring or a fresh e-graph may have left them out)
            if SVAR.fullmatch(v):
                self._bring(v)
            else:
                self.engine.add(*self.window.commands(leaves_in(v)))
        return self.engine.equal(*vs)

    def _counted_in(self, n: G.Node) -> set[str]:
        """The sequential nonzeros whose row counts are in the shape of ``n``'s value."""
        out = set()
        for meta in n.val if isinstance(n.val, tuple) else (n.val,):
            for d in getattr(meta, "shape", ()):
                for sym in getattr(self.sizes.canonical(d, "seq"), "free_symbols", ()):
                    found = L.rows_node(sym)
                    if found is not None and found[0] == "seq":
                        out.add(found[1])
        return out

    def _prove_expected(self, name: str, node: str, text: str, a: str, b: str) -> bool:
        """An [expect] term: proved in the window, else -- unless values refute it -- with all of G_d."""
        if self._saturate_equal(a, b):
            return True
        if self.refute is not None:
            why = self.refute(self, node, text)
            if why:
                self.refuted.setdefault(name, why)
                return False
        return self._widen() and self._saturate_equal(a, b)
