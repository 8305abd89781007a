"""Pieces every report form shares: locations and the culprit in the distributed program as text.

Reads the dicts of a JSON report (``check/culprit.py`` makes them); no torch, no egglog.
"""
from __future__ import annotations

import re

from entangle_py.ir import ops

MAX_LISTED = 12


def where(loc: dict | None) -> str:
    """``file:line in fn: code`` of a location (or what little is known)."""
    if not loc:
        return "?"
    if loc.get("input"):
        return "an input of " + ("the sequential program" if loc.get("rank") is None else f"rank {loc['rank']}")
    if not loc.get("file"):
        return "no source line"
    out = f"{loc['file']}:{loc['line']}"
    if loc.get("code"):
        out += f" in {loc.get('function') or '?'}: {loc['code']}"
    return out


def node_text(loc: dict) -> str:
    """``mm_2 = aten.mm.default`` (``out (add) = ...`` when a port names the node)."""
    if loc.get("input"):
        return loc["name"]
    name = loc["name"] if loc["name"] == loc["node"] else f"{loc['name']} ({loc['node']})"
    return f"{name} = {loc.get('target')}"


def describe(loc: dict) -> str:
    """``mm_2 = aten.mm.default at file:line in fn: code`` (``input:x (an input of rank 0)``)."""
    if loc.get("input"):
        return f"{loc['name']} ({where(loc)})"
    return f"{node_text(loc)} at {where(loc)}"


def phase_text(loc: dict | None) -> str:
    return f", {loc['phase']}" if loc and loc.get("phase") else ""


def paren_phase(loc: dict | None) -> str:
    return f" ({loc['phase']})" if loc and loc.get("phase") else ""


def _across_ranks(sexpr: str) -> bool:
    """Whether a G_d definition reads other ranks' tensors (a collective)."""
    return len(set(re.findall(r'\(Gd "r(\d+)\.', sexpr))) > 1


def culprit_lines(detail: dict) -> list[str]:
    """The failure in the distributed program, as lines (text report and pytest helper)."""
    out = []
    producers = [p for p in detail.get("producers", []) if not p.get("input")]
    for p in producers[:MAX_LISTED]:
        out.append(f"    {p['display']}: rank {p['rank']} {node_text(p)}{paren_phase(p)}"
                   f" at {where(p)}")
    for cu in detail.get("culprits", []):
        loc, reader = cu["location"], cu["reader"]
        ranks = cu["ranks"]
        head = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, sorted(ranks)))}"
        out.append(f"  in the distributed program ({head}{phase_text(loc)}):")
        out.append(f"    {describe(loc)}")
        op = (detail.get("location") or {}).get("node") or "operator"
        if loc["node"] != reader["node"] or loc["rank"] != reader["rank"]:
            if cu.get("found_definition") and _across_ranks(cu.get("found_definition_sexpr") or ""):
                out.append(f"      computes {cu['found_definition']}")
            out.append(f"    read by {node_text(reader)}{paren_phase(reader)}"
                       f" at {where(reader)}")
            out.append(f"      where the sequential {op} needs {cu['needed']}")
        else:
            out.append(f"      has {cu['found']} where the sequential {op} needs {cu['needed']}")
    for pl in detail.get("plans", []):
        at = f" at {pl['file']}:{pl['line']}" if pl.get("file") else ""
        out.append(f"  module {pl['module']} is parallelized by {pl['style']}{at}")
        if pl.get("code"):
            out.append(f"      {pl['code']}")
    if detail.get("culprit_error"):
        out.append(f"  (locating the culprit in the distributed program failed: {detail['culprit_error']})")
    return out


def coverage_line(res) -> str | None:
    """What the spec's [outputs] check leaves unchecked, said with the verdict (a "refines" covers
    only what was checked), or None when every output is."""
    if not res.unchecked:
        return None
    grads = [o for o in res.unchecked if o.startswith("grad:")]
    rest = [o for o in res.unchecked if not o.startswith("grad:")]
    parts = ([f"{len(grads)} gradient{'s' * (len(grads) != 1)}"] if grads else []) + \
            ([f"{len(rest)} output{'s' * (len(rest) != 1)}"] if rest else [])
    names = ", ".join(res.unchecked[:MAX_LISTED]) + (" ..." if len(res.unchecked) > MAX_LISTED else "")
    return f"not checked: {' and '.join(parts)} ({names}); add them to [outputs] check"


def hints(res) -> list[str]:
    """What the user can do about a failure that a known assumption discharges."""
    f = res.failure
    out = []
    assumed = {a for a, _ in res.assumptions}
    used_lemmas = [f for f, names in res.user_lemmas.items() if names]
    if res.status == "internal-error" and used_lemmas:
        out.append(f"the proof applied lemmas of your own (--lemmas {', '.join(used_lemmas)}), which entangle-py does "
                   f"not check: look at them first")
    if f is not None and (f.target in ops.INDEXING or f.target == ops.INDEX_TENSOR) and "valid_indices" not in assumed:
        out.append("a table lookup: if the distributed program masks or offsets ids (a vocab-parallel "
                   "embedding), it equals the sequential lookup only for ids inside the table; when every "
                   "id is, add `[assume] valid_indices = true` to the spec, or --assume valid_indices (printed with the verdict, not proven)")
    return out
