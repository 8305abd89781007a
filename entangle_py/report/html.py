"""``entangle check --html FILE``: one self-contained page (inline CSS and SVG, no script, nothing
fetched): the verdict, each output's verdict, the failure with its culprit in the distributed
program, a drawing of the failing operator's neighbourhood in G_s and G_d, and a table of every
checked operator with its relation and the source lines of both programs.  Written from the JSON
report alone.
"""
from __future__ import annotations

import re
from html import escape

from entangle_py.report.common import culprit_lines, where

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#1d2330;max-width:1400px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #dde1e8;padding-bottom:4px}
code,.mono,td.term{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.verdict{display:inline-block;padding:4px 12px;border-radius:6px;font-weight:600;color:#fff}
.v-refines{background:#1f8a4c}.v-fails{background:#c0392b}.v-unknown{background:#b9770e}.v-internal-error{background:#6c3483}
.muted{color:#5f6b7a} table{border-collapse:collapse;width:100%;margin-top:6px}
th,td{border:1px solid #dde1e8;padding:4px 7px;text-align:left;vertical-align:top;font-size:13px}
th{background:#f3f5f8} tr.failed td{background:#fdecea} tr.unknown td{background:#fef5e7} tr.notclean td{background:#fbfbf3}
pre{background:#f6f8fa;padding:10px;border-radius:6px;white-space:pre-wrap;font-size:12.5px}
.graphs{display:flex;gap:18px;flex-wrap:wrap} .graph{border:1px solid #dde1e8;border-radius:6px;padding:8px;overflow:auto}
.legend span{display:inline-block;margin-right:12px;font-size:12px}
.sw{display:inline-block;width:12px;height:12px;border-radius:3px;vertical-align:middle;margin-right:4px}
"""

ROLE_FILL = {"failing": "#f5b7b1", "culprit": "#f1948a", "counterpart": "#f8c471", "in best term": "#aed6f1",
             "context": "#eef1f5"}
ROLE_STROKE = {"failing": "#c0392b", "culprit": "#922b21", "counterpart": "#b9770e", "in best term": "#2874a6",
               "context": "#8a94a3"}
BOX_W, BOX_H, GAP_X, GAP_Y = 178, 46, 46, 16


def _short(target: str | None) -> str:
    if not target:
        return ""
    parts = target.split(".")
    return parts[1] if len(parts) >= 2 and parts[0] in ("aten", "_c10d_functional", "c10d_functional") else target


def svg_graph(sub: dict, title: str) -> str:
    """A layered drawing of a small graph: operators left to right in dependency order."""
    nodes, edges = sub.get("nodes", []), sub.get("edges", [])
    if not nodes:
        return f"<div class='graph'><b>{escape(title)}</b><p class='muted'>nothing to draw</p></div>"
    ids = [n["node"] for n in nodes]
    preds = {i: [a for a, b in edges if b == i and a in ids] for i in ids}
    level: dict = {}

    def lv(i, seen=()):
        if i not in level:
            level[i] = 0 if not preds[i] or i in seen else 1 + max(lv(p, seen + (i,)) for p in preds[i])
        return level[i]
    for i in ids:
        lv(i)
    cols: dict = {}
    for i in ids:
        cols.setdefault(level[i], []).append(i)
    pos = {}
    for c, members in cols.items():
        for j, i in enumerate(members):
            pos[i] = (10 + c * (BOX_W + GAP_X), 46 + j * (BOX_H + GAP_Y))
    width = 20 + (max(cols) + 1) * (BOX_W + GAP_X)
    height = 56 + max(len(m) for m in cols.values()) * (BOX_H + GAP_Y)
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' role='img' "
           f"aria-label='{escape(title)}'>",
           "<defs><marker id='arr' viewBox='0 0 10 10' refX='9' refY='5' markerWidth='7' markerHeight='7' "
           "orient='auto-start-reverse'><path d='M0,0L10,5L0,10z' fill='#6b7585'/></marker></defs>",
           f"<text x='10' y='18' font-size='13' font-weight='600'>{escape(title)}</text>"]
    for a, b in edges:
        if a in pos and b in pos:
            (x1, y1), (x2, y2) = pos[a], pos[b]
            x1, y1, x2, y2 = x1 + BOX_W, y1 + BOX_H / 2, x2 - 2, y2 + BOX_H / 2
            if level[b] - level[a] == 1:
                out.append(f"<line x1='{x1}' y1='{y1}' x2='{x2}' y2='{y2}' "
                           f"stroke='#6b7585' stroke-width='1.2' marker-end='url(#arr)'/>")
            else:     # past the columns between: arc over their boxes
                top = min(y1, y2) - BOX_H - 8     # a cubic's apex is 3/4 of the way to its controls
                out.append(f"<path d='M{x1},{y1} C{x1 + GAP_X},{top} {x2 - GAP_X},{top} {x2},{y2}' fill='none' "
                           f"stroke='#6b7585' stroke-width='1.2' marker-end='url(#arr)'/>")
    for n in nodes:
        x, y = pos[n["node"]]
        role = n.get("role", "context")
        label = n["name"] if n["name"] == n["node"] else f"{n['name']} ({n['node']})"
        line = f"line {n['line']}" if n.get("line") else ("input" if n.get("input") else "")
        sub_label = " · ".join(x for x in (_short(n.get("target")) if not n.get("input") else "", line,
                                           n.get("phase") or "") if x)
        tip = f"{label} = {n.get('target')} at {where(n)}"
        out.append(f"<g class='node role-{escape(role.replace(' ', '-'))}'><title>{escape(tip)}</title>"
                   f"<rect x='{x}' y='{y}' width='{BOX_W}' height='{BOX_H}' rx='6' fill='{ROLE_FILL.get(role, '#eee')}' "
                   f"stroke='{ROLE_STROKE.get(role, '#888')}' stroke-width='{2 if role != 'context' else 1}'/>"
                   f"<text x='{x + 8}' y='{y + 18}' font-size='12.5' font-weight='600'>{escape(label[:26])}</text>"
                   f"<text x='{x + 8}' y='{y + 35}' font-size='11' fill='#3d4654'>{escape(sub_label[:32])}</text></g>")
    out.append("</svg>")
    return "<div class='graph'>" + "".join(out) + "</div>"


def _legend() -> str:
    return "<div class='legend'>" + "".join(
        f"<span><i class='sw' style='background:{ROLE_FILL[r]};border:1px solid {ROLE_STROKE[r]}'></i>{escape(r)}</span>"
        for r in ROLE_FILL) + "</div>"


def _gd_lines(op: dict, gd: dict) -> str:
    keys = dict.fromkeys(re.findall(r'\(Gd "((?:[^"\\]|\\.)*)"\)', op.get("relation_sexpr") or ""))
    seen, out = set(), []
    for k in keys:
        n = gd.get(k)
        if not n:
            continue
        text = (f"r{n['rank']} {n['name']}: " + (f"{n['file']}:{n['line']}" if n.get("file") else where(n)))
        if text not in seen:
            seen.add(text)
            out.append(escape(text))
    return "<br>".join(out[:8]) + (" …" if len(out) > 8 else "")


def to_html(data: dict) -> str:
    status = data["status"]
    title = {"refines": "refines", "fails": "refinement fails", "unknown": "unknown: a limit was hit",
             "internal-error": "internal soundness error"}.get(status, status)
    h = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
         f"<title>entangle: {escape(title)}</title><style>{CSS}</style></head><body>",
         f"<h1>entangle check <span id='verdict' class='verdict v-{escape(status)}'>{escape(title)}</span></h1>",
         f"<p class='muted mono'>sequential {escape(data['seq'])} · distributed {escape(data['dist'])}"
         + (f" · spec {escape(data['spec'])}" if data.get("spec") else "")
         + f" · exit code {data['exit_code']} · {data.get('ops_checked', 0)} operators related"
         + (f" · world size {data['world_size']}" if data.get("world_size") else "")
         + (" · joint (forward + backward)" if data.get("joint") else "") + "</p>"]
    for a in data.get("assumptions", []):
        used = a.get("used") or []
        h.append(f"<p><b>assuming</b> {escape(a['name'])}: {escape(a['meaning'])} (written by the user; not proven)"
                 f"<br><span class='muted'>{escape('used ' + '; '.join(used) if used else 'not used by this check')}"
                 "</span></p>")
    for d in data.get("random_draws", []):
        coupled = f" = {d['coupling']}" if d["coupling"] else ": no counterpart in the distributed program"
        h.append(f"<p><b>random draw</b> <span class='mono'>{escape(d['draw'] + coupled)}</span>: {escape(d['why'])}</p>")
    # outputs
    h.append("<h2>Outputs</h2><table id='outputs'><tr><th>output</th><th>verdict</th><th>certificate / where it stopped</th>"
             "<th>expectation</th></tr>")
    expects = {e["output"]: e for e in data.get("expectations", [])}
    for name, v in data.get("outputs", {}).items():
        e = expects.get(name)
        ex = "" if not e else f"{e['required']}: " + ("holds" if e["holds"] else "unknown" if e["holds"] is None
                                                       else f"violated ({e['found']})")
        detail = v.get("certificate") or (f"at {v['at']}" if v.get("at") else "")
        h.append(f"<tr><td class='mono'>{escape(name)}</td><td>{escape(v['verdict'])}</td>"
                 f"<td class='term'>{escape(detail)}</td><td>{escape(ex)}</td></tr>")
    h.append("</table>")
    f = data.get("failure")
    if f:
        loc = f.get("location") or {}
        h.append("<h2>Failure</h2><div id='failure'>")
        h.append(f"<p><b>{escape(f['node'])} = {escape(f['target'])}</b>"
                 + (f" ({escape(loc['phase'])})" if loc.get("phase") else "")
                 + f" — {escape(f['reason'])}<br><span class='mono'>at {escape(f.get('source') or 'no source line')}</span></p>")
        lines = [f"input {k} = {v}" for k, v in (f.get("inputs") or {}).items()]
        lines.append(f"best term found: {f.get('best')}")
        lines += culprit_lines({"location": loc, "producers": f.get("producers", []),
                                "culprits": f.get("culprits", [])})
        if f.get("later"):
            lines.append("later operators without a clean mapping either: " + ", ".join(f["later"]))
        h.append("<pre>" + escape("\n".join(lines)) + "</pre>")
        if f.get("candidates"):
            h.append("<p><b>Best candidate terms</b> (extraction cost)</p><table id='candidates'><tr><th>cost</th><th>term</th></tr>")
            for c in f["candidates"]:
                h.append(f"<tr><td>{c['cost']}</td><td class='term'>{escape(c.get('text') or c['sexpr'])}</td></tr>")
            h.append("</table>")
        if f.get("lemmas"):
            h.append("<p><b>Lemma matches</b> while relating it ({} lemma steps): ".format(f.get("iterations", 0))
                     + ", ".join(f"{escape(k)} × {v}" for k, v in f["lemmas"].items()) + "</p>")
        nb = f.get("neighbourhood") or {}
        if nb:
            rank = (nb.get("dist") or {}).get("rank")
            h.append("<h2>Neighbourhood of the failing operator</h2>" + _legend() + "<div class='graphs' id='neighbourhood'>")
            h.append(svg_graph(nb.get("seq") or {}, f"G_s (sequential): around {f['node']}"))
            h.append(svg_graph(nb.get("dist") or {}, f"G_d (distributed, rank {rank})"))
            h.append("</div>")
        num = data.get("numeric")
        if num and num.get("verdict"):
            h.append(f"<p><b>numeric witness</b>: {escape(num['verdict'])}</p>")
        h.append("</div>")
    elif data.get("numeric"):
        num = data["numeric"]
        text = f"re-check: {num.get('status')}" + (f" ({num.get('reason')})" if num.get("reason") else "")
        h.append(f"<p><b>numeric second opinion</b>: {escape(text)}</p>")
    # every operator
    gd = data.get("gd_nodes") or {}
    h.append("<h2>Operators</h2><table id='operators'><tr><th>#</th><th>operator</th><th>ATen op</th><th>status</th>"
             "<th>sequential source line</th><th>relation (clean term over G_d)</th><th>distributed source lines</th>"
             "<th>lemma steps</th></tr>")
    for i, op in enumerate(data.get("operators", []), 1):
        loc = op.get("location") or {}
        src = f"{loc['file']}:{loc['line']}" + (f" {loc.get('code')}" if loc.get("code") else "") if loc.get("file") else ""
        status = op.get("status", "")
        cls = {"failed": "failed", "unknown": "unknown", "not clean": "notclean"}.get(status, "")
        h.append(f"<tr class='{cls}'><td>{i}</td><td class='mono'>{escape(op['name'])}</td>"
                 f"<td class='mono'>{escape(op.get('target') or loc.get('target') or '')}</td><td>{escape(status)}"
                 + (f" ({escape(loc['phase'])})" if loc.get("phase") else "") + "</td>"
                 f"<td class='mono'>{escape(src)}</td><td class='term'>{escape(op.get('relation') or '')}</td>"
                 f"<td class='mono'>{_gd_lines(op, gd)}</td><td>{op.get('iterations', '')}</td></tr>")
    h.append("</table>")
    h.append(f"<p class='muted'>{escape((data.get('tool') or {}).get('name', 'entangle-py'))} "
             f"{escape((data.get('tool') or {}).get('version', ''))} · report schema {data.get('schema_version')}</p>")
    h.append("</body></html>")
    return "\n".join(h)
