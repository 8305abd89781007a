"""What a check finds: its verdict, certificates, the failing operator and what reports need."""
from __future__ import annotations

from dataclasses import dataclass, field

from entangle_py.errors import InputError


class CheckInputError(InputError):
    pass


@dataclass
class OpFailure:
    node: str
    target: str
    source: str | None
    inputs: dict            # input name -> relation text
    best: str               # best (non-clean) term found
    considered: list        # G_d tensors in the e-graph near the failure
    reason: str             # 'no clean term' | limit text
    later: list = field(default_factory=list)   # deferred ops after it, also without a clean term
    best_term: str = ""     # the best term as an s-expression (G_d leaves by key), for the witness
    # what a report needs to explain it (culprit.py): the inputs' relations and the best few terms
    # as s-expressions with their costs, lemma matches and lemma steps spent on it, and (filled
    # once the check is over) locations, producers, culprits in G_d, neighbourhoods
    inputs_terms: dict = field(default_factory=dict)
    candidates: list = field(default_factory=list)     # [{"sexpr", "cost"}], cheapest first
    lemmas: dict = field(default_factory=dict)
    iterations: int = 0
    detail: dict = field(default_factory=dict)


@dataclass
class Result:
    status: str                                  # 'refines' | 'fails' | 'unknown' | 'internal-error'
    relations: dict = field(default_factory=dict)   # checked output -> clean term text
    failure: OpFailure | None = None
    expectations: list = field(default_factory=list)  # (output, required, found, ok)
    inferred_inputs: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    ops_checked: int = 0
    collectives: list = field(default_factory=list)
    assumptions: list = field(default_factory=list)   # (name, description) of the assumptions the user wrote
    assumption_uses: dict = field(default_factory=dict)  # written assumption -> where the check may rest on it
    # each random draw of G_s: {draw, op, source, coupling (None: it has none), basis, why} (check/random.py)
    random_draws: list = field(default_factory=list)
    unchecked: list = field(default_factory=list)     # outputs of G_s the spec's [outputs] check leaves out
    given: dict = field(default_factory=dict)         # inner tensors the spec gives ([cut]): not checked
    constants: dict = field(default_factory=dict)     # values the spec declares ([constants]): not checked
    user_lemmas: dict = field(default_factory=dict)   # --lemmas file -> its lemmas that applied
    capture_notes: list = field(default_factory=list)  # what capture modelled, where (ir.bundle_meta.capture_notes)
    unknown_values: dict = field(default_factory=dict)  # G_d tensor (r0.node) -> why the checker does not know it
    # s-expressions over G_d leaves (Gd "r<rank>.<node>"), for numeric re-checks: each checked
    # output's certificate, and a clean term found for each G_s operator on the way
    certificates: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)    # checked output -> {"verdict": holds | fails | ...}
    op_relations: dict = field(default_factory=dict)
    retired: int = 0             # times proven facts were retired for a fresh e-graph
    rechecked: bool = False      # a failure found after retiring was decided again with its facts back
    # repeated blocks (check/blocks.py): {"proved", "reused", "period"}; empty when none was reused
    blocks: dict = field(default_factory=dict)
    # the check's work in deterministic units: peak e-graph size, lemma steps, lemma matches (and
    # by lemma family) -- what benchmarks and CI compare across degrees
    work: dict = field(default_factory=dict)
    numeric: dict | None = None  # the interpreter's second opinion (oracle/recheck.py), when it ran
    # for reports (culprit.py): each proved or failed G_s operator's lemma steps, matches and
    # location; every G_d tensor named in a relation, certificate or failure, with its location
    operators: dict = field(default_factory=dict)
    input_relations: dict = field(default_factory=dict)   # G_s input (or given tensor) -> relation
    gd_nodes: dict = field(default_factory=dict)
    limits: dict = field(default_factory=dict)
    world_size: int = 0
    joint: bool = False
    # the distributed program's ranks grouped by graph up to rank constants (ir/rank_classes.py);
    # detection only: every rank is checked
    rank_classes: list = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return {"refines": 0, "fails": 1, "unknown": 3, "internal-error": 4}[self.status]
