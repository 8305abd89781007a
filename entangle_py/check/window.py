"""Which G_d facts are in the e-graph: the exploration window.

A G_d tensor is the leaf ``(Gd "r<rank>.<node>")``; its facts are its shape and its lowered
definition over other leaves.  egglog rebuilds the indexes of a changed table in full, so every
lemma step costs in proportion to the e-graph: with the whole distributed program inserted up
front, time per G_s operator grows with model depth.  As in the paper, G_d is explored from the
related tensors instead: before a G_s operator is proved, the G_d tensors up to ``depth``
operators downstream of its inputs' related tensors go in, each once every tensor it reads is at
hand.  Data movement past the inputs' neighbourhood (a view, a slice, a concat, a collective: a
tensor whose definition is a clean term) spends no depth: a chain of it (a DTensor redistribution:
view, split, cat, reduce-scatter) would otherwise use up the window before the operator that
consumes it, which the proof needs (without it the lemmas regroup what they have every way).  Parameter preprocessing (a weight's
transpose or view) has no related input of its own; it comes in with its first consumer.  When no
clean term is found the checker widens the window to all of G_d before it reports a failure, so a
narrow window changes the cost of a verdict, never the verdict.
"""
from __future__ import annotations

import re
from collections import defaultdict

from entangle_py.semantics.terms import is_clean_text

LEAF = re.compile(r'\(Gd "((?:[^"\\]|\\.)*)"\)')

PULLED_LEVELS = 2   # a tensor this few operators from inputs comes in with its first consumer


def leaves_in(text: str) -> set[str]:
    """Keys of the G_d leaves a command or term names."""
    return set(LEAF.findall(text))


class DistFacts:
    """egglog commands about each G_d tensor, kept out of the e-graph until the window takes them."""

    def __init__(self):
        self.shape: dict[str, list[str]] = {}            # key -> shape commands
        self.defn: dict[str, list[str]] = defaultdict(list)   # key -> unions with its definitions
        self.deps: dict[str, set[str]] = defaultdict(set)     # key -> the tensors it is computed from
        self.users: dict[str, set[str]] = defaultdict(set)

    def declare(self, key: str, shape_commands):
        self.shape[key] = list(shape_commands)

    def define(self, key: str, command: str):
        self.defn[key].append(command)
        for d in leaves_in(command) - {key}:
            self.deps[key].add(d)
            self.users[d].add(key)


