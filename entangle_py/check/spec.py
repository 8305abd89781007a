"""Spec files: the input relation, which outputs to check, and the user's expectations.

A spec is TOML::

    [mesh]                                  # optional: an N-D device mesh, row-major like DeviceMesh
    shape = [2, 2]
    names = ["dp", "tp"]

    [inputs]                                # G_s input -> how the ranks hold it
    "param:fc1.weight" = "shard(0)"         # concat of the ranks' tensors along dim 0
    "input:x" = "replicate"                 # every rank holds the same tensor
    partial_in = "partial"                  # sum over ranks
    w = "concat(r0.w, r1.w, dim=1)"         # an explicit clean expression over rank-qualified names
    v = "concat(slice(r0.v, dim=0, end=4), slice(r1.v, dim=0, end=4), dim=0)"   # rows [0, 4) of each
    "param:w2" = "shard(0)@tp"              # on a mesh: sharded over tp, replicated over the rest
    "input:y" = "shard(0)@dp, shard(1)@tp"  # one placement per mesh dim that is not replicated

    [outputs]
    check = ["out"]                         # which G_s outputs to verify (default: all)

    [expect]                                # relations the outputs must have
    out = "replicate"

    [cut]                                   # a tensor of both graphs treated as an input
    hidden = "shard(2)"

    [constants]                             # values of tensor constants (import-fx ports const:*)
    "const:_tensor_constant0" = 0           # applies to every graph that has this port

    [assume]                                # facts the checker cannot prove: none is on unless
    valid_indices = true                    # written here (or --assume); the report prints them

Names are the stable names of a bundle (input/output port names, or node names).  Placements are
turned into clean terms over rank-qualified tensors (``relation_terms``); those are what the
checker starts from.
"""
from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from entangle_py.config import ASSUMPTIONS
from entangle_py.errors import InputError


class SpecError(InputError):
    pass


# ----------------------------------------------------------------------------- terms

@dataclass(frozen=True)
class Leaf:
    """Tensor ``name`` of rank ``rank`` of the distributed program (printed ``r0.name``)."""
    rank: int
    name: str

    def __str__(self):
        return f"r{self.rank}.{_quote(self.name)}"


@dataclass(frozen=True)
class Call:
    """A clean operator over terms: concat, sum (over ranks), max (over ranks), slice, ..."""
    op: str
    args: tuple
    attrs: tuple = ()   # ((key, value), ...)

    def __str__(self):
        parts = [str(a) for a in self.args] + [f"{k}={_fmt_attr(v)}" for k, v in self.attrs]
        return f"{self.op}({', '.join(parts)})"

    def attr(self, key, default=None):
        return dict(self.attrs).get(key, default)


Term = Leaf | Call

_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_:.\-]*$")


def _quote(name: str) -> str:
    return name if _PLAIN_NAME.match(name) else '"' + name.replace('"', '\\"') + '"'


def _fmt_attr(v) -> str:
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt_attr(x) for x in v) + "]"
    return str(v)


def leaves(t: Term):
    if isinstance(t, Leaf):
        yield t
    else:
        for a in t.args:
            yield from leaves(a)


# Operators an explicit input expression may use: data movement and reductions over ranks.
CLEAN_OPS = frozenset({"concat", "sum", "max", "mean", "slice", "transpose", "permute", "reshape", "neg"})

_TOK = re.compile(r'\s*(?:(-?\d+)|("(?:[^"\\]|\\.)*")|([A-Za-z_][A-Za-z0-9_:.\-]*)|([(),=\[\]]))')


