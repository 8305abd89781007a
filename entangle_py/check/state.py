"""Every write is accounted for: the state a program leaves is part of what it computes.

A program that updates a parameter, buffer or input in place is captured with an output
``mutated:<port>`` holding the new value (capture's and import-fx's convention).  The next step
reads that state, so a write only one program makes -- or makes differently -- is a difference
even when every returned tensor agrees.  The obligation: for every port either program writes,
the sequential program's state after the step equals the *input relation* of that port applied to
the ranks' states after the step (the relation the state had before is kept).  A program that
does not write a port leaves it as it was: its state after is the input itself, which is given
here an output port ``mutated:<port>`` of its own, so both programs name the state after the
step alike on every rank that holds it.  These outputs are always checked: a spec can add
expectations on them, never remove them.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from entangle_py.check import spec as S
from entangle_py.ir import graph as G

MUTATED = "mutated:"
# the obligation of a written port with no input relation: every rank's state after the step is
# the sequential one (the strongest relation: it can only fail where a weaker one would hold)
REPLICATED = S.Relation(placements=(S.Replicate(),))


def after(port: str) -> str:
    """The output port holding ``port``'s value after the step."""
    return MUTATED + port


@dataclass(frozen=True)
class StateWrites:
    written: tuple           # input ports either program writes, sorted
    seq: G.RankGraph         # the programs with an output ``mutated:<port>`` for each written
    ranks: tuple             # port they hold (the input itself where they do not write it)
    # (rank, port): a rank writes state the sequential program does not hold: nothing to relate
    # it to, a difference the check reports
    unmatched: tuple = ()


def account(seq: G.RankGraph, ranks: list[G.RankGraph]) -> StateWrites:
    written = sorted({p.name[len(MUTATED):] for g in [seq, *ranks] for p in g.outputs
                      if p.name.startswith(MUTATED)})
    seq_inputs = {p.name for p in seq.inputs}
    unmatched = tuple((g.rank, w) for g in ranks for w in written
                      if w not in seq_inputs and any(p.name == after(w) for p in g.outputs))
    return StateWrites(tuple(written), _with_state_ports(seq, written),
                       tuple(_with_state_ports(g, written) for g in ranks), unmatched)


def _with_state_ports(g: G.RankGraph, written) -> G.RankGraph:
    outs = {p.name for p in g.outputs}
    extra = [G.Port(after(p.name), p.node) for p in g.inputs if p.name in written and after(p.name) not in outs]
    return replace(g, outputs=[*g.outputs, *extra]) if extra else g


def relation_after(rel: S.Relation, written) -> S.Relation:
    """The input relation ``rel`` of a written port, over the states after the step: a placement
    names the port on every rank (the caller asks for it under the ``mutated:`` name); an explicit
    term's leaves naming a written port name its state after."""
    if rel.term is None:
        return rel
    return replace(rel, term=_rename(rel.term, set(written)))


def _rename(t, written):
    if isinstance(t, S.Leaf):
        return replace(t, name=after(t.name)) if t.name in written else t
    if isinstance(t, S.Call):
        return replace(t, args=tuple(_rename(a, written) for a in t.args))
    return t
