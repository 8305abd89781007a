"""The witness after "fails": is the failing G_s tensor something the distributed program holds (a
missing lemma) or does it compute something else (a bug), and where (see ``recheck.py``)."""
from __future__ import annotations

import math
import time

from entangle_py.lazy import torch
from entangle_py.check.culprit import Provenance
from entangle_py.oracle import graph_values
from entangle_py.oracle import placement
from entangle_py.check import spec as S
from entangle_py.semantics.terms import EvalError
from entangle_py.oracle.numeric_runs import (DEFAULT_BUDGET, DEFAULT_DRAWS, Draw, Skip, compare, diff_text,
                                             ignored_targets, prepare)
from entangle_py.oracle.proof_recheck import first_wrong_op, mark_unsound, recheck_draw

MAX_CANDIDATES = 4000


# ----------------------------------------------------------------------------- witness

def witness(checker, result, draws: int = DEFAULT_DRAWS, budget_bytes: int = DEFAULT_BUDGET, seed: int = 0) -> dict:
    """Is the failing G_s tensor something the distributed program holds (a missing lemma), or
    does the program compute something else (a bug)?"""
    f = result.failure
    out = {"kind": "witness", "status": "skipped", "draws": 0}
    t0 = time.perf_counter()
    family = _family(f.target) if f else "the output relation"
    try:
        sizes, need = prepare(checker, budget_bytes)
        out.update(sizes=sizes, estimated_bytes=need)
        local, outputs, best_equal, unsound, out["draws"] = _compare(checker, result, draws, seed, sizes)
        out["best_term_equal"] = best_equal
        equal_local = [k for k, v in local.items() if v["equal"]]
        outputs_equal = bool(outputs) and all(any(v["equal"] for v in c.values()) for c in outputs.values())
        n = out["draws"]
        # judged at the checked outputs: the failing operator may be an intermediate whose value
        # is held somewhere while the program goes wrong downstream of it
        if outputs_equal and equal_local:
            label = _prefer(equal_local, _label(checker, 0, f.node))
            out.update(status="equal", holds=label,
                       verdict=f"numerically equal on {n} draws: {label} holds {f.node}'s value; the proof lacks a "
                               f"lemma for {family}; probably not a bug")
        elif outputs_equal:
            held = {p: next(k for k, v in c.items() if v["equal"]) for p, c in outputs.items()}
            out.update(status="equal", holds=held,
                       verdict=f"numerically equal on {n} draws at the checked outputs "
                               f"({', '.join(f'{p} = {h}' for p, h in held.items())}), though no rank holds "
                               f"{f.node if f else 'the failing tensor'}'s value itself; the proof lacks a lemma "
                               f"for {family}; probably not a bug")
        else:
            same = _label(checker, 0, f.node) if f and not equal_local else None
            where, label, diff = _closest(local, f.node if f else None, outputs, same, downstream=bool(best_equal))
            out.update(status="confirmed", at=where, candidate=label, diff=diff,
                       verdict=f"confirmed: the distributed program computes something else here "
                               f"({where}: {label} differs, {diff_text(diff)})")
            if where.startswith("at output ") and (best_equal or f is None):
                # the failing operator's value is right, or no operator failed (an output's
                # relation names tensors the program does not return): what goes wrong is how the
                # program computes the output, so name where it does
                out["output_sources"] = output_sources(checker, where[len("at output "):])
        if out["status"] == "confirmed":
            _say_what_was_guessed(checker, out, outputs)
            _try_without_padded_targets(checker, result, out, draws, seed, sizes)
        out["candidates"] = len(local)
        free = uncoupled_draws(checker, [f.node] if f else [p.node for p in checker.checked_outputs])
        if out["status"] == "confirmed" and free:
            out.update(status="undecided",
                       verdict=f"not decided: what fails is computed from the random draw{'s' if len(free) > 1 else ''} "
                               f"{', '.join(free)}, which the distributed program has no counterpart for; values "
                               f"drawn independently differ whether or not the program is right")
        if unsound is not None:
            bad, culprit = unsound
            out["unsound"] = {"operator": culprit, **(bad or {})}
            mark_unsound(checker, result, bad, culprit)
    except Skip as e:
        out["reason"] = str(e)
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def _say_what_was_guessed(checker, out: dict, outputs: dict):
    """A confirmed verdict at an output without [expect] rests on relations the witness guessed:
    say so, and which it tried (none held)."""
    port = out["at"][len("at output "):] if out["at"].startswith("at output ") else None
    if port is None or port not in outputs or next(iter(checker.expected(port)), None) is not None:
        return
    tried = list(outputs[port])
    out["guessed"] = {"output": port, "tried": tried}
    out["verdict"] += (f"; {port} has no [expect], so its relation was guessed: none of {', '.join(tried)} "
                       f"holds on {out['draws']} draws (write the relation you mean in [expect])")


