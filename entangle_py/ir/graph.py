"""Graph IR and the graph bundle file format.

A *bundle* holds one graph per rank: a sequential program is a bundle with one rank, a distributed
one holds every rank.  The IR is small and closed, like torch.fx's: a rank graph is a list of nodes
in topological order; a node has an op target string (``aten.mm.default``,
``_c10d_functional.all_reduce.default``, ``getitem``, or ``placeholder`` for inputs), args that are
node references or constants, the value it produces (tensor shape/dtype, a symbolic int, or a tuple
of those), its source location and module path.

On disk a bundle is plain containers only (dict, list, str, int, float, bool, None), written with
``torch.save`` (``.pt``: a zip archive whose pickle is read back without torch by an unpickler
that knows no global, ``_plain_pickle``) or as JSON (``.json`` / ``.json.gz``).  Loading never
executes anything from the file: op targets must be in a
whitelist of namespaces, symbolic sizes are rebuilt through a whitelist of sympy constructors
(``symbolic.parse``), and every field is type-checked.  See README "Graph bundle format".
"""
from __future__ import annotations

import gzip
import io
import json
import math
import pickle
import re
import warnings
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Union

from entangle_py.ir import ops
from entangle_py.lazy import LazyModule, is_sympy, sympy

symbolic = LazyModule("entangle_py.ir.symbolic")     # sympy, for symbolic sizes only
from entangle_py.errors import InputError

FORMAT_NAME = "entangle-graph"
FORMAT_VERSION = 1

_TARGET = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){1,2}$")
# Tags for torch constants that appear as op arguments (dtype=torch.float32, device=...).
CONST_KINDS = frozenset({"dtype", "device", "layout", "memory_format"})
_CONST_VALUE = re.compile(r"^[A-Za-z0-9_:.\-]{1,64}$")


BUNDLE_KINDS = ("forward", "joint", "imported")


class GraphFormatError(InputError):
    """A graph file that is malformed, unsafe, or of an unsupported version."""


# ----------------------------------------------------------------------------- values

@dataclass(frozen=True)
class Ref:
    """An argument that is the value of another node (by name)."""
    name: str


@dataclass(frozen=True)
class TorchConst:
    """A torch constant argument: kind in CONST_KINDS, value e.g. 'float32', 'cpu', 'strided'."""
    kind: str
    value: str


@dataclass(frozen=True)
class TensorMeta:
    """Shape (ints or sympy expressions over the graph's symbols) and dtype name ('float32')."""
    shape: tuple
    dtype: str

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class SymIntMeta:
    """A node whose value is a symbolic integer (e.g. ``sym_size``, a SymInt placeholder)."""
    expr: Any


@dataclass(frozen=True)
class ScalarMeta:
    """A node whose value is a Python scalar (type name 'int', 'float', 'bool')."""
    type: str


# What a node produces: a tensor, a symbolic int, a scalar, a tuple of those, or nothing.
Value = Union[TensorMeta, SymIntMeta, ScalarMeta, tuple, None]


@dataclass(frozen=True)
class Source:
    file: str
    line: int
    fn: str = ""
    code: str = ""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}"
        return f"{where} in {self.fn}: {self.code}" if self.code else where


@dataclass
class Node:
    name: str
    target: str                     # 'placeholder', 'getitem' or 'ns.op.overload'
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    val: Value = None
    source: Source | None = None
    module: str | None = None       # module path, e.g. 'layers.0.mlp.fc1'

    @property
    def is_placeholder(self) -> bool:
        return self.target == "placeholder"

    def refs(self) -> Iterator[str]:
        """Names of the nodes this node reads, in argument order."""
        yield from _refs_in(self.args)
        yield from _refs_in(tuple(self.kwargs.values()))

    @property
    def namespace(self) -> str | None:
        return self.target.split(".", 1)[0] if "." in self.target else None

    @property
    def op(self) -> str:
        """Target without the overload: 'aten.mm' for 'aten.mm.default'."""
        parts = self.target.split(".")
        return ".".join(parts[:2]) if len(parts) == 3 else self.target


