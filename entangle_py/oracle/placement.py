"""Values for the programs' inputs, and clean terms evaluated on the ranks' values.

Random G_s inputs (``random_inputs``); the G_d inputs the input relation gives for them
(``distribute_inputs``: a shard is a slice, a partial sum random parts that add up, a spec term
inverted); and ``eval_term``, the value of a clean term over the ranks' tensors.  This is the one
numeric meaning of placements: the checker's own (``check/spec.py``) is symbolic.
"""
from __future__ import annotations

import functools
from typing import Any

from entangle_py.lazy import sympy, torch
from entangle_py.check import spec as S
from entangle_py.ir import graph as G
from entangle_py.oracle.graph_values import InterpError, eval_size, solve_int


# ----------------------------------------------------------------------------- random inputs

def _is_float(dtype: torch.dtype) -> bool:
    return dtype.is_floating_point or dtype.is_complex


def torch_dtype(name: str) -> torch.dtype:
    d = getattr(torch, name, None) if not name.startswith("_") else None
    if not isinstance(d, torch.dtype):
        raise InterpError(f"unknown dtype {name!r}")
    return d


def random_tensor(shape, dtype: torch.dtype, generator: torch.Generator | None, int_range=(0, 2)) -> torch.Tensor:
    shape = tuple(int(s) for s in shape)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    if _is_float(dtype):
        return torch.randn(shape, generator=generator, dtype=dtype)
    lo, hi = int_range
    return torch.randint(lo, hi, shape, generator=generator, dtype=dtype)


def random_inputs(rank_graph: G.RankGraph, generator: torch.Generator | None = None, *,
                  sizes: dict[str, int] | None = None, int_ranges: dict[str, tuple[int, int]] | None = None,
                  float_dtype: torch.dtype | None = None, fixed: dict[str, Any] | None = None,
                  default_size: int | None = None) -> dict[str, Any]:
    """Random values for a rank graph's inputs (by port name), from their recorded shape/dtype.

    Floats ~ randn (in ``float_dtype`` if given), integers uniform in ``int_ranges[port]``
    (default [0, 2)), bools random.  Symbolic sizes are bound from ``sizes`` (symbol name -> int);
    an unbound symbol takes ``default_size`` (clipped to the symbol's range) or is an error.
    ``fixed`` gives values for some ports verbatim.  SymInt inputs get their size's value.
    """
    sizes = dict(sizes or {})
    int_ranges = int_ranges or {}
    fixed = fixed or {}
    counts = rank_graph.nonzero_counts()
    for name, (lo, hi) in rank_graph.symbols.items():
        if name not in sizes and name not in counts and default_size is not None:
            v = max(default_size, lo if lo is not None else 1)
            sizes[name] = min(v, hi) if hi is not None else v
    out = {}
    for p in rank_graph.inputs:
        if p.name in fixed:
            out[p.name] = fixed[p.name]
            continue
        n = rank_graph.node(p.node)
        where = f"rank {rank_graph.rank} input {p.name!r}"
        if isinstance(n.val, G.TensorMeta):
            shape = [eval_size(d, sizes, where) for d in n.val.shape]
            dt = torch_dtype(n.val.dtype)
            if float_dtype is not None and dt.is_floating_point:
                dt = float_dtype
            out[p.name] = random_tensor(shape, dt, generator, int_ranges.get(p.name, (0, 2)))
        elif isinstance(n.val, G.SymIntMeta):
            out[p.name] = eval_size(n.val.expr, sizes, where)
        else:
            raise InterpError(f"{where}: cannot make a random value for {n.val!r}; pass it in 'fixed'")
    return out


# ----------------------------------------------------------------------------- distribute

def _leaf_shape(bundle: G.Bundle, rank: int, name: str) -> tuple:
    if not 0 <= rank < bundle.world_size:
        raise InterpError(f"r{rank}.{name}: rank {rank} is outside the {bundle.world_size}-rank program")
    g = bundle.rank(rank)
    n = g.input_node(name)
    if n is None and g.has(name):
        n = g.node(name)
    if n is None:
        raise InterpError(f"r{rank}.{name}: rank {rank} has no input {name!r}")
    if not isinstance(n.val, G.TensorMeta):
        raise InterpError(f"r{rank}.{name}: not a tensor ({n.val!r})")
    return n.val.shape