class _ExprParser:
    """Recursive descent over ``op(arg, ..., key=value)`` / ``rK.name``; never evaluates text."""

    def __init__(self, text: str, where: str):
        self.text, self.where = text, where
        self.toks, pos = [], 0
        while pos < len(text.rstrip()):
            m = _TOK.match(text, pos)
            if not m or m.end() == pos:
                self.fail(f"unexpected {text[pos:pos+10]!r}")
            self.toks.append(m.groups())
            pos = m.end()
        self.i = 0

    def fail(self, why):
        raise SpecError(f"{self.where}: {why} in {self.text!r}")

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None, None, None)

    def punct(self, p):
        if self.peek()[3] != p:
            self.fail(f"expected {p!r}")
        self.i += 1

    def parse(self) -> Term:
        t = self.term()
        if self.i != len(self.toks):
            self.fail("trailing text")
        return t

    def term(self) -> Term:
        num, quoted, ident, punct = self.peek()
        if ident is None:
            self.fail("expected a tensor (rK.name) or an operator")
        self.i += 1
        m = re.match(r"^r(\d+)\.(.*)$", ident)
        if m and self.peek()[3] != "(":
            name = m.group(2)
            if not name:  # r0."quoted name"
                q = self.peek()[1]
                if q is None:
                    self.fail("expected a name after the rank")
                self.i += 1
                name = q[1:-1].replace('\\"', '"')
            return Leaf(int(m.group(1)), name)
        if ident not in CLEAN_OPS:
            self.fail(f"{ident!r} is not a clean operator ({', '.join(sorted(CLEAN_OPS))})")
        self.punct("(")
        args, attrs = [], []
        while self.peek()[3] != ")":
            tok = self.peek()
            if tok[2] is not None and self.i + 1 < len(self.toks) and self.toks[self.i + 1][3] == "=":
                self.i += 2
                attrs.append((tok[2], self.value()))
            else:
                args.append(self.term())
            if self.peek()[3] == ",":
                self.i += 1
            elif self.peek()[3] != ")":
                self.fail("expected ',' or ')'")
        self.punct(")")
        return Call(ident, tuple(args), tuple(attrs))

    def value(self):
        num, _, ident, punct = self.peek()
        if num is not None:
            self.i += 1
            return int(num)
        if punct == "[":
            self.i += 1
            out = []
            while self.peek()[3] != "]":
                out.append(self.value())
                if self.peek()[3] == ",":
                    self.i += 1
            self.punct("]")
            return tuple(out)
        self.fail("expected an integer or a list of integers")


def parse_term(text: str, where: str = "expression") -> Term:
    return _ExprParser(text, where).parse()


# ----------------------------------------------------------------------------- placements

@dataclass(frozen=True)
class Shard:
    dim: int
    group: str | None = None   # mesh dim name; None = all ranks

    def __str__(self):
        return f"shard({self.dim})" + (f"@{self.group}" if self.group else "")


@dataclass(frozen=True)
class Replicate:
    group: str | None = None

    def __str__(self):
        return "replicate" + (f"@{self.group}" if self.group else "")


# a partial placement's reduction over the ranks -> the spec term combining them (avg: their
# mean, the sum over the ranks divided by their number -- DTensor's Partial("avg"))
RANK_REDUCE = {"sum": "sum", "max": "max", "avg": "mean"}


@dataclass(frozen=True)
class Partial:
    group: str | None = None
    reduce: str = "sum"

    def __str__(self):
        return ("partial" if self.reduce == "sum" else f"partial({self.reduce})") + (f"@{self.group}" if self.group else "")


Placement = Shard | Replicate | Partial


@dataclass(frozen=True)
class Relation:
    """How one G_s tensor relates to the ranks: placements (one per mesh dim used) or a term."""
    placements: tuple = ()
    term: Term | None = None

    def __str__(self):
        return str(self.term) if self.term is not None else ", ".join(str(p) for p in self.placements)


_PLACEMENT = re.compile(r"^\s*(shard\(\s*(-?\d+)\s*\)|replicate|partial(?:\(\s*(sum|max|avg)\s*\))?)\s*(?:@\s*([A-Za-z_][A-Za-z0-9_]*))?\s*$")


