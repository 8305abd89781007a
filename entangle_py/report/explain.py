"""``entangle explain REPORT.json [--op NAME]``: one operator of a checked program, from the JSON
report alone -- what a person needs to decide "bug or missing lemma".

For the operator (default: the failing one): its definition and source line, its inputs' relations,
the G_d neighbourhood the failure was looked for in (with the counterpart and culprit marked), the
best candidate terms with their extraction costs, and how often each lemma matched while it was
being related; for a failure also where it is in the distributed program and the numeric witness.
No torch and no egglog are loaded.
"""
from __future__ import annotations

import json
import re
import sys

from entangle_py.check.readable import show as show_term
from entangle_py.errors import InputError
from entangle_py.report.common import culprit_lines, node_text, paren_phase, where

COST_NOTE = "100000 per compute op or sequential tensor, 1 per data movement op, G_d tensor or literal"


def load_report(path: str) -> dict:
    try:
        with open(path) as fh:
            data = json.load(fh)
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path} is not JSON ({e})") from None
    if not isinstance(data, dict) or "schema_version" not in data:
        raise InputError(f"{path} is not an entangle report with a schema_version (write it with "
                         f"`entangle check ... --json {path}`)")
    if data["schema_version"] != 1:
        raise InputError(f"{path}: report schema version {data['schema_version']}; this entangle reads version 1")
    return data


def _leaf_namer(data: dict):
    nodes = data.get("gd_nodes") or {}
    return lambda key: (nodes.get(key) or {}).get("display", key)


def explain(data: dict, op: str | None = None, k: int = 5) -> list[str]:
    """The explanation as lines."""
    ops = {o["name"]: o for o in data.get("operators", [])}
    by_port = {o["location"]["name"]: o["name"] for o in ops.values() if o.get("location")}
    f = data.get("failure")
    if op is None:
        if not f:
            names = ", ".join(list(ops)[:10])
            raise InputError(f"the report has no failure ({data.get('status')}); name an operator with --op "
                             f"({names}{' ...' if len(ops) > 10 else ''})")
        op = f["node"]
    name = op if op in ops or (f and f["node"] == op) else by_port.get(op)
    if name is None:
        names = ", ".join(list(ops)[:10])
        raise InputError(f"no operator {op!r} in the report (checked operators: {names}{' ...' if len(ops) > 10 else ''})")
    rec = ops.get(name, {})
    failing = f is not None and f["node"] == name
    namer, world = _leaf_namer(data), data.get("world_size") or None
    loc = rec.get("location") or (f.get("location") if failing else None) or {}
    lines = []
    status = rec.get("status", "failed" if failing else "?")
    why = f" ({f['reason']})" if failing else ""
    lines.append(f"operator {name} = {rec.get('target') or (f or {}).get('target')}{paren_phase(loc)}: {status}{why}")
    lines.append(f"  at {where(loc) if loc else (f or {}).get('source') or 'no source line'}")
    if rec.get("args"):
        lines.append(f"  definition: {name} = {rec['args']}")
    # its inputs' relations
    lines.append("  inputs:")
    rels = data.get("input_relations") or {}
    reads = rec.get("reads") or list((f or {}).get("inputs", {}) if failing else [])
    for r in reads:
        if failing and r in f.get("inputs", {}):
            text = f["inputs"][r]
        elif r in rels:
            text = f"{rels[r]} (input relation)"
        else:
            src = ops.get(r) or ops.get(by_port.get(r, ""), {})
            text = src.get("relation") or ("no clean term" if src.get("status") in ("not clean", "failed")
                                           else "not related (a view or identity of its input, or a constant)")
        lines.append(f"    {r} = {text}")
    if not failing and rec.get("relation"):
        lines.append(f"  relation: {name} = {rec['relation']}")
    # the G_d neighbourhood
    if failing and (f.get("neighbourhood") or {}).get("dist", {}).get("nodes"):
        nb = f["neighbourhood"]["dist"]
        lines.append(f"  G_d neighbourhood considered (rank {nb['rank']}; {len(nb['nodes'])} operators):")
        for n in nb["nodes"]:
            role = f" [{n['role']}]" if n.get("role") not in (None, "context") else ""
            at = f"({where(n)})" if n.get("input") else f"at {where(n)}"
            lines.append(f"    {node_text(n)}{role}{paren_phase(n)} {at}")
    else:
        keys = _leaves_of(rec.get("relation_sexpr") or "") if not failing else []
        if keys:
            lines.append("  G_d tensors of its relation:")
            for key in keys:
                n = (data.get("gd_nodes") or {}).get(key)
                if n:
                    lines.append(f"    {n['display']}: {node_text(n)}{paren_phase(n)} at {where(n)}")
    # candidates
    if failing and f.get("candidates"):
        cands = f["candidates"][:k]
        lines.append(f"  best {len(cands)} candidate terms (extraction cost; {COST_NOTE}):")
        for i, c in enumerate(cands, 1):
            text = c.get("text") or show_term(c["sexpr"], namer, world)
            lines.append(f"    {i}. {c['cost']:>7}  {text}")
    elif rec.get("relation"):
        lines.append(f"  best term: {rec['relation']} (clean)")
    # lemmas
    lemmas = (f.get("lemmas") if failing else None) or rec.get("lemmas") or {}
    steps = (f.get("iterations") if failing else None) or rec.get("iterations", 0)
    if lemmas:
        lines.append(f"  lemma matches while relating it ({steps} lemma steps; egglog matches per lemma):")
        width = max(len(n) for n in lemmas)
        for lem, count in sorted(lemmas.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"    {lem:<{width}}  {count}")
    else:
        lines.append(f"  no lemma matched while relating it ({steps} lemma steps)")
    if failing:
        detail = {"location": loc, "producers": f.get("producers", []), "culprits": f.get("culprits", [])}
        if f.get("culprit_error"):
            detail["culprit_error"] = f["culprit_error"]
        lines += culprit_lines(detail)
        lines += _verdict_hint(data, f)
    return lines


def _leaves_of(sexpr: str) -> list[str]:
    return list(dict.fromkeys(re.findall(r'\(Gd "((?:[^"\\]|\\.)*)"\)', sexpr)))


def _verdict_hint(data: dict, f: dict) -> list[str]:
    num = data.get("numeric") or {}
    if num.get("kind") != "witness" or num.get("status") == "skipped":
        return ["  bug or missing lemma: no numeric witness ran (--no-numeric, or over budget); a culprit "
                "above that reads a collective or a tensor of the wrong rank points at a bug"]
    if num.get("status") == "confirmed":
        return [f"  bug: the numeric witness confirms it ({num.get('verdict')})"]
    return [f"  probably a missing lemma: {num.get('verdict')}"]


def cli_explain(args) -> int:
    data = load_report(args.report)
    for line in explain(data, args.op, args.k):
        print(line)
    sys.stdout.flush()
    return 0
