"""Labels of mutants (``mutate.py``) on random draws: *equivalent* when every checked output and
relation agrees with the original distributed program's, *non-equivalent* when one differs,
*invalid* when the mutant cannot run (the harness excludes those)."""
from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from entangle_py.ir import graph as G
from entangle_py.check import spec as S
from entangle_py.oracle import interp
from entangle_py.oracle import placement
from entangle_py.semantics import terms as T
from tooling.mutate import tensor_meta

EQUIVALENT, NON_EQUIVALENT, INVALID = "equivalent", "non-equivalent", "invalid"


@dataclass
class Draw:
    """One random draw: G_s inputs and outputs, the ranks' inputs, the original G_d's values."""
    seq_values: dict          # G_s node / port name -> value
    dist_inputs: list         # per rank: port name -> tensor
    orig_values: list         # per rank: named values of the original distributed program


def _clone(x):
    return x.clone() if isinstance(x, torch.Tensor) else x


def draws(seq: G.Bundle, dist: G.Bundle, spec, n: int = 2, seed: int = 0, default_size: int = 4) -> list[Draw]:
    """``n`` draws of float64 inputs for G_s, distributed to the ranks through the spec's input
    relation, with G_s and the original G_d run on them."""
    spec = _draw_spec(seq, dist, spec)
    try:
        return _draws(seq, dist, spec, n, seed, default_size, _int_ranges(seq))
    except Exception:
        return _draws(seq, dist, spec, n, seed, default_size, {})


def _int_ranges(seq: G.Bundle) -> dict:
    """Integer inputs (token ids) range over the rows of the smallest 2-D+ float input (a table),
    so that ids reach every rank's shard of it."""
    g = seq.ranks[0]
    rows = [t.shape[0] for p in g.inputs if (t := tensor_meta(g.node(p.node))) is not None
            and t.dtype.startswith("float") and len(t.shape) >= 2 and isinstance(t.shape[0], int)]
    if not rows:
        return {}
    return {p.name: (0, min(rows)) for p in g.inputs
            if (t := tensor_meta(g.node(p.node))) is not None and t.dtype.startswith(("int", "uint"))}


def _draws(seq, dist, spec, n, seed, default_size, int_ranges):

    out = []
    for i in range(n):
        gen = torch.Generator().manual_seed(seed + i)
        seq_in = placement.random_inputs(seq.ranks[0], gen, float_dtype=torch.float64, default_size=default_size,
                                      int_ranges=int_ranges)
        dist_in = placement.distribute_inputs(seq_in, spec, dist, gen, float_dtype=torch.float64)
        senv = interp.run_bundle(seq, [{k: _clone(v) for k, v in seq_in.items()}], float_dtype=torch.float64)
        denv = interp.run_bundle(dist, [{k: _clone(v) for k, v in d.items()} for d in dist_in],
                                 float_dtype=torch.float64)
        out.append(Draw(interp.named_values(seq, senv)[0], dist_in, interp.named_values(dist, denv)))
    return out


def _draw_spec(seq: G.Bundle, dist: G.Bundle, spec):
    """The spec with a relation for every G_s input it leaves out whose ranks' shapes differ from
    G_s's (a joint graph's tangents under a forward spec): shard along the one differing dim, as
    the checker infers it.  Inputs of equal shapes stay replicated (distribute_inputs' default)."""
    inputs = dict(spec.inputs)
    g0 = dist.ranks[0]
    for p in seq.ranks[0].inputs:
        if p.name in inputs or g0.input_node(p.name) is None:
            continue
        a, b = tensor_meta(seq.ranks[0].node(p.node)), tensor_meta(g0.input_node(p.name))
        if a is None or b is None or len(a.shape) != len(b.shape):
            continue
        diff = [d for d in range(len(a.shape)) if a.shape[d] != b.shape[d]]
        if len(diff) == 1:
            inputs[p.name] = S.Relation(placements=(S.Shard(diff[0]),))
    return copy.copy(spec) if inputs == spec.inputs else _with_inputs(spec, inputs)


def _with_inputs(spec, inputs):
    s = copy.copy(spec)
    s.inputs = inputs
    return s


def _close(a, b) -> bool:
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return a == b
    if a.shape != b.shape:
        return False
    if a.is_floating_point() or b.is_floating_point():
        return torch.allclose(a.double(), b.double(), rtol=1e-6, atol=1e-8, equal_nan=True)
    return torch.equal(a, b)


def _checked_outputs(seq: G.Bundle, spec) -> list[str]:
    names = [p.name for p in seq.ranks[0].outputs]
    return [c for c in (spec.check or names)]