def _refs_in(values) -> Iterator[str]:
    for v in values:
        if isinstance(v, Ref):
            yield v.name
        elif isinstance(v, (list, tuple)):
            yield from _refs_in(v)


@dataclass(frozen=True)
class Port:
    """A named graph input or output: the stable name and the node carrying it."""
    name: str
    node: str


@dataclass
class RankGraph:
    rank: int
    nodes: list[Node]
    inputs: list[Port]
    outputs: list[Port]
    groups: dict[str, list[int]] = field(default_factory=dict)   # process group name -> ranks
    symbols: dict[str, tuple] = field(default_factory=dict)      # name -> (lower, upper|None)
    guards: list = field(default_factory=list)                   # sympy booleans over symbols

    def __post_init__(self):
        self._by_name = {n.name: n for n in self.nodes}

    def node(self, name: str) -> Node:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"rank {self.rank} has no node {name!r}") from None

    def has(self, name: str) -> bool:
        return name in self._by_name

    def nonzero_counts(self) -> dict[str, str]:
        """Symbol -> the nonzero node whose row count it is: a size known only from the values
        (torch's unbacked ``u0``), never a size of the inputs to choose."""
        return {n.val.shape[0].name: n.name for n in self.nodes
                if n.target == ops.NONZERO and isinstance(n.val, TensorMeta) and n.val.shape
                and getattr(n.val.shape[0], "is_Symbol", False)}

    def sympy_symbols(self) -> dict[str, sympy.Symbol]:
        return {name: symbolic.make_symbol(name) for name in self.symbols}

    def input_node(self, port_name: str) -> Node | None:
        for p in self.inputs:
            if p.name == port_name:
                return self.node(p.node)
        return None

    def output_node(self, port_name: str) -> Node | None:
        for p in self.outputs:
            if p.name == port_name:
                return self.node(p.node)
        return None

    def op_histogram(self) -> Counter:
        return Counter(n.target for n in self.nodes if not n.is_placeholder)

    def users(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {n.name: [] for n in self.nodes}
        for n in self.nodes:
            for r in n.refs():
                out[r].append(n.name)
        return out


def communicator(ranks, name, members) -> tuple:
    """The communicator a collective on group ``name`` (``members``, in group-rank order) runs on.

    A group's name identifies it when every member knows the group by that name with those
    members: then two groups with the same members are two communicators, each with its own
    order of collectives.  Graphs whose ranks name one group differently (per-rank dumps) fall
    back to the members alone."""
    members = tuple(members)
    if isinstance(name, str) and all(list(ranks[m].groups.get(name, ())) == list(members) for m in members
                                     if 0 <= m < len(ranks)):
        return (name, members)
    return (None, members)


@dataclass
class Bundle:
    ranks: list[RankGraph]
    kind: str = "forward"           # 'forward', 'joint', or 'imported'
    meta: dict[str, str] = field(default_factory=dict)

    @property
    def world_size(self) -> int:
        return len(self.ranks)

    def rank(self, r: int) -> RankGraph:
        return self.ranks[r]


# ----------------------------------------------------------------------------- encoding

def _enc_scalar_float(x: float):
    if math.isfinite(x):
        return x
    return {"float": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}


def encode_arg(v):
    if isinstance(v, Ref):
        return {"ref": v.name}
    if isinstance(v, TorchConst):
        return {v.kind: v.value}
    # coerce subclasses (TorchVersion is a str, SymInt-derived ints...) to the plain type
    if v is None or isinstance(v, bool):
        return None if v is None else bool(v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, str):
        return str(v)
    if isinstance(v, float):
        return _enc_scalar_float(float(v))
    if isinstance(v, (list, tuple)):
        return [encode_arg(x) for x in v]
    if is_sympy(v):
        return {"sym": symbolic.to_text(v)}
    raise GraphFormatError(f"cannot store argument of type {type(v).__name__}: {v!r}")


def _enc_dim(d):
    return int(d) if isinstance(d, int) or (is_sympy(d) and d.is_Integer) else symbolic.to_text(d)


def encode_val(v: Value):
    if v is None:
        return None
    if isinstance(v, TensorMeta):
        return {"shape": [_enc_dim(d) for d in v.shape], "dtype": v.dtype}
    if isinstance(v, SymIntMeta):
        return {"symint": symbolic.to_text(v.expr)}
    if isinstance(v, ScalarMeta):
        return {"scalar": v.type}
    if isinstance(v, tuple):
        return {"tuple": [encode_val(x) for x in v]}
    raise GraphFormatError(f"cannot store node value {v!r}")


def encode_bundle(b: Bundle) -> dict:
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "kind": b.kind,
        "world_size": b.world_size,
        "meta": {str(k): str(v) for k, v in b.meta.items()},
        "ranks": [_encode_rank(g) for g in b.ranks],
    }


