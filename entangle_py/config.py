"""Limits of a check and the checker's policy, with their defaults defined once (the CLI shows
the limits in --help).

Light on purpose: ``entangle --help`` imports this, not torch or egglog.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Limits:
    """When the engine gives up on one G_s operator (exit 3, naming the limit)."""
    iterations: int = 40        # lemma iterations per G_s operator
    nodes: int = 400_000        # e-graph size
    seconds: float = 60.0       # wall time per G_s operator


@dataclass
class Policy:
    """How the checker spends its work; none of these can change a verdict (tests/test_window.py)."""
    deferred: int = 8           # G_s ops without a clean term awaiting a clean consumer
    window_depth: int = 4       # G_d operators explored past an operator's related inputs
    window_nodes: int = 4_000   # e-graph size above which proven tensors' facts are retired
