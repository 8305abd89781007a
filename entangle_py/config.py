"""Limits of a check, with their defaults defined once (the CLI shows them in --help).

Light on purpose: ``entangle --help`` imports this, not torch or egglog.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Limits:
    iterations: int = 40        # lemma iterations per G_s operator
    nodes: int = 400_000        # e-graph size
    seconds: float = 60.0       # wall time per G_s operator
    deferred: int = 8           # G_s ops without a clean term awaiting a clean consumer
    window_depth: int = 4       # G_d operators explored past an operator's related inputs
    window_nodes: int = 4_000   # e-graph size above which proven tensors' facts are retired