def _encode_rank(g: RankGraph) -> dict:
    return {
        "rank": g.rank,
        "groups": {k: list(v) for k, v in g.groups.items()},
        "symbols": {k: [lo, hi] for k, (lo, hi) in g.symbols.items()},
        "guards": [symbolic.to_text(x) for x in g.guards],
        "inputs": [{"name": p.name, "node": p.node} for p in g.inputs],
        "outputs": [{"name": p.name, "node": p.node} for p in g.outputs],
        "nodes": [_encode_node(n) for n in g.nodes],
    }


def _encode_node(n: Node) -> dict:
    d = {
        "name": n.name,
        "target": n.target,
        "args": [encode_arg(a) for a in n.args],
        "kwargs": {k: encode_arg(v) for k, v in n.kwargs.items()},
        "val": encode_val(n.val),
    }
    if n.source is not None:
        d["source"] = {"file": n.source.file, "line": n.source.line, "fn": n.source.fn, "code": n.source.code}
    if n.module:
        d["module"] = n.module
    return d


# ----------------------------------------------------------------------------- decoding

class _Decoder:
    """Type-checked decoding of plain containers; every error names where it happened."""

    def __init__(self, where: str):
        self.where = where

    def fail(self, msg: str):
        raise GraphFormatError(f"{self.where}: {msg}")

    def expect(self, v, types, what):
        if not isinstance(v, types) or (isinstance(v, bool) and bool not in _as_tuple(types)):
            self.fail(f"{what} must be {_type_names(types)}, got {type(v).__name__}")
        return v


def _as_tuple(t):
    return t if isinstance(t, tuple) else (t,)


def _type_names(types) -> str:
    return " or ".join(t.__name__ for t in _as_tuple(types))


def _check_keys(dec: _Decoder, d: dict, required: set, optional: set, what: str):
    dec.expect(d, dict, what)
    missing = required - d.keys()
    extra = d.keys() - required - optional
    if missing:
        dec.fail(f"{what} lacks {sorted(missing)}")
    if extra:
        dec.fail(f"{what} has unknown fields {sorted(extra)}")


def check_target(target: str) -> str:
    """Accept only builtin targets and ops of whitelisted namespaces."""
    if not isinstance(target, str):
        raise GraphFormatError(f"op target must be a string, got {type(target).__name__}")
    if target in ops.BUILTIN_TARGETS:
        return target
    if not _TARGET.match(target):
        raise GraphFormatError(f"malformed op target {target!r}")
    ns = target.split(".", 1)[0]
    if ns not in ops.NAMESPACES:
        raise GraphFormatError(
            f"op {target!r} is in namespace {ns!r}, which is not one of the allowed namespaces "
            f"({', '.join(sorted(ops.NAMESPACES))})")
    return target