def parse_relation(text: str, where: str, mesh: "Mesh") -> Relation:
    if not isinstance(text, str):
        raise SpecError(f"{where}: expected a string, got {type(text).__name__}")
    parts = [p for p in text.split(",")] if not re.match(r"^\s*[a-z]+\(.*r\d+\.", text) else None
    if parts is not None and all(_PLACEMENT.match(p) for p in parts):
        placements = []
        for p in parts:
            m = _PLACEMENT.match(p)
            group = m.group(4)
            if group is not None and group not in mesh.names:
                raise SpecError(f"{where}: unknown mesh dimension {group!r} (mesh: {', '.join(mesh.names) or 'none declared'})")
            if m.group(2) is not None:
                placements.append(Shard(int(m.group(2)), group))
            elif m.group(1) == "replicate":
                placements.append(Replicate(group))
            else:
                placements.append(Partial(group, m.group(3) or "sum"))
        groups = [p.group for p in placements]
        if len(set(groups)) != len(groups):
            raise SpecError(f"{where}: two placements for the same mesh dimension in {text!r}")
        return Relation(placements=tuple(placements))
    if not re.search(r"\br\d+\.", text):     # no rank's tensor named: meant as placements
        raise SpecError(f"{where}: {text!r} is not a placement{_did_you_mean(parts or [text])}: write "
                        "shard(D), replicate, partial, partial(max) or partial(avg) (each optionally @mesh_dim; one per "
                        "mesh dimension, comma-separated), or a term over the ranks' tensors such as "
                        "concat(r0.x, r1.x, dim=0)")
    return Relation(term=parse_term(text, where))


def _did_you_mean(parts: list[str]) -> str:
    """'; did you mean 'shard(0)'?' for a misspelt placement (shrad(0), shard(O), replicated)."""
    import difflib
    fixed = []
    for p in parts:
        m = re.match(r"^\s*([A-Za-z_]+)(.*)$", p)
        if m is None:
            return ""
        close = difflib.get_close_matches(m.group(1).lower(), ["shard", "replicate", "partial"], n=1, cutoff=0.6)
        if not close:
            return ""
        guess = close[0] + re.sub(r"\(\s*[oO]\s*\)", "(0)", m.group(2))
        if not _PLACEMENT.match(guess):
            return ""
        fixed.append(guess.strip())
    return f" (did you mean {', '.join(fixed)!r}?)"


@dataclass(frozen=True)
class Mesh:
    shape: tuple = ()
    names: tuple = ()

    def coords(self, rank: int) -> tuple:
        out = []
        for size in reversed(self.shape):
            out.append(rank % size)
            rank //= size
        return tuple(reversed(out))

    def rank_of(self, coords) -> int:
        r = 0
        for c, size in zip(coords, self.shape):
            r = r * size + c
        return r


@dataclass
class Spec:
    inputs: dict = field(default_factory=dict)      # name -> Relation
    check: list | None = None                       # output names; None = all
    expect: dict = field(default_factory=dict)      # output name -> Relation
    cut: dict = field(default_factory=dict)         # tensor name -> Relation
    mesh: Mesh = field(default_factory=Mesh)
    path: str | None = None
    constants: dict = field(default_factory=dict)   # const port name -> int | float | bool
    assume: tuple = ()                              # assumption names the user wrote (sorted; config.ASSUMPTIONS)
    stages: dict = field(default_factory=dict)      # cut tensor -> Relation, in pipeline order (entangle_py/stages.py)

    def to_toml(self) -> str:
        lines = []
        if self.mesh.shape:
            lines += ["[mesh]", f"shape = {list(self.mesh.shape)}",
                      "names = [" + ", ".join(_toml_str(n) for n in self.mesh.names) + "]", ""]
        for section, table in (("inputs", self.inputs), ("cut", self.cut), ("stages", self.stages)):
            if table:
                lines.append(f"[{section}]")
                lines += [f"{_toml_str(k)} = {_toml_str(str(v))}" for k, v in table.items()]
                lines.append("")
        if self.check is not None:
            lines += ["[outputs]", "check = [" + ", ".join(_toml_str(c) for c in self.check) + "]", ""]
        if self.expect:
            lines.append("[expect]")
            lines += [f"{_toml_str(k)} = {_toml_str(str(v))}" for k, v in self.expect.items()]
            lines.append("")
        if self.constants:
            lines.append("[constants]")
            lines += [f"{_toml_str(k)} = {_toml_number(v)}" for k, v in self.constants.items()]
            lines.append("")
        if self.assume:
            lines.append("[assume]")
            lines += [f"{a} = true" for a in self.assume]
            lines.append("")
        return "\n".join(lines)


