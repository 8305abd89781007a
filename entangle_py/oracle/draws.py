"""Random draws in the numeric oracle: every draw sampled from a PRNG keyed by where it comes
from, never from the values it is applied to (check/random.py is the checker's side).

* A rank's draw: keyed by its position in its rank's stream when the bundle records the streams
  (identical positions give identical samples, any other two are independent; a stream nothing is
  known of -- a rank that never seeds -- is the rank's own), else -- no evidence -- by the replica class ``same_rng`` put it
  in, or by itself when it is coupled with nothing.
* A sequential draw: the value of its coupling's term over the ranks' samples when it has one
  (computed by the caller), else a sample of its own.

So the re-check runs the programs with draws the way the evidence says the ranks make them: a
replica the checker wrongly assumed, or a coupling that needs two draws to be equal, disagrees.
"""
from __future__ import annotations

import hashlib

from entangle_py.lazy import torch
from entangle_py.check import random as R
from entangle_py.ir import graph as G
from entangle_py.ir import bundle_meta
from entangle_py.ir import ops


def rank_keys(checker) -> dict:
    """{(rank, node): the key of the stream position its draw comes from}."""
    streams = bundle_meta.rng_streams(checker.dist)
    classes = {}
    for c in checker.draws.couplings:
        for i, cls in enumerate(c.classes):
            for s in cls:
                classes[(s.graph, s.node)] = ("class", c.seq.key, i)
    out = {}
    for r, g in enumerate(checker.dist.ranks):
        found, sigs = R.sites(g, r, lambda size: size)
        for s in found:
            if streams is None:
                out[(r, s.node)] = classes.get((r, s.node), ("own", r, s.node))
                continue
            p = R.position(streams[r], sigs, s)
            out[(r, s.node)] = ("unknown", r, s.node) if p.unknown else ("stream", p.seed, p.state, p.before, p.own)
    return out


def sample(node: G.Node, like: torch.Tensor, key, seed: int) -> torch.Tensor:
    """The draw of random op ``node``, shaped and typed like ``like`` (what the op itself gives),
    from a generator seeded by ``key`` and the oracle's ``seed``."""
    d = ops.RANDOM_DRAWS[node.target]
    gen = torch.Generator().manual_seed(int.from_bytes(hashlib.sha256(repr((seed, key)).encode()).digest()[:8], "little"))
    params = {name: node.args[i] if len(node.args) > i else node.kwargs.get(name, default)
              for name, i, default in d.params}
    shape, dtype = tuple(like.shape), like.dtype
    if d.kind == "keep":
        return torch.rand(shape, generator=gen, dtype=torch.float64) > float(params["p"])
    if d.kind == "bernoulli":
        return (torch.rand(shape, generator=gen, dtype=torch.float64) < float(params["p"])).to(dtype)
    if d.kind == "uniform":
        lo, hi = float(params.get("from", 0.0)), float(params.get("to", 1.0))
        return (lo + (hi - lo) * torch.rand(shape, generator=gen, dtype=torch.float64)).to(dtype)
    if d.kind == "normal":
        return torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype)
    if d.kind == "integers":
        lo = int(params.get("low") or 0)
        return torch.randint(lo, int(params["high"]), shape, generator=gen, dtype=torch.int64).to(dtype)
    if d.kind == "permutation":
        return torch.randperm(int(params["n"]), generator=gen, dtype=torch.int64).to(dtype)
    raise ValueError(f"no sampler for {node.target} ({d.kind})")


def with_draw(node: G.Node, out, drawn: torch.Tensor, args):
    """What the op returns when it draws ``drawn``: dropout's (x * mask * scale, mask), else the draw."""
    if node.target == ops.DROPOUT:
        x, p = args[0], float(args[1])
        return x * drawn * (1 / (1 - p)), drawn
    return drawn
