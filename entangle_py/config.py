"""Limits of a check, the checker's policy and the assumptions a spec may enable, with their
defaults defined once (the CLI shows the limits in --help).

Light on purpose: ``entangle --help`` imports this, not torch or egglog.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Limits:
    """When the engine gives up on one G_s operator's attempt (exit 3, naming the limit and the
    operator).  Deterministic units first -- lemma steps, e-graph size, rule matches -- so a
    limit falls at the same place on every machine; wall time is a last resort, and memory a
    limit of its own (measured between lemma steps: an egglog step cannot be interrupted, so the
    next step is not started when the last one's growth, repeated, would cross a limit)."""
    iterations: int = 40            # lemma steps per attempt at a G_s operator (its window; then
                                    # more of G_d; then the spec's terms)
    nodes: int = 400_000            # e-graph size, in e-nodes
    matches: int = 1_000_000        # rule matches per attempt
    seconds: float = 600.0          # wall time per attempt (last resort)
    memory: int = 0                 # resident bytes of the process; 0: MEMORY_FRACTION of the machine

    def memory_bytes(self) -> int:
        return self.memory or int(MEMORY_FRACTION * machine_memory())


# the default memory limit, as a fraction of the memory the process may use
MEMORY_FRACTION = 0.5


def machine_memory() -> int:
    """Memory the process may use, in bytes: the machine's physical memory, or less where a
    container (cgroup ``memory.max``) or ``ulimit -v`` (RLIMIT_AS) allows less -- a default
    limit above what the process can get would end in an allocation failure, not an exit 3."""
    import os
    try:
        amount = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        amount = 8 << 30
    for bound in (_cgroup_memory(), _address_space()):
        if bound:
            amount = min(amount, bound)
    return amount


def _cgroup_memory() -> int:
    try:
        with open("/sys/fs/cgroup/memory.max") as fh:
            text = fh.read().strip()
        return 0 if text == "max" else int(text)
    except (OSError, ValueError):
        return 0


def _address_space() -> int:
    try:
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        return 0 if soft == resource.RLIM_INFINITY else soft
    except (ImportError, ValueError, OSError):
        return 0


@dataclass
class Policy:
    """How the checker spends its work; none of these can change a verdict (tests/test_window.py)."""
    deferred: int = 8           # G_s ops without a clean term awaiting a clean consumer
    window_depth: int = 4       # G_d operators explored past an operator's related inputs
    window_nodes: int = 4_000   # e-graph size above which proven tensors' facts are retired
    memoize: bool = True        # repeated blocks: one proved, the others reused (docs/memoization.md)
    memo_min_ops: int = 16      # ... when reuse could skip at least this many G_s operators (below,
                                # a fresh e-graph for block 0 costs more than it saves)


# Assumptions a check may rest on: facts about the programs that the checker cannot prove.  None
# is on unless the user writes it (``[assume] name = true`` in the spec, or ``--assume name``); the
# report prints every one written, with where the check may have used it (check/assumed.py).  A
# lemma naming one is only active when it is written; such a lemma's ``rejects`` are
# counterexamples: inputs violating the assumption on which its two sides differ (the assumption
# is really needed).  ``same_rng`` is read by check/random.py, not by a lemma.
ASSUMPTIONS = {
    "valid_indices": "every id that indexes a table (embedding, W[ids], a loss's target class) lies in [0, rows of the table)",
    "no_ignored_targets": "no loss target the programs take as input equals its loss's negative ignore index (no "
                          "padding target such as -100 occurs): every such target is a class, so a loss's mean "
                          "divides by the number of targets and its gradient places a row for every one; targets "
                          "a program computes (labels it pads with -100 itself) are not covered; not implied by "
                          "valid_indices (a model with an embedding assumes that, while its labels may be padded)",
    "same_rng": "for random draws whose bundle does not record where they come from (an imported graph): the "
                "k-th random draw of every rank pairs with the sequential program's k-th draw; ranks that draw "
                "its whole shape draw the same values, and ranks whose draws tile it along one dim draw from "
                "independent streams, so that together they are one sequential draw (where capture recorded the "
                "ranks' streams, the record decides and this is not used)",
    "nonzero_divisors": "no element of a tensor divisor (x / y, y a tensor: a token count) is zero, so a sum "
                        "divided by y is the sum of its parts divided by y (where y = 0, inf + nan is not inf)",
    "no_exp_overflow": "the logits of a loss are finite and their exponentials do not overflow (below about 88 in "
                       "float32, 11 in float16), so a log-softmax's target term x_t - log(sum(exp(x))) computed "
                       "without subtracting the row max (as a vocab-parallel loss may) is torch's shifted one",
    "finite_values": "the values the programs compute are finite (no inf or nan arises), so a product distributes "
                     "over a sum over ranks up to rounding: y * (a + b) = y * a + y * b (a backward linear in its "
                     "upstream gradient, e.g. layer norm's, applied per rank then summed; where y = inf, "
                     "inf * (1 - 0.5) is inf while inf * 1 - inf * 0.5 is nan)",
}
