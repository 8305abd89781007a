"""What a check covers, as methods of ``Checker`` (checker.py): the G_s nodes its checked outputs
depend on (the state after the step included, not looking past the tensors the spec gives), the
ops no semantics covers (refused, every one in one line), and state a rank writes that the
sequential program does not hold (a difference, never ignored)."""
from __future__ import annotations

from entangle_py.check import state as ST
from entangle_py.check.names import source, unsupported_key
from entangle_py.check.result import CheckInputError, OpFailure, Result
from entangle_py.ir import graph as G
from entangle_py.semantics import lower as L


class Coverage:
    """The coverage half of ``Checker`` (a mixin: ``Checker`` holds the state it reads)."""

    def _unmatched_writes(self, res: Result):
        """A rank writes state the sequential program does not hold: its value after the step has
        nothing to equal, a difference (never ignored)."""
        if res.status != "refines" or not self.state.unmatched:
            return
        r, w = self.state.unmatched[0]
        node = self.dist.ranks[r].output_node(ST.after(w))
        res.status = "fails"
        res.failure = OpFailure(node=f"r{r}.{node.name}", target=node.target, source=source(node), inputs={},
                                best="", considered=[],
                                reason=f"state {w}: rank {r} writes it, and the sequential program holds no such "
                                       f"state: nothing to relate its value after the step to")

    def _needed_nodes(self) -> set:
        """G_s nodes that checked outputs depend on (others are not verified).  The state after
        the step (``mutated:<port>``) is always checked, and its port's input is related."""
        check = self.spec.check
        if check is not None and not check:
            raise CheckInputError("[outputs] check is empty: nothing would be verified (list the outputs to check, "
                                  "or leave check out to check every output)")
        states = {ST.after(w) for w in self.state.written}
        outs = [p for p in self.seq.outputs if check is None or p.name in check or p.node in check or p.name in states]
        if check is not None:
            known = {p.name for p in self.seq.outputs} | {p.node for p in self.seq.outputs}
            unknown = [c for c in check if c not in known and not self.seq.has(c)]
            if unknown:
                raise CheckInputError(f"[outputs] check names {unknown[0]!r}, which is not an output of the sequential graph")
            outs += [G.Port(c, c) for c in check if c not in known]
        cut = {self.seq_names.node(c) for c in self._given_tensors()}
        self.checked_outputs = outs
        self.unchecked = [p.name for p in self.seq.outputs if p not in outs]
        written = [p.node for p in self.seq.inputs if p.name in self.state.written]
        return self._ancestors([p.node for p in outs] + written, stop=cut)   # a cut tensor is given

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
        low = L.Lowerer(g, constants=self.spec.constants)
        for n in g.nodes:
            if n.is_placeholder:
                continue
            try:
                res = low.lower(n)
            except (KeyError, TypeError, IndexError):
                continue
            if isinstance(res, L.NoSemantics):
                self.no_semantics.setdefault(unsupported_key(res), []).append((rank, n))
            elif isinstance(res, L.PointToPoint) and rank == "seq":   # a one-rank program has no peer
                self.no_semantics.setdefault(f"{n.target} in the sequential program", []).append((rank, n))
