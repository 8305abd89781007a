"""``entangle check --sarif FILE``: SARIF 2.1.0, so CI systems annotate the failing source lines.

One result per failing operator: its ``locations`` are the sequential program's line and the
distributed program's culprit lines (each with a message saying which program, rank and phase);
``relatedLocations`` are the lines producing the tensors of the best term.  Operators the check
deferred and that stayed without a clean mapping are ``note`` results; an expectation that does not
hold while every operator is related is an ``error`` at the output's line.  Relative source paths
are relative to ``SRCROOT``, the directory the check ran in.  Written from the JSON report alone.
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

RULES = [
    ("ENT001", "NoCleanMapping", "An operator of the sequential program has no clean mapping onto the "
     "distributed program", "error"),
    ("ENT002", "LimitHit", "A limit stopped the check at this operator (verdict unknown)", "warning"),
    ("ENT003", "OutputNotReturned", "An output's only clean terms name tensors the distributed program does "
     "not return", "error"),
    ("ENT004", "InternalSoundnessError", "A proof step is wrong (a lemma or a lowering): please report it",
     "error"),
    ("ENT005", "ExpectationViolated", "An output's relation is not the one the spec expects", "error"),
    ("ENT006", "AlsoWithoutCleanMapping", "A later operator also without a clean mapping", "note"),
]
_INDEX = {r[0]: i for i, r in enumerate(RULES)}


def _rule_of(failure: dict) -> str:
    reason = failure.get("reason", "")
    if reason.startswith("internal"):
        return "ENT004"
    if reason.startswith("limit"):
        return "ENT002"
    if reason.startswith("output "):
        return "ENT003"
    return "ENT001"


def _uri(path: str) -> dict:
    p = Path(path)
    if p.is_absolute():
        return {"uri": "file://" + quote(p.as_posix())}
    return {"uri": quote(p.as_posix()), "uriBaseId": "SRCROOT"}


def _location(loc: dict | None, text: str, ident: int | None = None) -> dict | None:
    if not loc or not loc.get("file") or not loc.get("line"):
        return None
    region = {"startLine": int(loc["line"])}
    if loc.get("code"):
        region["snippet"] = {"text": loc["code"]}
    out = {"physicalLocation": {"artifactLocation": _uri(loc["file"]), "region": region},
           "message": {"text": text}}
    if ident is not None:
        out["id"] = ident
    return out


def _where(loc: dict) -> str:
    prog = "sequential program" if loc.get("rank") is None else f"distributed program, rank {loc['rank']}"
    phase = f", {loc['phase']}" if loc.get("phase") else ""
    return f"{prog}{phase}: {loc.get('name') or loc.get('node')} = {loc.get('target')}"


def _result(rule: str, message: str, locations: list, related: list, props: dict, level: str | None = None) -> dict:
    r = {"ruleId": rule, "ruleIndex": _INDEX[rule], "level": level or RULES[_INDEX[rule]][3],
         "message": {"text": message},
         "locations": [x for x in locations if x]}
    rel = [x for x in related if x]
    if rel:
        r["relatedLocations"] = rel
    r["properties"] = props
    return r


def to_sarif(data: dict, cwd: str | None = None) -> dict:
    results = []
    f = data.get("failure")
    ops = {o["name"]: o for o in data.get("operators", [])}
    if f:
        loc = f.get("location")
        rule = _rule_of(f)
        msg = (f"{f['node']} = {f['target']}: {f['reason']}; best term found: {f.get('best')}")
        locs = [_location(loc, f"{_where(loc)} (the operator without a clean mapping)") if loc else None]
        for cu in f.get("culprits", []):
            c, reader = cu["location"], cu["reader"]
            ranks = ", ".join(map(str, sorted(cu.get("ranks", [c["rank"]]))))
            locs.append(_location(c, f"{_where(c)} (ranks {ranks}): computes {cu.get('found_definition') or cu['found']}, "
                                     f"where the sequential {f['node']} needs {cu['needed']}"))
            if (reader["node"], reader["rank"]) != (c["node"], c["rank"]):
                locs.append(_location(reader, f"{_where(reader)}: reads {cu['found']} where the sequential "
                                              f"{f['node']} needs {cu['needed']}"))
            msg += f"; in the distributed program: {c.get('name')} at {c.get('file')}:{c.get('line')}"
        if not any(locs):          # no source line anywhere: point at the sequential bundle
            locs = [{"physicalLocation": {"artifactLocation": _uri(data["seq"])},
                     "message": {"text": "the sequential program (no source line recorded)"}}]
        related = [_location(p, f"{p['display']}: {_where(p)} (a tensor of the best term)", i)
                   for i, p in enumerate(f.get("producers", []), 1)]
        results.append(_result(rule, msg, _dedup(locs), related,
                               {"node": f["node"], "target": f["target"], "best_term": f.get("best_term"),
                                "status": data["status"]}))
        for name in f.get("later", []):
            op = ops.get(name, {})
            results.append(_result("ENT006", f"{name} = {op.get('target')}: also without a clean mapping "
                                             f"(after {f['node']})",
                                   [_location(op.get("location"), _where(op["location"])) if op.get("location") else None],
                                   [], {"node": name}))
    else:
        for e in data.get("expectations", []):
            if e["holds"] is False:
                loc = (data.get("outputs", {}).get(e["output"]) or {}).get("location")
                results.append(_result("ENT005", f"expect {e['output']} = {e['required']}: violated "
                                                 f"(found {e['found']})",
                                       [_location(loc, _where(loc)) if loc else None], [], {"output": e["output"]}))
    tool = data.get("tool") or {"name": "entangle-py", "version": "?"}
    root = Path(cwd or os.getcwd()).resolve().as_posix().rstrip("/") + "/"
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": tool["name"], "version": tool["version"], "semanticVersion": tool["version"],
                "rules": [{"id": i, "name": n, "shortDescription": {"text": d},
                           "defaultConfiguration": {"level": lv}} for i, n, d, lv in RULES]}},
            "originalUriBaseIds": {"SRCROOT": {"uri": "file://" + quote(root)}},
            "invocations": [{"executionSuccessful": data["status"] != "internal-error",
                             "exitCode": data["exit_code"],
                             "commandLine": f"entangle check {data['seq']} {data['dist']}"
                                            + (f" --spec {data['spec']}" if data.get("spec") else "")}],
            "results": results,
        }],
    }


def _dedup(locs):
    out, seen = [], set()
    for x in locs:
        if not x:
            continue
        k = (x["physicalLocation"]["artifactLocation"]["uri"], x["physicalLocation"].get("region", {}).get("startLine"),
             x["message"]["text"])
        if k not in seen:
            seen.add(k)
            out.append(x)
    return out