def _try_without_padded_targets(checker, result, out: dict, draws: int, seed: int, sizes: dict):
    """The draws set some loss targets to their ignore index (padded labels), unless the spec
    assumes no_ignored_targets.  Where the programs then differ, draw again without padding: if
    they agree, the difference is only in how they treat padded labels, and the verdict names the
    assumption that rules padding out (it stays confirmed: with padded labels they differ)."""
    if "no_ignored_targets" in checker.spec.assume:
        return
    padded = ignored_targets(checker.seq)
    if not padded:
        return
    local, outputs, _, _, n = _compare(checker, result, draws, seed, sizes, padded_targets=False)
    agree = bool(outputs) and all(any(v["equal"] for v in c.values()) for c in outputs.values())
    out["padded_targets"] = {"inputs": sorted(padded), "equal_without": agree}
    if agree:
        where = ", ".join(f"{k} = {v}" for k, v in sorted(padded.items()))
        out["verdict"] += (f"; only where labels are padding: drawn with no target equal to its ignore index "
                           f"({where}) the programs agree on {n} draws. If no label is ever padding, assume it "
                           f"(--assume no_ignored_targets, or [assume] no_ignored_targets = true); otherwise the "
                           f"programs treat padded labels differently")


def _compare(checker, result, draws: int, seed: int, sizes: dict, padded_targets: bool = True):
    """Over ``draws`` draws: (held candidates of the failing tensor, candidates at each checked
    output, whether the failure's best term holds its value, what a re-check of the proof found
    wrong, draws run); each candidate label -> {'equal', 'worst'}."""
    f = result.failure
    local: dict[str, dict] = {}
    outputs: dict[str, dict] = {}
    best_equal, unsound, n = None, None, 0
    for d in range(draws):
        run = Draw(checker, seed + d, sizes, padded_targets)
        n = d + 1
        if unsound is None:     # what the proof did claim must hold too
            culprit, bad = first_wrong_op(checker, result, run), recheck_draw(checker, result, run)
            if culprit or bad:
                unsound = (bad, culprit)
        if f is not None and f.node in run.seq_env and isinstance(run.seq_env[f.node], torch.Tensor):
            expected = run.seq_env[f.node]
            for label, value in _held_candidates(checker, run, expected, f.node):
                _merge(local, label, compare(expected, value))
            if f.best_term:
                try:
                    c = compare(expected, run.eval(f.best_term))
                    best_equal = c["equal"] if best_equal is None else best_equal and c["equal"]
                except EvalError:
                    pass
        for port, cands in _output_candidates(checker, run).items():
            for label, value in cands:
                _merge(outputs.setdefault(port, {}), label, compare(run.seq_value(port), value))
    return local, outputs, best_equal, unsound, n


def uncoupled_draws(checker, nodes) -> list[str]:
    """The sequential random draws without a coupling that ``nodes`` are computed from."""
    free = {u.seq.node: u.seq.key for u in checker.draws.uncoupled}
    return sorted(free[n] for n in checker._ancestors(nodes) if n in free) if free else []


def output_sources(checker, port: str, depth: int = 2) -> list[dict]:
    """Where each rank computes its output ``port``: the output's operator and those it reads,
    ``depth`` operators up, one location per source line."""
    prov = Provenance(checker)
    out, seen = [], set()
    for r, g in enumerate(checker.dist.ranks):
        p = next((p for p in g.outputs if p.name == port), None)
        level = [p.node] if p is not None else []
        for _ in range(depth):
            nxt = []
            for name in level:
                n = g.node(name)
                if n.is_placeholder:
                    continue
                loc = prov.location(r, name)
                if loc.get("file") and (loc["file"], loc["line"]) not in seen:
                    seen.add((loc["file"], loc["line"]))
                    out.append(loc)
                nxt += list(n.refs())
            level = nxt
    return out


def _family(target: str) -> str:
    parts = target.split(".")
    return parts[1] if len(parts) >= 2 and parts[0] in ("aten", "prims") else target


def _merge(table: dict, label: str, c: dict):
    prev = table.get(label)
    if prev is None:
        table[label] = {"equal": c["equal"], "worst": c}
        return
    prev["equal"] = prev["equal"] and c["equal"]
    if not c["equal"] and (prev["worst"]["equal"] or (c["max_abs"] or math.inf) > (prev["worst"]["max_abs"] or 0)):
        prev["worst"] = c


def _prefer(labels, same_name):
    return same_name if same_name in labels else labels[0]