def _decode_arg(dec: _Decoder, v, syms, depth=0):
    if depth > 16:
        dec.fail("argument nested too deeply")
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v
    if isinstance(v, list):
        return [_decode_arg(dec, x, syms, depth + 1) for x in v]
    if isinstance(v, dict) and len(v) == 1:
        (k, x), = v.items()
        if k == "ref":
            return Ref(dec.expect(x, str, "node reference"))
        if k == "sym":
            return _parse_sym(dec, x, syms)
        if k == "float":
            if x not in ("inf", "-inf", "nan"):
                dec.fail(f"bad float constant {x!r}")
            return float(x)
        if k in CONST_KINDS:
            if not isinstance(x, str) or not _CONST_VALUE.match(x):
                dec.fail(f"bad {k} constant {x!r}")
            return TorchConst(k, x)
    dec.fail(f"unsupported argument encoding {str(v)[:80]!r}")


def _parse_sym(dec: _Decoder, text, syms):
    try:
        return symbolic.parse(text, syms)
    except symbolic.SymbolicError as e:
        dec.fail(str(e))


def _decode_dim(dec, d, syms):
    if isinstance(d, int) and not isinstance(d, bool):
        if d < 0:
            dec.fail(f"negative size {d}")
        return d
    e = _parse_sym(dec, d, syms)
    return int(e) if e.is_Integer else e


def _decode_val(dec: _Decoder, v, syms, depth=0) -> Value:
    if v is None:
        return None
    if depth > 8:
        dec.fail("value nested too deeply")
    dec.expect(v, dict, "node value")
    if "shape" in v:
        _check_keys(dec, v, {"shape", "dtype"}, set(), "tensor value")
        shape = tuple(_decode_dim(dec, d, syms) for d in dec.expect(v["shape"], list, "shape"))
        dtype = dec.expect(v["dtype"], str, "dtype")
        if not _CONST_VALUE.match(dtype):
            dec.fail(f"bad dtype {dtype!r}")
        return TensorMeta(shape, dtype)
    if "symint" in v:
        _check_keys(dec, v, {"symint"}, set(), "symint value")
        return SymIntMeta(_parse_sym(dec, v["symint"], syms))
    if "scalar" in v:
        _check_keys(dec, v, {"scalar"}, set(), "scalar value")
        if v["scalar"] not in ("int", "float", "bool"):
            dec.fail(f"bad scalar type {v['scalar']!r}")
        return ScalarMeta(v["scalar"])
    if "tuple" in v:
        _check_keys(dec, v, {"tuple"}, set(), "tuple value")
        return tuple(_decode_val(dec, x, syms, depth + 1) for x in dec.expect(v["tuple"], list, "tuple"))
    dec.fail(f"unknown node value encoding with fields {sorted(v)}")


def decode_bundle(d) -> Bundle:
    dec = _Decoder("graph file")
    if not isinstance(d, dict) or d.get("format") != FORMAT_NAME:
        dec.fail(f"not an {FORMAT_NAME} file (missing format marker)")
    version = d.get("version")
    if version != FORMAT_VERSION:
        dec.fail(f"unsupported format version {version!r} (this entangle reads version {FORMAT_VERSION})")
    _check_keys(dec, d, {"format", "version", "kind", "world_size", "ranks"}, {"meta"}, "bundle")
    kind = dec.expect(d["kind"], str, "kind")
    if kind not in BUNDLE_KINDS:
        dec.fail(f"kind must be one of {', '.join(BUNDLE_KINDS)}, got {kind!r}")
    meta = dec.expect(d.get("meta", {}), dict, "meta")
    for k, v in meta.items():
        dec.expect(v, str, f"meta[{k!r}]")
    ranks_raw = dec.expect(d["ranks"], list, "ranks")
    world = dec.expect(d["world_size"], int, "world_size")
    if world != len(ranks_raw) or world < 1:
        dec.fail(f"world_size {world} but {len(ranks_raw)} rank graphs")
    ranks = [_decode_rank(r, raw, world) for r, raw in enumerate(ranks_raw)]
    return Bundle(ranks=ranks, kind=kind, meta=dict(meta))