def _solve_sizes(exprs: list, total: int, where: str) -> list[int]:
    """Integer sizes for ``exprs`` (ints or sympy) that add up to ``total``."""
    exprs = [sympy.sympify(e) for e in exprs]
    free = set().union(*(e.free_symbols for e in exprs))
    if not free:
        sizes = [int(e) for e in exprs]
    elif all(e == exprs[0] for e in exprs):
        if total % len(exprs):
            raise InterpError(f"{where}: {total} does not split evenly into {len(exprs)} parts of size {exprs[0]}")
        sizes = [total // len(exprs)] * len(exprs)
    elif len(free) == 1:
        s = next(iter(free))
        v = solve_int(sympy.Add(*exprs), s, total)
        if v is None:
            raise InterpError(f"{where}: cannot solve {' + '.join(map(str, exprs))} = {total}")
        sizes = [int(e.xreplace({s: sympy.Integer(v)})) for e in exprs]
    else:
        raise InterpError(f"{where}: part sizes {[str(e) for e in exprs]} have several unknown symbols")
    if sum(sizes) != total or any(x < 0 for x in sizes):
        raise InterpError(f"{where}: the ranks' sizes {sizes} do not tile the sequential size {total}")
    return sizes


def _random_parts(value: torch.Tensor, n: int, reduce: str, generator, where) -> list[torch.Tensor]:
    if value.dtype == torch.bool:
        raise InterpError(f"{where}: cannot split a bool tensor into partial values")
    if reduce == "sum":
        if _is_float(value.dtype):
            scale = value.abs().mean().item() if value.numel() else 1.0
            parts = [torch.randn(value.shape, generator=generator, dtype=value.dtype) * (scale or 1.0) for _ in range(n - 1)]
        else:
            parts = [torch.randint(-3, 4, value.shape, generator=generator, dtype=value.dtype) for _ in range(n - 1)]
        rest = value.clone()
        for p in parts:
            rest = rest - p
        return parts + [rest]
    if reduce == "avg":     # parts whose mean is the value: n times parts that add up to it
        if not _is_float(value.dtype):
            raise InterpError(f"{where}: a mean over ranks of {value.dtype} parts")
        return [p * n for p in _random_parts(value, n, "sum", generator, where)]
    if reduce == "max":
        winner = torch.randint(0, n, value.shape, generator=generator)
        out = []
        for i in range(n):
            if _is_float(value.dtype):
                lower = value - torch.rand(value.shape, generator=generator, dtype=value.dtype) - 0.1
            else:
                lower = value - torch.randint(1, 4, value.shape, generator=generator, dtype=value.dtype)
            out.append(torch.where(winner == i, value, lower))
        return out
    raise InterpError(f"{where}: partial({reduce}) is not supported")


def _place(value, placements_by_dim, mesh: S.Mesh, bundle, name, generator):
    """Placements (one per mesh dim) -> {rank: tensor}, DTensor semantics (mesh dims in order)."""
    ndim = len(mesh.shape)
    where = f"input {name!r}"

    def block_size(k, coords: dict, d):
        """Size along tensor dim d of the block addressed by mesh coords for dims <= k."""
        for k2 in range(k + 1, ndim):
            p = placements_by_dim.get(k2)
            if isinstance(p, S.Shard) and p.dim % value.dim() == d:
                return sympy.Add(*[block_size(k2, {**coords, k2: j}, d) for j in range(mesh.shape[k2])])
        full = [coords.get(i, 0) for i in range(ndim)]
        shape = _leaf_shape(bundle, mesh.rank_of(full), name)
        if len(shape) != value.dim():
            raise InterpError(f"{where}: rank {mesh.rank_of(full)} holds {len(shape)} dims, the sequential tensor {value.dim()}")
        return sympy.sympify(shape[d])

    def rec(k, v, coords) -> dict:
        if k == ndim:
            return {(): v}
        p = placements_by_dim.get(k, S.Replicate())
        n = mesh.shape[k]
        if isinstance(p, S.Replicate):
            sub = rec(k + 1, v, {**coords, k: 0})
            return {(i,) + c: t for i in range(n) for c, t in sub.items()}
        if isinstance(p, S.Shard):
            if value.dim() == 0:
                raise InterpError(f"{where}: cannot shard a 0-dim tensor")
            d = p.dim % value.dim()
            sizes = _solve_sizes([block_size(k, {**coords, k: i}, d) for i in range(n)], v.shape[d],
                                 f"{where} shard({p.dim}) over mesh dim {mesh.names[k]}")
            parts = torch.split(v, sizes, dim=d)
        else:
            parts = _random_parts(v, n, p.reduce, generator, where)
        out = {}
        for i, part in enumerate(parts):
            for c, t in rec(k + 1, part.contiguous(), {**coords, k: i}).items():
                out[(i,) + c] = t
        return out

    return {mesh.rank_of(c): t for c, t in rec(0, value, {}).items()}


_DIM_ATTRS = ("dim",)


def _invert(term: S.Term, value: torch.Tensor, bundle, generator, out: dict, parts: dict | None = None):
    """Assign tensors to the leaves of ``term`` so that it evaluates to ``value``.

    A slice of a leaf fixes only its rows: ``parts[(rank, name)] = (tensor, known mask)`` gathers
    them (several slices of one leaf, e.g. an interleaved fused weight ``[gate_r; up_r]``), and
    ``distribute_term`` fills what no slice fixed with random values."""
    if parts is None:
        parts = {}
    if isinstance(term, S.Leaf):
        key = (term.rank, term.name)
        if key in out and not (out[key].shape == value.shape and torch.equal(out[key], value)):
            raise InterpError(f"{term}: appears twice in the relation with different values")
        out[key] = value
        return
    op, args = term.op, term.args
    if op == "concat":
        d = term.attr("dim", 0) % max(value.dim(), 1)
        sizes = _solve_sizes([_term_size(a, d, bundle) for a in args], value.shape[d], f"{term}")
        for a, part in zip(args, torch.split(value, sizes, dim=d)):
            _invert(a, part.contiguous(), bundle, generator, out, parts)
    elif op in ("sum", "max", "mean"):
        reduce = {term_op: p for p, term_op in S.RANK_REDUCE.items()}[op]     # mean -> avg
        for a, part in zip(args, _random_parts(value, len(args), reduce, generator, str(term))):
            _invert(a, part, bundle, generator, out, parts)
    elif op == "neg" and len(args) == 1:
        _invert(args[0], -value, bundle, generator, out, parts)
    elif op == "transpose" and len(args) == 1:
        d0, d1 = _transpose_dims(term)
        _invert(args[0], value.transpose(d0, d1).contiguous(), bundle, generator, out, parts)
    elif op == "permute" and len(args) == 1:
        dims = list(term.attr("dims", ()))
        inv = [dims.index(i) for i in range(len(dims))]
        _invert(args[0], value.permute(inv).contiguous(), bundle, generator, out, parts)
    elif op == "reshape" and len(args) == 1 and isinstance(args[0], S.Leaf):
        shape = _leaf_shape(bundle, args[0].rank, args[0].name)
        _invert(args[0], value.reshape([int(s) if not isinstance(s, sympy.Basic) or s.is_Integer else -1 for s in shape]),
                bundle, generator, out, parts)
    elif op == "slice" and len(args) == 1 and isinstance(args[0], S.Leaf):
        shape = _leaf_shape(bundle, args[0].rank, args[0].name)
        d = term.attr("dim", 0) % value.dim()
        if term.attr("step", 1) != 1 or any(isinstance(s, sympy.Basic) and not s.is_Integer for s in shape):
            raise InterpError(f"{term}: cannot invert a slice with a symbolic size or a step")
        full_shape = [int(s) for s in shape]
        start, stop, _ = slice(term.attr("start", 0), term.attr("end", None)).indices(full_shape[d])
        if stop - start != value.shape[d] or list(value.shape[:d]) + list(value.shape[d + 1:]) != \
                full_shape[:d] + full_shape[d + 1:]:
            raise InterpError(f"{term}: the slice has shape {_slice_shape(full_shape, d, start, stop)}, "
                              f"the value {list(value.shape)}")
        key = (args[0].rank, args[0].name)
        if key not in parts:
            parts[key] = (torch.zeros(full_shape, dtype=value.dtype), torch.zeros(full_shape, dtype=torch.bool))
        full, known = parts[key]
        region, seen = full.narrow(d, start, stop - start), known.narrow(d, start, stop - start)
        if bool(seen.any()) and not torch.equal(region[seen], value[seen]):
            raise InterpError(f"{term}: rows of {args[0]} appear twice in the relation with different values")
        region.copy_(value)
        seen.fill_(True)
    else:
        raise InterpError(f"cannot build the ranks' inputs from the relation {term}: {op!r} is not invertible here "
                          f"(use concat / sum / max / neg / transpose / permute over rank tensors)")


def _slice_shape(shape, d, start, stop):
    return shape[:d] + [max(stop - start, 0)] + shape[d + 1:]


def _transpose_dims(term: S.Call):
    dims = term.attr("dims")
    if dims is not None:
        return int(dims[0]), int(dims[1])
    return int(term.attr("dim0", 0)), int(term.attr("dim1", 1))


def _term_ndim(t: S.Term, bundle) -> int:
    while not isinstance(t, S.Leaf):
        if t.op == "reshape":
            return len(t.attr("shape", ()))
        if not t.args:
            raise InterpError(f"{t}: no tensor argument")
        t = t.args[0]
    return len(_leaf_shape(bundle, t.rank, t.name))


def _term_size(t: S.Term, d: int, bundle):
    if isinstance(t, S.Leaf):
        return _leaf_shape(bundle, t.rank, t.name)[d]
    own = t.attr("dim", 0) % max(_term_ndim(t, bundle), 1) if t.op in ("concat", "slice") else None
    if t.op == "concat" and own == d:
        return sympy.Add(*[sympy.sympify(_term_size(a, d, bundle)) for a in t.args])
    if t.op == "slice" and own == d and len(t.args) == 1:
        size = _term_size(t.args[0], d, bundle)
        if isinstance(size, sympy.Basic) and not size.is_Integer or t.attr("step", 1) != 1:
            raise InterpError(f"cannot size {t} along dim {d}")
        start, stop, _ = slice(t.attr("start", 0), t.attr("end", None)).indices(int(size))
        return max(stop - start, 0)
    if t.op in ("concat", "sum", "max", "mean", "neg", "slice"):
        return _term_size(t.args[0], d, bundle)
    if t.op == "transpose" and len(t.args) == 1:
        d0, d1 = (x % _term_ndim(t, bundle) for x in _transpose_dims(t))
        return _term_size(t.args[0], d1 if d == d0 else d0 if d == d1 else d, bundle)
    if t.op == "permute" and len(t.args) == 1:
        return _term_size(t.args[0], list(t.attr("dims", ()))[d], bundle)
    if t.op == "reshape":
        return list(t.attr("shape", ()))[d]
    raise InterpError(f"cannot size {t} along dim {d}")


def distribute_term(value: torch.Tensor, term: S.Term, bundle_dist: G.Bundle,
                    generator: torch.Generator | None = None) -> dict[tuple[int, str], torch.Tensor]:
    """Leaf tensors ``(rank, name) -> tensor`` such that ``term`` evaluates to ``value``; rows of
    a leaf that only slices of it name and that no slice fixes are random."""
    out, parts = {}, {}
    _invert(term, value, bundle_dist, generator, out, parts)
    for key, (full, known) in parts.items():
        if key in out:      # the leaf also appears whole: its sliced rows must agree
            if out[key].shape != full.shape or not torch.equal(out[key][known], full[known]):
                raise InterpError(f"r{key[0]}.{key[1]}: appears whole and sliced in the relation with different values")
            continue
        filler = random_tensor(list(full.shape), full.dtype, generator)
        out[key] = torch.where(known, full, filler)
    return out


def distribute(value: torch.Tensor, relation: S.Relation, name: str, bundle_dist: G.Bundle,
               mesh: S.Mesh | None = None, generator: torch.Generator | None = None) -> list[torch.Tensor | None]:
    """Each rank's input ``name`` built from the sequential tensor ``value`` per ``relation``.

    shard(d) splits along d with the sizes of the ranks' inputs (uneven splits allowed),
    replicate copies, partial(sum) draws random parts that add up to ``value`` (partial(max):
    random parts whose elementwise max is ``value``).  N-D meshes follow DTensor: placements apply
    in mesh-dim order and a replicated mesh dim holds identical tensors.  An explicit term is
    inverted (concat / sum / max / neg / transpose / permute; slice / reshape of a single leaf);
    ranks it does not mention get ``None``.
    """
    W = bundle_dist.world_size
    out: list = [None] * W
    if relation.term is not None:
        leaves = distribute_term(value, relation.term, bundle_dist, generator)
        others = sorted({n for (_, n) in leaves if n != name})
        if others:
            raise InterpError(f"relation {relation} for {name!r} names other tensors ({', '.join(others)}); "
                              f"use distribute_term")
        for (r, _), t in leaves.items():
            out[r] = t
        return out
    mesh = mesh if mesh is not None and mesh.shape else S.Mesh((W,), ("_all",))
    if S._prod(mesh.shape) != W:
        raise InterpError(f"mesh {list(mesh.shape)} has {S._prod(mesh.shape)} ranks but the program has {W}")
    by_dim = {}
    for p in relation.placements:
        if p.group is None and len(mesh.shape) > 1:
            raise InterpError(f"{name}: on a {len(mesh.shape)}-D mesh a placement must name its mesh dimension")
        by_dim[mesh.names.index(p.group) if p.group else 0] = p
    for r, t in _place(value, by_dim, mesh, bundle_dist, name, generator).items():
        out[r] = t
    return out


def distribute_inputs(seq_inputs: dict[str, Any], spec: S.Spec, bundle_dist: G.Bundle,
                      generator: torch.Generator | None = None, *, default_replicate: bool = True,
                      float_dtype: torch.dtype | None = None) -> list[dict[str, Any]]:
    """Every rank's inputs built from the sequential inputs through ``spec.inputs``.

    An input without a relation is replicated (if ``default_replicate`` and the shapes allow it).
    SymInt inputs are left out (``run_bundle`` derives them from the shapes: a sharded dim's local
    size is not the sequential one).  Rank inputs that no relation mentions are filled with random
    tensors (floats in ``float_dtype`` if given).  Explicit terms may name any rank tensors.
    """
    W = bundle_dist.world_size
    per_rank: list[dict] = [dict() for _ in range(W)]
    mesh = spec.mesh if spec.mesh.shape else None
    for name, value in seq_inputs.items():
        rel = spec.inputs.get(name)
        if rel is None:
            if not default_replicate:
                raise InterpError(f"no input relation for {name!r}")
            rel = S.Relation(placements=(S.Replicate(),) if mesh is None else
                             tuple(S.Replicate(n) for n in spec.mesh.names))
        if not isinstance(value, torch.Tensor):
            for r in range(W):
                g = bundle_dist.rank(r)
                n = g.input_node(name) or (g.node(name) if g.has(name) else None)
                if n is not None and n.is_placeholder and not isinstance(n.val, G.SymIntMeta):
                    per_rank[r][name] = value
            continue
        if rel.term is not None:
            for (r, n), t in distribute_term(value, rel.term, bundle_dist, generator).items():
                per_rank[r][n] = t
        else:
            holders = [r for r in range(W) if _has_input(bundle_dist.rank(r), name)]
            if not holders:
                continue    # a sequential input the distributed program does not read
            for r, t in enumerate(distribute(value, rel, name, bundle_dist, mesh, generator)):
                if t is not None and r in holders:
                    per_rank[r][name] = t
    for r in range(W):
        g = bundle_dist.rank(r)
        for p in g.inputs:
            if p.name in per_rank[r]:
                continue
            n = g.node(p.node)
            if isinstance(n.val, G.TensorMeta) and all(isinstance(d, int) for d in n.val.shape):
                dt = torch_dtype(n.val.dtype)
                if float_dtype is not None and dt.is_floating_point:
                    dt = float_dtype
                per_rank[r][p.name] = random_tensor(n.val.shape, dt, generator)
            elif isinstance(n.val, G.TensorMeta):
                raise InterpError(f"rank {r} input {p.name!r} has no relation to the sequential inputs and a "
                                  f"symbolic shape; cannot fill it")
    return per_rank


def _has_input(g: G.RankGraph, name: str) -> bool:
    return g.input_node(name) is not None or (g.has(name) and g.node(name).is_placeholder)


# ----------------------------------------------------------------------------- clean terms

def eval_term(term: S.Term, values_per_rank: list[dict[str, Any]]) -> torch.Tensor:
    """Evaluate a clean term (concat, sum, max, slice, transpose, permute, reshape, neg) over the
    ranks' values (``values_per_rank[r][name]``, e.g. from ``named_values``)."""
    if isinstance(term, S.Leaf):
        if not 0 <= term.rank < len(values_per_rank):
            raise InterpError(f"{term}: no rank {term.rank}")
        try:
            return values_per_rank[term.rank][term.name]
        except KeyError:
            raise InterpError(f"{term}: rank {term.rank} has no value named {term.name!r}") from None
    args = [eval_term(a, values_per_rank) for a in term.args]
    op = term.op
    if op == "concat":
        return torch.cat(args, dim=term.attr("dim", 0))
    if op == "sum":
        return functools.reduce(torch.add, args)
    if op == "max":
        return functools.reduce(torch.maximum, args)
    if op == "mean":
        return functools.reduce(torch.add, args) / len(args)
    if op == "neg":
        return -args[0]
    if op == "slice":
        d, start = term.attr("dim", 0), term.attr("start", 0)
        end, step = term.attr("end", None), term.attr("step", 1)
        idx = [slice(None)] * args[0].dim()
        idx[d] = slice(start, end, step)
        return args[0][tuple(idx)]
    if op == "transpose":
        d0, d1 = _transpose_dims(term)
        return args[0].transpose(d0, d1)
    if op == "permute":
        return args[0].permute(list(term.attr("dims", ())))
    if op == "reshape":
        return args[0].reshape(list(term.attr("shape", ())))
    raise InterpError(f"cannot evaluate {term}: unknown clean op {op!r}")