def _closest(local: dict, node, outputs: dict, same_name=None, downstream=False):
    """(where, label, diff) for a confirmed verdict: the rank-0 tensor of the failing node's name,
    else the closest held candidate, else the first output that differs.  ``downstream``: the best
    term over the ranks' tensors holds the failing node's value, so what is wrong comes after it
    (a rank's own tensor of that name may differ only because it is a shard's): an output first."""
    if same_name in local and not downstream:
        return f"at {node}", same_name, local[same_name]["worst"]
    for port, cands in outputs.items():
        if not any(v["equal"] for v in cands.values()):
            label = min(cands, key=lambda k: cands[k]["worst"]["max_abs"] if cands[k]["worst"]["max_abs"] is not None
                        else math.inf)
            return f"at output {port}", label, cands[label]["worst"]
    if same_name in local:
        return f"at {node}", same_name, local[same_name]["worst"]
    if local and same_name is not None:
        label = min(local, key=lambda k: local[k]["worst"]["max_abs"] if local[k]["worst"]["max_abs"] is not None
                    else math.inf)
        return f"at {node}", label, local[label]["worst"]
    return f"at {node}", "(no G_d tensor of its shape)", {"why": "no rank holds a tensor of this shape",
                                                          "examples": []}


def _kind(t: torch.Tensor) -> str:
    return "bool" if t.dtype == torch.bool else "float" if t.is_floating_point() else "int"


def _held_candidates(checker, run: Draw, expected: torch.Tensor, node: str):
    """(label, value): what the distributed program holds that may be the failing G_s tensor:
    every rank's tensors of its shape and kind, and over the ranks' tensors of one name the
    concat along a dim (shards) and the sum (partial values)."""
    shape, kind = tuple(expected.shape), _kind(expected)
    count = 0
    by_name: dict[str, list] = {}
    for r, env in enumerate(run.envs):
        for name, v in env.items():
            items = [(name, v)] if isinstance(v, torch.Tensor) else \
                [(f"{name}#{i}", x) for i, x in enumerate(v) if isinstance(x, torch.Tensor)] \
                if isinstance(v, (tuple, list)) else []
            for key, t in items:
                if _kind(t) != kind:
                    continue
                by_name.setdefault(key, [None] * len(run.envs))[r] = t
                if tuple(t.shape) == shape and count < MAX_CANDIDATES:
                    count += 1
                    yield _label(checker, r, key), t
    for key, ts in by_name.items():
        if any(t is None for t in ts) or len(ts) < 2 or ts[0].dim() != len(shape):
            continue
        names = ", ".join(_label(checker, r, key) for r in range(len(ts)))
        if all(tuple(t.shape) == shape for t in ts) and kind == "float":
            yield f"sum({names})", sum(ts[1:], ts[0])
        for dim in range(len(shape)):
            if all(t.shape[:dim] == shape[:dim] and t.shape[dim + 1:] == shape[dim + 1:] for t in ts) and \
                    sum(t.shape[dim] for t in ts) == shape[dim]:
                yield f"concat({names}, dim={dim})", torch.cat(ts, dim)


def _label(checker, r: int, key: str) -> str:
    try:
        return checker.show_leaf(f"r{r}.{key}")
    except (KeyError, IndexError, ValueError):
        return f"r{r}.{key}"


def _output_candidates(checker, run: Draw) -> dict:
    """Per checked output: its [expect] relation's terms over the ranks' tensors, or (without
    one) the rank-0 output of that name, the concat of the ranks' outputs along a dim, their sum."""
    W = checker.dist.world_size
    out = {}
    for p in checker.checked_outputs:
        expected = run.seq_env.get(p.node)
        if not isinstance(expected, torch.Tensor):
            continue
        rel = next(iter(checker.expected(p.name)), None)
        cands = []
        if rel is not None:
            for t in S.relation_terms(rel, p.name, W, checker.spec.mesh, ndim=expected.dim()):
                try:
                    cands.append((str(t), placement.eval_term(t, run.named())))
                except graph_values.InterpError:
                    pass
            out[p.name] = cands
            continue
        ts = [run.named()[r].get(p.name) for r in range(W)]
        if any(not isinstance(t, torch.Tensor) for t in ts):
            continue
        cands.append((f"r0.{p.name}", ts[0]))
        if W > 1 and ts[0].is_floating_point() and all(t.shape == ts[0].shape for t in ts):
            total = sum(ts[1:], ts[0])
            cands.append((f"sum over ranks of {p.name}", total))
            cands.append((f"mean over ranks of {p.name}", total / W))
            cands.append((f"max over ranks of {p.name}", torch.stack(ts).amax(0)))
        for dim in range(expected.dim()):
            try:
                cands.append((f"concat({p.name}, dim={dim})", torch.cat(ts, dim)))
            except RuntimeError:
                pass
        out[p.name] = cands
    return out