def _decode_rank(r: int, d, world: int) -> RankGraph:
    dec = _Decoder(f"rank {r}")
    _check_keys(dec, d, {"rank", "nodes", "inputs", "outputs"}, {"groups", "symbols", "guards"}, "rank graph")
    if d["rank"] != r:
        dec.fail(f"rank field is {d['rank']!r}, expected {r}")
    groups = {}
    for name, members in dec.expect(d.get("groups", {}), dict, "groups").items():
        dec.expect(members, list, f"group {name!r}")
        for m in members:
            if not isinstance(m, int) or isinstance(m, bool) or not 0 <= m < world:
                dec.fail(f"group {name!r} names rank {m!r} outside world size {world}")
        groups[name] = list(members)
    symbols = {}
    for name, rng in dec.expect(d.get("symbols", {}), dict, "symbols").items():
        try:
            symbolic.make_symbol(name)
        except symbolic.SymbolicError as e:
            dec.fail(str(e))
        if not (isinstance(rng, list) and len(rng) == 2 and all(x is None or (isinstance(x, int) and not isinstance(x, bool)) for x in rng)):
            dec.fail(f"symbol {name!r} range must be [lower, upper|null]")
        symbols[name] = (rng[0], rng[1])
    syms = {name: symbolic.make_symbol(name) for name in symbols}
    guards = [_parse_sym(dec, g, syms) for g in dec.expect(d.get("guards", []), list, "guards")]
    nodes, seen = [], set()
    for i, nd in enumerate(dec.expect(d["nodes"], list, "nodes")):
        node = _decode_node(_Decoder(f"rank {r}, node #{i}"), nd, syms)
        ndec = _Decoder(f"rank {r}, node {node.name!r}")
        if node.name in seen:
            ndec.fail("duplicate node name")
        for ref in node.refs():
            if ref not in seen:
                ndec.fail(f"argument refers to {ref!r}, which is not an earlier node")
        seen.add(node.name)
        nodes.append(node)
    ports = {}
    for kind in ("inputs", "outputs"):
        ports[kind] = []
        for p in dec.expect(d[kind], list, kind):
            _check_keys(dec, p, {"name", "node"}, set(), f"{kind} entry")
            name, node = dec.expect(p["name"], str, "port name"), dec.expect(p["node"], str, "port node")
            if node not in seen:
                dec.fail(f"{kind[:-1]} {name!r} refers to unknown node {node!r}")
            if any(p.name == name for p in ports[kind]):
                dec.fail(f"two {kind} named {name!r}")
            ports[kind].append(Port(name, node))
    return RankGraph(rank=r, nodes=nodes, inputs=ports["inputs"], outputs=ports["outputs"],
                     groups=groups, symbols=symbols, guards=guards)


def _decode_node(dec: _Decoder, d, syms) -> Node:
    _check_keys(dec, d, {"name", "target", "args", "kwargs", "val"}, {"source", "module"}, "node")
    name = dec.expect(d["name"], str, "node name")
    try:
        target = check_target(d["target"])
    except GraphFormatError as e:
        dec.fail(f"node {name!r}: {e}")
    args = tuple(_decode_arg(dec, a, syms) for a in dec.expect(d["args"], list, "args"))
    kwargs = {dec.expect(k, str, "kwarg name"): _decode_arg(dec, v, syms)
              for k, v in dec.expect(d["kwargs"], dict, "kwargs").items()}
    val = _decode_val(dec, d["val"], syms)
    source = None
    if d.get("source") is not None:
        s = d["source"]
        _check_keys(dec, s, {"file", "line"}, {"fn", "code"}, "source")
        source = Source(dec.expect(s["file"], str, "source file"), dec.expect(s["line"], int, "source line"),
                        dec.expect(s.get("fn", ""), str, "source fn"), dec.expect(s.get("code", ""), str, "source code"))
    module = d.get("module")
    if module is not None:
        dec.expect(module, str, "module")
    return Node(name=name, target=target, args=args, kwargs=kwargs, val=val, source=source, module=module)


# ----------------------------------------------------------------------------- files