class Window:
    def __init__(self, facts: DistFacts, depth: int):
        self.facts, self.depth = facts, depth
        self.level = _levels(facts)
        self.movement = data_movement(facts)
        self.constant = _constants(facts)
        self.order = {k: i for i, k in enumerate(facts.shape)}   # rank by rank, in program order
        self.reset()

    def reset(self):
        """A fresh e-graph holds nothing."""
        self.inserted: set[str] = set()
        self.shaped: set[str] = set()
        self.complete = False

    def explore(self, seeds) -> list[str]:
        """Commands for the G_d tensors up to ``depth`` operators downstream of ``seeds``."""
        have = set(self.inserted)
        new: list[str] = []

        def take(k, pull=False):
            if k not in have:
                have.add(k)
                new.append(k)
                if pull:      # near the inputs: what it reads comes too
                    for d in self.facts.deps.get(k, ()):
                        take(d, pull)

        frontier = sorted((s for s in seeds if s in self.facts.shape), key=self.order.get)
        for s in frontier:
            take(s)
        seen = set(frontier)
        for _ in range(self.depth):
            nxt, before = [], set(have)    # one operator further per level, not a chain ...
            level = list(frontier)
            for k in level:                # (grows: data movement stays on this level)
                for u in self.facts.users.get(k, ()):
                    if u in seen or not all(d in before or self.level[d] <= PULLED_LEVELS
                                            for d in self.facts.deps[u]):
                        continue
                    seen.add(u)
                    take(u)
                    for d in self.facts.deps[u]:
                        take(d, pull=True)
                    if u in self.movement and self.level[u] > PULLED_LEVELS:   # ... but a chain of
                        before.add(u)              # data movement is followed (near the inputs,
                        level.append(u)            # it is a weight's preprocessing: pulled)
                    else:
                        nxt.append(u)
            frontier = nxt
        return self.commands(new)

    def around(self, seeds) -> list[str]:
        """Commands for the G_d tensors connected to ``seeds`` and to their namesakes on the
        other ranks (a relation names one rank's copy of a value every rank computes alike):
        what they are computed from (definitions down to the inputs) and what is computed from
        them, at any depth, and what the ranks compute from constants alone (a causal mask).  A
        tensor a value related to the seeds can equal is there; other branches of the program are
        not (a layer's weights other than through its activations, another loss's labels)."""
        nodes = {k.split(".", 1)[1] for k in seeds}
        start = [k for k in self.order if k.split(".", 1)[1] in nodes]
        new = set(start)
        stack = list(start)
        while stack:            # what they are computed from
            for d in self.facts.deps.get(stack.pop(), ()):
                if d not in new:
                    new.add(d)
                    stack.append(d)
        stack, seen = list(start), set(start)
        while stack:            # what is computed from them (a weight's preprocessing it reads too)
            for u in self.facts.users.get(stack.pop(), ()):
                if u not in seen:
                    seen.add(u)
                    new.add(u)
                    stack.append(u)
                    new |= self._preprocessing(u)
        new |= self.constant
        return self.commands(sorted((k for k in new if k not in self.inserted), key=self.order.get))

    def _preprocessing(self, k) -> set[str]:
        """What ``k`` reads near the inputs (a weight's transpose or view), with what that reads."""
        out, stack = set(), [d for d in self.facts.deps.get(k, ()) if self.level[d] <= PULLED_LEVELS]
        while stack:
            d = stack.pop()
            if d not in out:
                out.add(d)
                stack.extend(self.facts.deps.get(d, ()))
        return out

    def commands(self, keys) -> list[str]:
        """Shapes of the keys and of what they read, and the keys' definitions (each once)."""
        out = []
        for k in sorted(keys, key=lambda k: self.order.get(k, -1)):
            for x in (k, *self.facts.deps.get(k, ())):
                if x not in self.shaped and x in self.facts.shape:
                    self.shaped.add(x)
                    out += self.facts.shape[x]
            if k not in self.inserted:
                self.inserted.add(k)
                out += self.facts.defn.get(k, ())
        return out

    def everything(self) -> list[str]:
        self.complete = True
        return self.commands([k for k in self.facts.shape if k not in self.inserted])


def data_movement(facts: DistFacts) -> set[str]:
    """G_d tensors defined by clean terms only (data movement, collectives): no exploration depth."""
    out = set()
    for k, cmds in facts.defn.items():
        terms = [defined_term(c) for c in cmds]
        if terms and all(is_clean_text(t) for t in terms):
            out.add(k)
    return out


_DEFINITION = re.compile(r'\(union \(Gd "(?:[^"\\]|\\.)*"\) (.*)\)', re.S)


def defined_term(command: str) -> str:
    """The text of the term a G_d definition ``(union (Gd k) term)`` gives its tensor."""
    return _DEFINITION.fullmatch(command).group(1)


def _constants(facts: DistFacts) -> set[str]:
    """G_d tensors defined from constants alone (no input, no value without a definition)."""
    out: set[str] = set()
    for k in facts.shape:        # in program order: what a tensor reads comes before it
        if facts.defn.get(k) and all(d in out for d in facts.deps.get(k, ())):
            out.add(k)
    return out


def _levels(facts: DistFacts) -> dict[str, int]:
    """Operators between each tensor and the graph inputs (longest path, capped)."""
    cap = PULLED_LEVELS + 1
    level: dict[str, int] = {}
    for root in facts.shape:
        stack = [root]
        while stack:            # iterative post-order: graphs are deep
            k = stack[-1]
            if k in level:
                stack.pop()
                continue
            todo = [d for d in facts.deps.get(k, ()) if d not in level]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            level[k] = min(cap, 1 + max((level[d] for d in facts.deps.get(k, ())), default=-1))
    return level