def _toml_str(text: str) -> str:
    """A TOML basic string: a relation naming a quoted tensor (``r0."cut:logits"``) has quotes."""
    return json.dumps(text)


def _toml_number(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "inf" if v == float("inf") else "-inf" if v == float("-inf") else "nan" if v != v else repr(v)
    return str(v)


def load_spec(path: str | Path) -> Spec:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise SpecError(f"{path}: cannot read ({e.strerror or e})") from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{path}: not valid TOML ({e})") from None
    return parse_spec(data, str(path))


def parse_spec(data: dict, where: str = "spec") -> Spec:
    unknown = set(data) - {"mesh", "inputs", "outputs", "expect", "cut", "constants", "assume", "stages"}
    if unknown:
        raise SpecError(f"{where}: unknown section(s) {sorted(unknown)}")
    mesh = Mesh()
    if "mesh" in data:
        m = data["mesh"]
        shape, names = m.get("shape"), m.get("names")
        if not (isinstance(shape, list) and isinstance(names, list) and len(shape) == len(names)
                and all(isinstance(s, int) and s > 0 for s in shape) and all(isinstance(n, str) for n in names)):
            raise SpecError(f"{where}: [mesh] needs shape = [ints] and names = [strings] of the same length")
        mesh = Mesh(tuple(shape), tuple(names))
    spec = Spec(mesh=mesh, path=where)
    for section in ("inputs", "cut", "expect", "stages"):
        table = data.get(section, {})
        if not isinstance(table, dict):
            raise SpecError(f"{where}: [{section}] must be a table")
        getattr(spec, section).update(
            {name: parse_relation(text, f"{where} [{section}] {name!r}", mesh) for name, text in table.items()})
    outputs = data.get("outputs", {})
    if "check" in outputs:
        check = outputs["check"]
        if not (isinstance(check, list) and all(isinstance(c, str) for c in check)):
            raise SpecError(f"{where}: [outputs] check must be a list of output names")
        spec.check = list(check)
    both = sorted(set(spec.stages) & (set(spec.cut) | set(spec.expect) | set(spec.inputs)))
    if both:    # a stage boundary is assumed by one stage and discharged by the one before it
        raise SpecError(f"{where}: {', '.join(map(repr, both))} in [stages] and in [cut], [expect] or [inputs]: "
                        f"a stage boundary's relation is written once, in [stages]")
    spec.constants = _parse_constants(data.get("constants", {}), where)
    spec.assume = _parse_assume(data.get("assume", {}), where)
    return spec


def _parse_constants(table, where) -> dict:
    if not isinstance(table, dict):
        raise SpecError(f"{where}: [constants] must be a table of name = number")
    out = {}
    for name, v in table.items():
        if not isinstance(v, (int, float, bool)):
            raise SpecError(f"{where}: [constants] {name!r} must be a number or a boolean, got {v!r}")
        out[name] = v
    return out


def _parse_assume(table, where) -> tuple:
    """The assumptions written true (``name = false`` is allowed and is what leaving it out means)."""
    if not isinstance(table, dict):
        raise SpecError(f"{where}: [assume] must be a table of name = true/false")
    for name, v in table.items():
        if not isinstance(v, bool):
            raise SpecError(f"{where}: [assume] {name} must be true or false")
    with_assumptions((), list(table), f"{where}: [assume]")     # every name known, true or false
    return tuple(sorted(name for name, v in table.items() if v))


def with_assumptions(assume: tuple, names, where: str) -> tuple:
    """``assume`` and the assumptions ``names`` (sorted, each once); SpecError for a name the
    checker does not know."""
    for name in names:
        if name not in ASSUMPTIONS:
            raise SpecError(f"{where} {name!r} is not an assumption the checker knows "
                            f"({', '.join(sorted(ASSUMPTIONS))})")
    return tuple(sorted(set(assume) | set(names)))


# ----------------------------------------------------------------------------- relation terms

def relation_terms(rel: Relation, name: str, world_size: int, mesh: Mesh | None = None,
                   ndim: int | None = None) -> list[Term]:
    """Every clean term that equals the G_s tensor, over the ranks' tensors called ``name``.

    ``shard(0)`` on 2 ranks gives ``[concat(r0.x, r1.x, dim=0)]``; ``replicate`` gives one term per
    rank (``r0.x``, ``r1.x``, ...): all of them equal the G_s tensor.  With the tensor's ``ndim``
    a shard dim is written in its non-negative form (``shard(-1)`` of a 2-D tensor is dim 1).
    """
    if rel.term is not None:
        return [rel.term]
    if ndim is not None:
        rel = Relation(placements=tuple(_normalized(p, ndim, name) for p in rel.placements))
    mesh = mesh if mesh is not None and mesh.shape else Mesh((world_size,), ("_all",))
    if _prod(mesh.shape) != world_size:
        raise SpecError(f"mesh {list(mesh.shape)} has {_prod(mesh.shape)} ranks but the program has {world_size}")
    by_dim = {}
    for p in rel.placements:
        g = p.group or mesh.names[0]
        if p.group is None and len(mesh.shape) > 1:
            raise SpecError(f"{name}: on a {len(mesh.shape)}-D mesh a placement must name its mesh dimension (e.g. {p}@{mesh.names[-1]})")
        by_dim[mesh.names.index(g)] = p
    active = [d for d in range(len(mesh.shape)) if d in by_dim and not isinstance(by_dim[d], Replicate)]
    free = [d for d in range(len(mesh.shape)) if d not in active]
    terms = []
    for fixed in _product([range(mesh.shape[d]) for d in free]):
        coords = dict(zip(free, fixed))
        terms.append(_nest(active, coords, by_dim, mesh, name))
    return terms


def _normalized(p: Placement, ndim: int, name: str) -> Placement:
    if not isinstance(p, Shard):
        return p
    if not -ndim <= p.dim < ndim:
        raise SpecError(f"{name}: {p} names a dim of a {ndim}-D tensor that it does not have")
    return Shard(p.dim % ndim, p.group)


def _nest(active, coords, by_dim, mesh, name):
    if not active:
        return Leaf(mesh.rank_of([coords[d] for d in range(len(mesh.shape))]), name)
    d, rest = active[0], active[1:]
    parts = tuple(_nest(rest, {**coords, d: i}, by_dim, mesh, name) for i in range(mesh.shape[d]))
    p = by_dim[d]
    if len(parts) == 1:
        return parts[0]
    if isinstance(p, Shard):
        return Call("concat", parts, (("dim", p.dim),))
    return Call(RANK_REDUCE[p.reduce], parts)


def _prod(xs):
    out = 1
    for x in xs:
        out *= x
    return out


def _product(ranges):
    if not ranges:
        yield ()
        return
    for i in ranges[0]:
        for rest in _product(ranges[1:]):
            yield (i,) + rest


# ----------------------------------------------------------------------------- explicit terms

# Operators the checker seeds from an explicit relation, with the attributes each takes.  Any
# other attribute is refused: a misspelt key (``dimm=1``) must never fall back to a default and
# silently change what the relation says.
TERM_ATTRS = {"concat": frozenset({"dim"}), "sum": frozenset(), "max": frozenset(), "mean": frozenset(),
              "slice": frozenset({"dim", "start", "end", "step"}), "transpose": frozenset({"dims", "dim0", "dim1"}),
              "permute": frozenset({"dims"}), "reshape": frozenset({"shape"}), "neg": frozenset()}
assert set(TERM_ATTRS) == CLEAN_OPS     # what a spec may write is what the checker understands


def normalize_term(t: Term, shape_of, where: str, le=None) -> tuple[Term, tuple]:
    """``t`` with every dim and slice bound explicit and non-negative, checked against the
    leaves' shapes; returns (term, shape).

    ``shape_of(leaf)`` gives a rank tensor's shape (ints or sympy sizes); ``le(a, b)`` is True
    only when ``a <= b`` is proven for symbolic sizes (without it, a bound on a symbolic dim that
    is not literally within it is refused).  ``slice(x, dim=d, start=a, end=b)`` keeps rows
    ``[a, b)`` of dim ``d``: ``start`` defaults to 0, ``end`` to the dim's size, a negative bound
    counts from the end (as in Python), ``step`` must be 1; a bound outside ``[0, size]`` or
    ``start > end`` is refused (never clamped).  Raises SpecError (exit 2) on anything the
    term language cannot express."""
    if isinstance(t, Leaf):
        return t, tuple(shape_of(t))
    if t.op not in TERM_ATTRS:
        raise SpecError(f"{where}: operator {t.op!r} is not supported in input relations yet "
                        f"(supported: {', '.join(sorted(TERM_ATTRS))})")
    keys = [k for k, _ in t.attrs]
    bad = [k for k in keys if k not in TERM_ATTRS[t.op]]
    if bad or len(set(keys)) != len(keys):
        raise SpecError(f"{where}: {t.op}() takes " +
                        (", ".join(f"{k}=" for k in sorted(TERM_ATTRS[t.op])) or "no attributes") +
                        f"; got {', '.join(f'{k}=' for k in keys)}")
    if not t.args:
        raise SpecError(f"{where}: {t.op}() has no tensor argument")
    parts = [normalize_term(a, shape_of, where, le) for a in t.args]
    args = tuple(a for a, _ in parts)
    shapes = [s for _, s in parts]
    shape = shapes[0]
    if any(len(s) != len(shape) for s in shapes):
        raise SpecError(f"{where}: {t.op}() of tensors with different numbers of dims in {t}")
    if t.op in ("sum", "max", "mean"):
        return Call(t.op, args), shape
    if t.op in ("neg", "transpose", "permute", "reshape"):
        if len(args) != 1:
            raise SpecError(f"{where}: {t.op}() takes one tensor, got {len(args)} in {t}")
        return _movement(t, args[0], shape, where)
    d = _term_dim(t, len(shape), where)
    if t.op == "concat":
        total = shapes[0][d]
        for s in shapes[1:]:
            total = total + s[d]
        return Call("concat", args, (("dim", d),)), shape[:d] + (total,) + shape[d + 1:]
    # slice
    if len(args) != 1:
        raise SpecError(f"{where}: slice() takes one tensor, got {len(args)} in {t}")
    step = t.attr("step", 1)
    if step != 1:
        raise SpecError(f"{where}: slice with step={step} in {t}: the term language has no strided "
                        f"slice (write the rows as a concat of step-1 slices)")
    size = shape[d]
    bounds = []
    for key, default in (("start", 0), ("end", size)):
        b = t.attr(key, default)
        if key in dict(t.attrs) and not isinstance(b, int):
            raise SpecError(f"{where}: slice {key}={_fmt_attr(b)} is not an integer in {t}")
        bounds.append(size + b if isinstance(b, int) and b < 0 else b)
    start, end = bounds

    def within(a, b):          # a <= b, proven
        if isinstance(a, int) and isinstance(b, int):
            return a <= b
        try:
            import sympy
            diff = sympy.expand(sympy.sympify(b) - sympy.sympify(a))
            if diff.is_Integer:
                return int(diff) >= 0
            if diff.is_nonnegative:     # from the symbols' own facts (sizes are positive)
                return True
        except (TypeError, ValueError):
            return False
        return bool(le is not None and le(a, b))

    if not (within(0, start) and within(start, end) and within(end, size)):
        raise SpecError(f"{where}: slice [{t.attr('start', 0)}, {t.attr('end', size)}) of dim {d} is not "
                        f"inside a dim of size {size} in {t} (bounds are never clamped)")
    return (Call("slice", args, (("dim", d), ("start", start), ("end", end))),
            shape[:d] + (end - start,) + shape[d + 1:])


def _movement(t: Call, x: Term, shape: tuple, where: str) -> tuple[Term, tuple]:
    """neg / transpose / permute / reshape of one tensor, its dims explicit and non-negative."""
    n = len(shape)

    def dim(v):
        if not isinstance(v, int) or not -n <= v < n:
            raise SpecError(f"{where}: {t.op} of dim {_fmt_attr(v)} of a {n}-D tensor in {t}")
        return v % n
    if t.op == "neg":
        return Call("neg", (x,)), shape
    if t.op == "transpose":
        dims = t.attr("dims")
        if dims is not None and ("dim0" in dict(t.attrs) or "dim1" in dict(t.attrs)):
            raise SpecError(f"{where}: transpose takes dims=[a, b] or dim0=, dim1=, not both, in {t}")
        if dims is not None and (not isinstance(dims, tuple) or len(dims) != 2):
            raise SpecError(f"{where}: transpose dims={_fmt_attr(dims)} is not two dims in {t}")
        a, b = (dim(v) for v in (dims if dims is not None else (t.attr("dim0", 0), t.attr("dim1", 1))))
        out = list(shape)
        out[a], out[b] = out[b], out[a]
        return Call("transpose", (x,), (("dim0", a), ("dim1", b))), tuple(out)
    if t.op == "permute":
        dims = t.attr("dims")
        p = tuple(dim(v) for v in dims) if isinstance(dims, tuple) else None
        if p is None or sorted(p) != list(range(n)):
            raise SpecError(f"{where}: permute dims={_fmt_attr(dims)} is not a permutation of {n} dims in {t}")
        return Call("permute", (x,), (("dims", p),)), tuple(shape[i] for i in p)
    new = t.attr("shape")       # reshape: sizes, at most one -1, of a tensor of literal sizes
    if not isinstance(new, tuple) or not all(isinstance(v, int) and v >= -1 for v in new) or list(new).count(-1) > 1:
        raise SpecError(f"{where}: reshape shape={_fmt_attr(new)} is not a list of sizes in {t}")
    if not all(isinstance(v, int) for v in shape):
        raise SpecError(f"{where}: reshape of a tensor of symbolic shape {list(shape)} in {t}")
    total, known = math.prod(shape), math.prod(v for v in new if v != -1)
    if -1 in new:
        if known == 0 or total % known:
            raise SpecError(f"{where}: reshape of {list(shape)} to {list(new)} in {t}")
        new = tuple(total // known if v == -1 else v for v in new)
    if math.prod(new) != total:
        raise SpecError(f"{where}: reshape of {list(shape)} to {list(new)} in {t}")
    return Call("reshape", (x,), (("shape", new),)), new


def _term_dim(t: Call, ndim: int, where: str) -> int:
    d = t.attr("dim", 0)
    if not isinstance(d, int) or not -ndim <= d < ndim:
        raise SpecError(f"{where}: {t.op} along dim {_fmt_attr(d)} of {ndim}-D tensors in {t}")
    return d % ndim