def save(bundle: Bundle, path: str | Path) -> None:
    """Write a bundle: ``.pt`` (torch.save of plain containers), ``.json`` or ``.json.gz``."""
    path = Path(path)
    data = encode_bundle(bundle)
    decode_bundle(data)  # refuse to write what we would refuse to read
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".json.gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            json.dump(data, f)
    elif path.suffix == ".json":
        path.write_text(json.dumps(data, indent=1))
    else:
        import torch
        torch.save(data, path)


def load(path: str | Path) -> Bundle:
    """Read a bundle without executing anything from the file; raises GraphFormatError."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise GraphFormatError(f"{path}: cannot read ({e.strerror or e})") from None
    try:
        if raw[:2] == b"\x1f\x8b":
            data = json.loads(gzip.decompress(raw).decode("utf-8"))
        elif raw.lstrip()[:1] in (b"{", b"["):
            data = json.loads(raw.decode("utf-8"))
        else:
            data = _torch_load_safe(raw)
    except GraphFormatError as e:
        raise GraphFormatError(f"{path}: {e}") from None
    except RecursionError:
        raise GraphFormatError(f"{path}: graph file nested too deeply") from None
    except (ValueError, UnicodeDecodeError, OSError, EOFError) as e:
        raise GraphFormatError(f"{path}: not a readable graph file ({type(e).__name__}: {_first_line(e)})") from None
    try:
        return decode_bundle(data)
    except GraphFormatError as e:
        raise GraphFormatError(f"{path}: {e}") from None
    except RecursionError:
        raise GraphFormatError(f"{path}: graph file nested too deeply") from None


def _torch_load_safe(raw: bytes):
    """A ``.pt`` bundle: torch.save's zip archive read without torch (``_plain_pickle``); an
    older serialization (not a zip) through torch's own restricted loader."""
    if raw[:4] == b"PK\x03\x04":
        try:
            return _plain_pickle(raw)
        except pickle.UnpicklingError:
            raise GraphFormatError(_NOT_PLAIN) from None
        except (zipfile.BadZipFile, KeyError, EOFError, ValueError, IndexError, TypeError, AttributeError) as e:
            raise GraphFormatError(f"not a graph file ({type(e).__name__}: {_first_line(e)})") from None

    import torch
    try:
        # weights_only=True: torch's restricted unpickler, which refuses any global outside its
        # allowlist (so no code object, no reduce to os.system, ...).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.load(io.BytesIO(raw), weights_only=True, map_location="cpu")
    except pickle.UnpicklingError:
        # torch's message goes on to suggest weights_only=False: bad advice for a stranger's file
        raise GraphFormatError(_NOT_PLAIN) from None
    except RecursionError:
        raise
    except Exception as e:  # garbage bytes make torch's reader raise anything (IndexError, KeyError...)
        raise GraphFormatError(f"not a graph file ({type(e).__name__}: {_first_line(e)})") from None


_NOT_PLAIN = ("refused to load: the file holds objects other than plain data "
              "(a graph bundle is dicts, lists, strings and numbers only)")


def _plain_pickle(raw: bytes):
    """The data of a torch.save archive holding plain containers only, read without torch: its
    ``data.pkl`` unpickled by ``_PlainUnpickler``, which knows no global and no persistent id (a
    tensor's storage), so nothing in the file can be called.  Entries must be stored, not
    compressed (as torch writes them): a compressed one could unpack to any size."""
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        infos = [i for i in z.infolist() if i.filename.rsplit("/", 1)[-1] == "data.pkl"]
        if len(infos) != 1:
            raise ValueError("no single data.pkl in the archive")
        if infos[0].compress_type != zipfile.ZIP_STORED or infos[0].file_size > len(raw):
            raise ValueError("data.pkl is compressed")
        payload = z.read(infos[0])
    return _PlainUnpickler(io.BytesIO(payload)).load()


class _PlainUnpickler(pickle.Unpickler):
    """Builds dicts, lists, tuples, strings, numbers, booleans and None; any other object needs
    a global or a persistent id, both refused."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"global {module}.{name}")

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("persistent id")


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0][:200] if text else type(e).__name__
