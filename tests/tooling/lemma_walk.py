"""Lemma checks on drawn bindings (``run``): a binding applied the way egglog would (see lemma_draw.py),
and the helper walks (``Walks``) that finish the helper terms a right side leaves, as the walk
lemmas do in the e-graph."""
from __future__ import annotations

import random
import zlib

from entangle_py.semantics.terms import EvalError, Var, evaluate, parse_sexpr
from tooling.lemma_draw import Drawer, _holds, _match, pattern_vars, same


class Stuck(Exception):
    """A helper walk that no walk lemma advances: egglog leaves it unfinished (never clean)."""


class Walks:
    """Helper terms (map_*, zip_*, dset, ...) computed the way egglog computes them: by the walk
    lemmas of the library, not by the helpers' Python meanings.  A walk no lemma advances is Stuck."""

    def __init__(self, lemmas):
        self.by_head: dict[str, list] = {}
        for lem in lemmas:
            lhs = parse_sexpr(lem.lhs)
            # a walk advances a helper term; a lemma rewriting a list cell (map-scalar-div-fold: a
            # Cons of quotients is a map_scalar) rewrites data, which evaluates as it is
            if lem.ruleset == "walks" and lhs[0].name != "Cons":
                self.by_head.setdefault(lhs[0].name, []).append(
                    (lhs, [parse_sexpr(c) for c in lem.when], parse_sexpr(lem.rhs), pattern_vars(lhs)))

    def evaluate(self, expr, env):
        if not isinstance(expr, tuple):
            return evaluate(expr, env)
        head = expr[0].name
        vals = [self.evaluate(a, env) for a in expr[1:]]
        if head not in self.by_head:
            return evaluate((expr[0], *[_Quote(v) for v in vals]), {})
        for lhs, when, rhs, bound in self.by_head[head]:
            m = {}
            if len(lhs) == len(expr) and all(_match(p, v, m) for p, v in zip(lhs[1:], vals)) and _holds(when, bound, m):
                return self.evaluate(rhs, m)
        raise Stuck(f"{head}: no walk lemma applies")


class _Quote(Var):
    """An already computed value inside a term handed to ``terms.evaluate``."""

    def __init__(self, value):
        object.__setattr__(self, "name", "__quoted__")
        object.__setattr__(self, "value", value)


_orig_evaluate = evaluate


def evaluate(expr, env):        # noqa: F811  (terms.evaluate, with quoted values)
    if isinstance(expr, _Quote):
        return expr.value
    if isinstance(expr, tuple) and any(isinstance(a, _Quote) for a in expr[1:]):
        env = dict(env)
        args = []
        for i, a in enumerate(expr[1:]):
            if isinstance(a, _Quote):
                env[f"__q{i}"] = a.value
                args.append(Var(f"__q{i}"))
            else:
                args.append(a)
        return _orig_evaluate((expr[0], *args), env)
    return _orig_evaluate(expr, env)


def assumption_holds(lemma, env) -> bool:
    """The assumptions a lemma rests on, on a binding (``valid_indices``: every table lookup in the
    left side reads rows of its table, every pick and loss target a class of the last dim;
    ``no_ignored_targets``: no loss target equals its loss's ignore index)."""
    valid, unpadded = "valid_indices" in lemma.assumes, "no_ignored_targets" in lemma.assumes
    if not (valid or unpadded):
        return True
    ok = True

    def go(e):
        nonlocal ok
        if isinstance(e, tuple) and unpadded and e[0] in (Var("tpick"), Var("tcount"), Var("tplace")):
            try:
                ids, c = evaluate(e[2], env), evaluate(e[3], env)
            except EvalError:
                return
            if ids.numel() and bool((ids == c).any()):
                ok = False
        if isinstance(e, tuple) and not valid:
            for a in e[1:]:
                go(a)
            return
        if isinstance(e, tuple):
            if e[0] == Var("take"):
                try:
                    w, ids = evaluate(e[1], env), evaluate(e[2], env)
                except EvalError:
                    return
                if ids.numel() and (w.dim() == 0 or bool(((ids < 0) | (ids >= w.shape[0])).any())):
                    ok = False
            if e[0] in (Var("place"), Var("tplace")):
                # a placement's (a loss gradient's) targets: columns of the new last dim
                try:
                    ids, n = evaluate(e[2], env), evaluate(e[-1], env)
                except EvalError:
                    return
                if ids.numel() and bool(((ids < 0) | (ids >= n)).any()):
                    ok = False
            if e[0] in (Var("pick"), Var("tpick"), Var("tcount")):
                # a pick's index and a loss's targets: classes of the last dim
                try:
                    x, ids = evaluate(e[1], env), evaluate(e[2], env)
                except EvalError:
                    return
                if ids.numel() and (x.dim() == 0 or bool(((ids < 0) | (ids >= x.shape[-1])).any())):
                    ok = False
            for a in e[1:]:
                go(a)
    go(parse_sexpr(lemma.lhs))
    return ok


def run(lemma, walks: Walks, draws: int = 8000, enough: int = 100, seed: int | None = None):
    """Draw bindings.  Returns (accepted, stuck, failures): bindings the condition accepts with the
    left side defined; those whose right side is an unfinished walk; (env, reason) of failures."""
    d = Drawer(lemma)
    rng = random.Random(zlib.crc32(lemma.name.encode()) if seed is None else seed)
    plain = lemma.ruleset == "walks"      # a walk lemma checks the helper's meaning, one step
    accepted, stuck, failures = 0, 0, []
    for _ in range(draws):
        env = d.draw(rng)
        if not d.accepts(env) or not assumption_holds(lemma, env):
            continue
        try:
            lhs = evaluate(d.lhs, env)
        except EvalError:
            continue                     # lhs undefined: the rewrite never meets this term
        accepted += 1
        try:
            rhs = evaluate(d.rhs, env) if plain else walks.evaluate(d.rhs, env)
        except Stuck:
            stuck += 1
            continue
        except EvalError as e:
            failures.append((env, f"right side undefined: {e}"))
        else:
            why = same(lhs, rhs)
            if why:
                failures.append((env, why))
        if failures or accepted - stuck >= enough:
            break
    return accepted, stuck, failures