def _leaf_value(leaf: str, values: list, port_of: list | None):
    """Value of the G_d leaf 'r<rank>.<node>'; with ``port_of`` the node is read through the port
    naming it in the original program (a mutant may have renamed the node behind a port)."""
    rank, node = leaf[1:].split(".", 1)
    r = int(rank)
    name = port_of[r].get(node, node) if port_of else node
    return values[r][name]


def eval_certificate(sexpr: str, values: list, port_of: list | None = None):
    """Evaluate a certificate (s-expression over ``(Gd "r<rank>.<node>")`` leaves) with torch."""

    def subst(e):
        if isinstance(e, tuple):
            if len(e) == 2 and isinstance(e[0], T.Var) and e[0].name == "Gd":
                return _leaf_value(e[1], values, port_of)
            return tuple(subst(x) for x in e)
        return e
    return T.evaluate(subst(T.parse_sexpr(sexpr)), {})


def _port_maps(dist: G.Bundle, values: list | None = None, certificates: dict | None = None) -> list[dict]:
    """Per rank: node -> the port that names it.  A certificate leaf that is no port's node (a
    collective whose wait_tensor is the output) maps to the output port holding the same value."""
    maps = [{p.node: p.name for p in g.inputs + g.outputs} for g in dist.ranks]
    if values is None or not certificates:
        return maps

    def leaves(e):
        if isinstance(e, tuple):
            if len(e) == 2 and isinstance(e[0], T.Var) and e[0].name == "Gd":
                yield e[1]
            else:
                for x in e:
                    yield from leaves(x)
    for cert in certificates.values():
        for leaf in leaves(T.parse_sexpr(cert)):
            r, node = int(leaf[1:].split(".", 1)[0]), leaf.split(".", 1)[1]
            if node in maps[r] or node not in values[r]:
                continue
            v = values[r][node]
            for p in dist.ranks[r].outputs:
                w = values[r].get(p.name)
                if isinstance(v, torch.Tensor) and isinstance(w, torch.Tensor) and v.shape == w.shape \
                        and torch.equal(v, w):
                    maps[r][node] = p.name
                    break
    return maps


def relations_hold(seq: G.Bundle, dist: G.Bundle, spec, draw_seq: dict, values: list,
                   certificates: dict, port_of: list | None) -> tuple[bool, str]:
    """Do the certificates and the spec's [expect] relations hold on ``values`` (per-rank named
    values)?  Returns (ok, reason of the first that does not)."""
    for out, cert in certificates.items():
        want = draw_seq.get(out)
        try:
            got = eval_certificate(cert, values, port_of)
        except Exception as e:    # a leaf the mutant lacks, a shape that no longer fits...
            return False, f"certificate of {out} does not evaluate: {type(e).__name__}: {str(e)[:120]}"
        if not _close(want, got):
            return False, f"certificate of {out} differs"
    for name, rel in spec.expect.items():
        want = draw_seq.get(name)
        if want is None:
            return False, f"[expect] {name}: no G_s value"
        try:
            terms = S.relation_terms(rel, name, dist.world_size, spec.mesh, getattr(want, "ndim", None))
            for t in terms:
                if not _close(want, placement.eval_term(t, values)):
                    return False, f"[expect] {name} = {rel} does not hold"
        except Exception as e:
            return False, f"[expect] {name}: {type(e).__name__}: {str(e)[:120]}"
    return True, ""


def label(seq: G.Bundle, orig: G.Bundle, spec, mutant: G.Bundle, dws: list[Draw],
          certificates: dict | None) -> tuple[str, str]:
    """(label, reason).  A mutant is equivalent iff on every draw the relations the original
    program satisfies hold for it: the original's certificates (read through the output ports)
    and the [expect] relations; without certificates (the original does not refine), iff every
    rank's every output equals the original's.  A mutant the interpreter cannot run is invalid."""

    port_of = _port_maps(orig, dws[0].orig_values if dws else None, certificates)
    for d in dws:
        try:
            env = interp.run_bundle(mutant, [{k: _clone(v) for k, v in x.items()} for x in d.dist_inputs],
                                    float_dtype=torch.float64)
        except Exception as e:
            return INVALID, f"{type(e).__name__}: {str(e)[:200]}"
        values = interp.named_values(mutant, env)
        if certificates:
            ok, why = relations_hold(seq, orig, spec, d.seq_values, values, certificates, port_of)
            if not ok:
                return NON_EQUIVALENT, why
        else:
            for r, g in enumerate(orig.ranks):
                for p in g.outputs:
                    if p.name not in values[r] or not _close(d.orig_values[r][p.name], values[r][p.name]):
                        return NON_EQUIVALENT, f"r{r}.{p.name} differs from the original's"
            ok, why = relations_hold(seq, orig, spec, d.seq_values, values, {}, None)
            if not ok:
                return NON_EQUIVALENT, why
    return EQUIVALENT, ""
