"""``entangle show FILE [--node NAME] [--rank R]``: summarise a graph bundle or print one node.

The summary is made to stay readable for graphs of a few hundred nodes: the op histogram is one
table sorted by count (one count column per rank, or a single column when every rank agrees),
collectives are grouped by (op, process group), and inputs/outputs are listed once with one
``dtype[shape]`` column per rank.
"""
from __future__ import annotations

import difflib
import os
import sys
import warnings
from collections import Counter

from rich.console import Console
from rich.table import Table
from rich.text import Text

from entangle_py.ir import graph, ops
from entangle_py.errors import InputError
from entangle_py.ir.graph import Bundle, Node, Ref, RankGraph, ScalarMeta, SymIntMeta, TensorMeta, TorchConst

MAX_RANK_COLUMNS = 8        # beyond this, per-rank tables show the first ranks only (use --rank)

_DTYPE_SHORT = {
    "float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16", "complex32": "c32",
    "complex64": "c64", "complex128": "c128", "int8": "i8", "int16": "i16", "int32": "i32",
    "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "b8",
}


# ----------------------------------------------------------------------------- formatting

def _clean(s: str) -> str:
    """Names, paths and code come from the file: show control characters (ESC...) escaped, so a
    hostile bundle cannot drive the terminal."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in s)


def _t(s="", style=None) -> Text:
    return Text(_clean(str(s)), style=style or "")


def fmt_val(v) -> str:
    """A node value the way print_readable writes it: ``f32[8, 1536]``, ``Sym(s0)``."""
    if v is None:
        return "-"
    if isinstance(v, TensorMeta):
        return f"{_DTYPE_SHORT.get(v.dtype, v.dtype)}[{', '.join(str(d) for d in v.shape)}]"
    if isinstance(v, SymIntMeta):
        return f"Sym({v.expr})"
    if isinstance(v, ScalarMeta):
        return v.type
    if isinstance(v, tuple):
        return "(" + ", ".join(fmt_val(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return str(v)


def fmt_arg(a) -> str:
    if isinstance(a, Ref):
        return a.name
    if isinstance(a, TorchConst):
        return f"device('{a.value}')" if a.kind == "device" else f"torch.{a.value}"
    if isinstance(a, float):
        return repr(a) if a == a and abs(a) != float("inf") else str(a)
    if isinstance(a, str):
        return repr(a)
    if isinstance(a, list):
        return "[" + ", ".join(fmt_arg(x) for x in a) + "]"
    if isinstance(a, tuple):
        return "(" + ", ".join(fmt_arg(x) for x in a) + ("," if len(a) == 1 else "") + ")"
    return str(a)


def group_of(node: Node) -> str | None:
    """The process group name a collective is called with (``group_name`` or last string arg)."""
    g = node.kwargs.get("group_name")
    if isinstance(g, str):
        return g
    if node.args and isinstance(node.args[-1], str):
        return node.args[-1]
    return None


def _ranks_to_show(bundle: Bundle, rank: int | None) -> list[RankGraph]:
    if rank is None:
        return list(bundle.ranks)
    if not 0 <= rank < bundle.world_size:
        raise InputError(f"--rank {rank} is out of range: the bundle has ranks 0..{bundle.world_size - 1}")
    return [bundle.ranks[rank]]


def _fmt_ranks(ranks: list[int]) -> str:
    """[0, 1, 2, 3, 6] -> '0-3, 6'."""
    out, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        out.append(str(ranks[i]) if i == j else f"{ranks[i]}-{ranks[j]}")
        i = j + 1
    return ", ".join(out)


# ----------------------------------------------------------------------------- summary

def print_summary(bundle: Bundle, console: Console, path: str = "", rank: int | None = None) -> None:
    graphs = _ranks_to_show(bundle, rank)
    head = _t()
    if path:
        head.append(_clean(path), style="bold")
        head.append(": ")
    head.append(f"{bundle.kind} bundle, world size {bundle.world_size}")
    if bundle.meta.get("imported_from"):
        head.append(_clean(f" (imported from {bundle.meta['imported_from']})"))
    console.print(head)
    for g in graphs:
        hist = g.op_histogram()
        n_in = sum(1 for n in g.nodes if n.is_placeholder)
        line = (f"rank {g.rank}: {len(g.nodes)} nodes ({n_in} placeholders, {sum(hist.values())} ops, "
                f"{len(set(hist))} distinct), {len(g.inputs)} inputs, {len(g.outputs)} outputs")
        console.print(_t(line))
        if g.symbols:
            syms = ", ".join(f"{k} in [{lo}, {'inf' if hi is None else hi}]" for k, (lo, hi) in g.symbols.items())
            console.print(_t(f"  symbols: {syms}"))
        if g.guards:
            console.print(_t(f"  guards: {'; '.join(str(x) for x in g.guards)}"))
    shown = graphs[:MAX_RANK_COLUMNS]
    if len(graphs) > len(shown):
        console.print(_t(f"(tables show ranks {shown[0].rank}-{shown[-1].rank} of {len(graphs)}; "
                           f"use --rank R for another)", style="dim"))
    console.print(_histogram_table(shown))
    coll = _collective_table(shown)
    if coll is not None:
        console.print(coll)
    console.print(_ports_table("Inputs", shown, lambda g: g.inputs))
    console.print(_ports_table("Outputs", shown, lambda g: g.outputs))


def _histogram_table(graphs: list[RankGraph]) -> Table:
    """Ops sorted by count.  When every rank has the same histogram one count column suffices and a
    long list is folded into two side-by-side blocks (read down the left block, then the right)."""
    hists = [g.op_histogram() for g in graphs]
    same = all(h == hists[0] for h in hists)
    total = Counter()
    for h in hists:
        total.update(h)
    ops = sorted(total, key=lambda op: (-total[op], op))
    shown = hists[:1] if same else hists
    title = "Op histogram" + (" (same on every rank)" if same and len(graphs) > 1 else "")
    t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    blocks = 2 if same and len(ops) > 20 else 1
    for b in range(blocks):
        t.add_column("op")
        for g in (graphs[:1] if same else graphs):
            t.add_column("count" if same else f"r{g.rank}", justify="right")
    cell = lambda h, op: _t(str(h[op]) if h.get(op) else "-")
    height = -(-len(ops) // blocks)
    for i in range(height):
        row = []
        for b in range(blocks):
            j = b * height + i
            if j < len(ops):
                row += [_t(ops[j]), *[cell(h, ops[j]) for h in shown]]
            else:
                row += [_t("")] * (1 + len(shown))
        t.add_row(*row)
    t.add_section()
    last = [_t("total", style="bold"), *[_t(str(sum(h.values()))) for h in shown]]
    t.add_row(*([_t("")] * (1 + len(shown)) * (blocks - 1) + last))
    return t


def _collective_table(graphs: list[RankGraph]) -> Table | None:
    rows: dict[tuple[str, str], list[int]] = {}
    members: dict[str, list[int] | None] = {}
    for i, g in enumerate(graphs):
        for n in g.nodes:
            if ops.is_collective(n.target):
                grp = group_of(n) or "?"
                rows.setdefault((n.op, grp), [0] * len(graphs))[i] += 1
                if grp not in members or members[grp] is None:
                    members[grp] = g.groups.get(grp)
    if not rows:
        return None
    t = Table(title="Collectives", title_justify="left", show_edge=False, pad_edge=False)
    t.add_column("op")
    t.add_column("group")
    t.add_column("member ranks")
    for g in graphs:
        t.add_column(f"r{g.rank}", justify="right")
    for (op, grp), counts in sorted(rows.items(), key=lambda kv: (-sum(kv[1]), kv[0])):
        m = members.get(grp)
        t.add_row(_t(op), _t(repr(grp) if grp != "?" else "?"),
                  _t(_fmt_ranks(m) if m else "unknown"), *[_t(str(c) if c else "-") for c in counts])
    return t


def _ports_table(title: str, graphs: list[RankGraph], ports_of) -> Table:
    names: list[str] = []
    cells: dict[str, dict[int, str]] = {}
    for g in graphs:
        for p in ports_of(g):
            if p.name not in cells:
                names.append(p.name)
                cells[p.name] = {}
            node = g.node(p.node)
            text = fmt_val(node.val)
            if p.node != p.name:
                text += f"  ({p.node})"
            cells[p.name][g.rank] = text
    same = len(graphs) > 1 and all(len(set(c.get(g.rank) for g in graphs)) == 1 for c in cells.values())
    t = Table(title=f"{title} ({len(names)}{', same on every rank' if same else ''})",
              title_justify="left", show_edge=False, pad_edge=False)
    t.add_column("name")
    cols = graphs[:1] if same else graphs
    for g in cols:
        t.add_column("value" if len(cols) == 1 else f"r{g.rank}")
    for name in names:
        t.add_row(_t(name), *[_t(cells[name].get(g.rank, "-")) for g in cols])
    return t


# ----------------------------------------------------------------------------- one node

def print_node(bundle: Bundle, name: str, console: Console, rank: int | None = None) -> None:
    graphs = _ranks_to_show(bundle, rank)
    having = [g for g in graphs if g.has(name)]
    if not having:
        elsewhere = [g.rank for g in bundle.ranks if g.has(name)]
        if elsewhere:
            who = f"rank {elsewhere[0]} has" if len(elsewhere) == 1 else f"ranks {_fmt_ranks(elsewhere)} have"
            raise InputError(f"rank {rank} has no node {name!r} ({who} it)")
        known = sorted({n.name for g in graphs for n in g.nodes}
                       | {p.name for g in graphs for p in (*g.inputs, *g.outputs)})
        close = difflib.get_close_matches(name, known, n=5, cutoff=0.6)
        hint = f"; close names: {', '.join(_clean(c) for c in close)}" if close else ""
        where = f"rank {rank}" if rank is not None else "the bundle"
        raise InputError(f"{where} has no node {name!r}{hint}")
    for g in having:
        n = g.node(name)
        console.print(_t(f"rank {g.rank}: {n.name}", style="bold"))
        rows = [("target", n.target)]
        if n.args:
            rows.append(("args", ", ".join(fmt_arg(a) for a in n.args)))
        if n.kwargs:
            rows.append(("kwargs", ", ".join(f"{k}={fmt_arg(v)}" for k, v in n.kwargs.items())))
        rows.append(("value", fmt_val(n.val)))
        if ops.is_collective(n.target):
            grp = group_of(n)
            m = g.groups.get(grp) if grp else None
            rows.append(("group", f"{grp!r} (ranks {_fmt_ranks(m)})" if m else f"{grp!r} (members unknown)"))
        ins = [p.name for p in g.inputs if p.node == n.name]
        outs = [p.name for p in g.outputs if p.node == n.name]
        if ins:
            rows.append(("input port", ", ".join(ins)))
        if outs:
            rows.append(("output port", ", ".join(outs)))
        if n.module:
            rows.append(("module", n.module))
        if n.source is not None:
            s = n.source
            rows.append(("source", f"{s.file}:{s.line}" + (f" in {s.fn}" if s.fn else "")))
            if s.code:
                rows.append(("code", s.code))
        else:
            rows.append(("source", "-"))
        users = g.users().get(n.name, [])
        rows.append(("used by", ", ".join(users[:12]) + (f", ... ({len(users)} in all)" if len(users) > 12 else "")
                     if users else "-"))
        width = max(len(k) for k, _ in rows)
        for k, v in rows:
            line = _t(f"  {k.ljust(width)}  ", style="dim")
            line.append(_clean(v))
            console.print(line, soft_wrap=True)


# ----------------------------------------------------------------------------- CLI

def cli_show(args) -> int:
    with warnings.catch_warnings():
        # torch's safe unpickler warns on stderr about foreign pickle protocols before refusing them;
        # the refusal itself is the one line the user needs.
        warnings.simplefilter("ignore")
        bundle = graph.load(args.file)
    # Piped output (no terminal, no COLUMNS): wider than rich's default 80 so tables are not squeezed.
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 140
    console = Console(highlight=False, emoji=False, width=width)
    rank = getattr(args, "rank", None)
    if getattr(args, "node", None):
        print_node(bundle, args.node, console, rank=rank)
    else:
        print_summary(bundle, console, path=str(args.file), rank=rank)
    return 0
