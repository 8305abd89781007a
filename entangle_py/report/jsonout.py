"""The JSON report (``entangle check --json F``): versioned, documented in docs/report-schema.md.

``explain``, ``--html`` and ``--sarif`` are written from this dict alone, so it carries everything
they show.  Bump ``SCHEMA_VERSION`` when a field changes meaning or goes away; adding a field does
not bump it.
"""
from __future__ import annotations

from dataclasses import asdict

from entangle_py import __version__
from entangle_py.report.common import hints

SCHEMA_VERSION = 1


def to_json(res, seq: str, dist: str, spec: str | None = None) -> dict:
    f = res.failure
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "entangle-py", "version": __version__},
        "seq": seq,
        "dist": dist,
        "spec": spec,
        "status": res.status,
        "exit_code": res.exit_code,
        "world_size": res.world_size,
        "joint": res.joint,
        "limits": res.limits,
        "relations": res.relations,
        "certificates": res.certificates,
        "expectations": [{"output": o, "required": req, "found": found, "holds": ok}
                         for o, req, found, ok in res.expectations],
        "outputs": res.outputs,
        "failure": _failure(f) if f else None,
        "hints": hints(res),
        "operators": [{"name": name, **op} for name, op in res.operators.items()],
        "gd_nodes": res.gd_nodes,
        "input_relations": res.input_relations,
        "inferred_inputs": res.inferred_inputs,
        "collectives": [{"group": g, "kind": k, "nodes": {str(r): n for r, n in nodes.items()}}
                        for g, k, nodes in res.collectives],
        "ops_checked": res.ops_checked,
        "assumptions": [{"name": a, "meaning": d, "used": res.assumption_uses.get(a, [])} for a, d in res.assumptions],
        "random_draws": res.random_draws,
        "rank_classes": [c.to_json() for c in res.rank_classes],
        "unchecked_outputs": list(res.unchecked),
        "given": dict(res.given),
        "constants": dict(res.constants),
        "user_lemmas": dict(res.user_lemmas),
        "capture_notes": res.capture_notes,
        "unknown_values": res.unknown_values,
        "timings_s": {k: round(v, 4) for k, v in res.timings.items()},
        "retired": res.retired,
        "rechecked": res.rechecked,
        "blocks": res.blocks,
        "work": res.work,
        "numeric": res.numeric,
    }


def _failure(f) -> dict:
    d = asdict(f)
    detail = d.pop("detail") or {}
    out = {
        "node": d["node"], "target": d["target"], "source": d["source"],
        "location": detail.get("location"),
        "reason": d["reason"],
        # terms as printed (the user's vocabulary) and as s-expressions (G_d leaves by key)
        "best": detail.get("best", d["best"]),
        "best_term": d["best_term"],
        "best_spec": d["best"],
        "inputs": detail.get("inputs", d["inputs"]),
        "inputs_sexpr": d["inputs_terms"],
        "considered": d["considered"],
        "later": d["later"],
        "candidates": d["candidates"],
        "lemmas": d["lemmas"],
        "iterations": d["iterations"],
        "producers": detail.get("producers", []),
        "culprits": detail.get("culprits", []),
        "plans": detail.get("plans", []),
        "neighbourhood": detail.get("neighbourhood"),
    }
    if "culprit_error" in detail:
        out["culprit_error"] = detail["culprit_error"]
    return out
