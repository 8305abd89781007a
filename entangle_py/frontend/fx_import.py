"""Import the text that ``torch.fx.GraphModule.print_readable()`` prints into a graph bundle: one
dump per rank, each parsed by ``fx_text.py`` (never executed), made functional, with process
groups inferred across the ranks.

Mapping to the IR (see README "Importing FX text dumps"):

* inputs: the ``forward`` parameters (or, for joint graphs ``forward(self, primals, tangents)``, the
  placeholders declared as ``primals_1: "i64[32, 1024]"; ...``) become ``placeholder`` nodes and
  input ports of the same name;
* tensor constants ``_tensor_constant0 = self._tensor_constant0`` become ``placeholder`` nodes too,
  with input port ``const:_tensor_constant0`` (their values are not in the text); the
  ``lift_fresh_copy`` that reads them is kept as an ordinary node;
* ``torch.ops.higher_order.auto_functionalized[_v2](torch.ops.ns.op.ov, k = v, ...)`` becomes a
  node with target ``higher_order.auto_functionalized[_v2]``, the wrapped op's target as a string in
  ``args[0]``, keyword arguments kept;
* outputs: each name in the ``return`` is an output port named after its node (``None`` entries and
  repeated names are skipped);
* in-place ops (``copy_``, ``add_``, ``index_put_``, ... -- any op whose schema marks an argument
  ``Tensor(a!)``) are made functional (``frontend/functionalize.py``): a later read of the written
  tensor, or of any view of its storage, reads the new value, and an input written to gets an
  output ``mutated:<input port>`` with its value at the end; a write that cannot be said so (an
  in-place view, a write through ``expand``, an op writing two arguments) is an ``InputError``
  naming the file and line;
* process groups: every group name passed to a ``_c10d_functional`` op maps to all ranks of the
  import (the text does not say more).
"""
from __future__ import annotations

import re
from pathlib import Path

from entangle_py.ir import graph
from entangle_py.errors import InputError
from entangle_py.frontend.functionalize import FunctionalizeError, functionalize
from entangle_py.frontend.fx_text import parse_fx_text
from entangle_py.ir.graph import Bundle, RankGraph

KINDS = ("forward", "joint", "imported")


def infer_groups(names_per_rank: list[list[str]]) -> dict[str, list[int]]:
    """Process group members: the ranks whose graph passes the group name to a collective.

    The text names groups only by their string id (``'12'``).  A collective only completes when every
    member calls it, so a rank whose graph never uses a group is not (as far as this program can tell)
    a member of it.  Megatron's data-parallel groups of size 1 show why this matters: with TP 2, rank 0
    reduces over group ``'1'`` and rank 1 over group ``'3'``, each a group of one rank.
    """
    members: dict[str, list[int]] = {}
    for r, names in enumerate(names_per_rank):
        for name in names:
            members.setdefault(name, []).append(r)
    return members


def import_fx(paths: list[str], kind: str | None = None) -> Bundle:
    """Import one print_readable() dump per rank (in rank order) into a bundle."""
    if not paths:
        raise InputError("import-fx needs at least one file")
    if kind is not None and kind not in KINDS:
        raise InputError(f"--kind must be one of {', '.join(KINDS)}, not {kind!r}")
    parsed = []
    for p in paths:
        try:
            text = Path(p).read_text(encoding="utf-8")
        except OSError as e:
            raise InputError(f"{p}: cannot read ({e.strerror or e})") from None
        except UnicodeDecodeError as e:
            raise InputError(f"{p}: not a UTF-8 text file ({e.reason})") from None
        parsed.append(parse_fx_text(text, filename=str(p)))
    kinds = {x.kind for x in parsed}
    if kind is None:
        if len(kinds) > 1:
            raise InputError("the files mix joint graphs forward(self, primals, tangents) and forward "
                             "graphs; pass --kind to override")
        kind = kinds.pop()
    groups = infer_groups([x.group_names for x in parsed])
    ranks = []
    for r, (p, x) in enumerate(zip(paths, parsed)):
        g = RankGraph(rank=r, nodes=x.nodes, inputs=x.inputs, outputs=x.outputs,
                      groups={k: list(v) for k, v in groups.items()}, symbols=dict(x.symbols))
        try:   # in-place ops (copy_, add_, ...): a read after a write sees the write
            ranks.append(functionalize(g))
        except FunctionalizeError as e:
            raise InputError(f"{p}:{x.lines.get(e.node, '?')}: {e.why}") from None
    meta = {"imported_from": "fx-text",
            "files": "\n".join(Path(p).name for p in paths)}
    bundle = Bundle(ranks=ranks, kind=kind, meta=meta)
    try:
        graph.decode_bundle(graph.encode_bundle(bundle))   # the importer must produce loadable bundles
    except graph.GraphFormatError as e:
        raise InputError(f"imported graph is not storable: {e}") from None
    return bundle


def cli_import_fx(args) -> int:
    bundle = import_fx(list(args.files), kind=args.kind)
    try:
        graph.save(bundle, args.output)
    except OSError as e:
        raise InputError(f"{args.output}: cannot write ({e.strerror or e})") from None
    counts = "+".join(str(len(g.nodes)) for g in bundle.ranks)
    groups = sorted({name for g in bundle.ranks for name in g.groups})
    group_text = f", groups {', '.join(repr(x) for x in groups)}" if groups else ""
    print(f"wrote {args.output}: {bundle.kind} bundle, world size {bundle.world_size}, "
          f"{counts} nodes{group_text}")
    return 0


_RANK_FILE = re.compile(r"^(?P<stem>.*)\.r(?P<rank>\d+)\.py$")


def dump_files(path: str) -> list[str] | None:
    """The FX text dumps a path names, in rank order: a ``.py`` file, or a directory holding one
    graph's per-rank dumps ``<kind>.g<id>.r<rank>.py``.  None: not a dump (a bundle file)."""
    p = Path(path)
    if p.is_file():
        return [str(p)] if p.suffix == ".py" else None
    if not p.is_dir():
        return None
    found = {}
    for f in p.iterdir():
        m = _RANK_FILE.match(f.name)
        if m:
            found.setdefault(m.group("stem"), {})[int(m.group("rank"))] = str(f)
    if len(found) != 1:
        raise InputError(f"{path}: expected the per-rank dumps of one graph (<kind>.g<id>.r<rank>.py), "
                         f"found {len(found)} graphs" + (f": {', '.join(sorted(found))}" if found else ""))
    ranks = next(iter(found.values()))
    if sorted(ranks) != list(range(len(ranks))):
        raise InputError(f"{path}: rank files {sorted(ranks)} are not 0..{len(ranks) - 1}")
    return [ranks[r] for r in range(len(ranks))]
