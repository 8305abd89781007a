"""Confirm every corpus label on real gloo ranks (forward AND joint), extending
tests/corpus/soundness/run_gloo.py (imported for its helpers, not edited):

* any world size (one spawn per world size: 2 and 4) and N-D meshes (``shard(d)@tp`` placements,
  read with entangle's own spec parser);
* joint mode: seq and every rank run forward + backward with tangents derived through the spec's
  ``tangent:*`` relations; ``grad:<param>`` / ``grad:input:<name>`` outputs are compared through
  their ``[expect]`` relations like ``out``;
* integer / bool inputs and buffers keep the values ``build(0, 1)`` gives (token ids, masks, RoPE
  tables) and are split through the relations like everything else; float ones are random float64;
* an input whose relation is an explicit term (interleaved fused weights), or a buffer no graph
  reads (so no spec can name it), is derived by the script's ``GLOO_DERIVE = {port: fn(seq_tensor,
  rank, world_size)}``;
* ``F.dropout`` is replaced (in seq and on every rank) by its deterministic part, x / (1 - p)
  in training, so that a program with the wrong ``p`` is told apart;
* a script naming ``GLOO_PEER_DELAY`` (seconds) has its ranks other than 0 start that late, so
  that rank 0 reads a tensor an unfinished collective writes (``async_op=True``) before it can
  finish: the outcome a slow peer gives.

Each checked output: every rank's tensor must equal the seq output as derived through the expected
relation for that rank (replicate: all of it, shard(d)[@g]: its chunk); partial: the ranks' sum
must (float64, rtol = atol = 1e-9, or the script's ``GLOO_TOL``).  ``python tests/corpus/programs/run_gloo.py [ID...]``.
"""
from __future__ import annotations

import functools
import os
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from soundness import gloo_ranks  # noqa: E402
from soundness.run_gloo import _materialise, named_outputs  # noqa: E402
from soundness.run_gloo import _ports as _raw_ports  # noqa: E402

from entangle_py.check import spec as S  # noqa: E402
from entangle_py.frontend.capture_target import load_script  # noqa: E402  (an entry's script is a target)

TOL = 1e-9


def _setting(mod, name, default):
    """A program's GLOO_* setting: its builder's own (``prog.GLOO_DERIVE = ...`` beside the builder
    a family module names), else its module's."""
    return getattr(mod.build, name, getattr(mod, name, default))


def _dropout(x, p=0.5, training=True, inplace=False):
    return x / (1 - p) if training else x


def _patch():
    F.dropout = _dropout


def read_spec(path):
    from entangle_py.check.spec import load_spec
    spec = load_spec(path)
    return spec


def _derive(v, rel, rank, ws, mesh, fn=None):
    """rank's part of seq tensor v under relation rel (placements)."""
    if fn is not None:
        return fn(v, rank, ws).clone()
    if isinstance(rel.term, S.Leaf):      # one rank holds it whole (a pipeline stage's tensor)
        return v.clone() if rel.term.rank == rank else None
    if rel.term is not None:
        raise ValueError(f"relation {rel} needs GLOO_DERIVE")
    coords = mesh.coords(rank) if mesh.shape else (rank,)
    names = list(mesh.names) if mesh.shape else [None]
    sizes = list(mesh.shape) if mesh.shape else [ws]
    out = v
    for p in rel.placements:
        kind = type(p).__name__
        i = names.index(p.group) if p.group is not None else 0
        if kind == "Shard":
            out = torch.chunk(out, sizes[i], dim=p.dim)[coords[i]]
        elif kind == "Partial":
            # a random split that sums to v (every call draws the same parts): the ranks' shares
            # of a tangent whose output every rank computes whole (adv3_cat_joint.toml)
            if len(rel.placements) != 1 or mesh.shape or p.reduce != "sum":
                raise ValueError(f"partial input {rel}: only a plain sum over the ranks is derived")
            g = torch.Generator().manual_seed(1729)
            parts = [torch.randn(tuple(out.shape), generator=g, dtype=out.dtype) for _ in range(ws - 1)]
            out = parts[rank] if rank < ws - 1 else out - sum(parts, torch.zeros_like(out))
    return out.clone()


def _ddp_name(model):
    """fqn -> port fqn of a model holding DistributedDataParallel wrappers: the ``module.`` each adds
    dropped, as the spec names them (the sequential program runs the wrapped module itself)."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    from entangle_py.frontend.ddp import renamer_for_wrappers
    return renamer_for_wrappers(p for p, m in model.named_modules() if isinstance(m, DDP))


def _ports(model, inputs):
    name = _ddp_name(model)
    return {(k.split(":", 1)[0] + ":" + name(k.split(":", 1)[1]) if k.startswith(("param:", "buffer:")) else k): v
            for k, v in _raw_ports(model, inputs).items()}


def _case(entry, seed):
    torch.manual_seed(seed)
    mod = load_script(entry.script)
    spec = read_spec(entry.spec)
    fns = _setting(mod, "GLOO_DERIVE", {})
    g = torch.Generator().manual_seed(seed)
    model, inputs = mod.build(0, 1)
    model = model.to(torch.float64)
    joint = entry.mode == "joint"
    values = {}
    with torch.no_grad():
        for port, t in _ports(model, inputs).items():
            if t.is_floating_point() and not port.startswith("buffer:"):
                values[port] = torch.randn(tuple(t.shape), generator=g, dtype=torch.float64)
            else:
                values[port] = t.detach().clone()
        for n, p in model.named_parameters():
            p.copy_(values[f"param:{n}"])
    grad_inputs = {k for k, t in inputs.items() if getattr(t, "requires_grad", False)} if joint else set()
    res, tangents = _run(model, inputs, values, grad_inputs, joint, None)
    if joint:   # tangents drawn here, used by _run via closure? no: recompute with the drawn ones
        tangents = {o: torch.randn(tuple(t.shape), generator=g, dtype=torch.float64) for o, t in tangents.items()}
        res, _ = _run(model, inputs, values, grad_inputs, joint, tangents)
    ws = entry.world_size
    per_rank = []
    for r in range(ws):
        given = {}
        for port, v in list(values.items()) + [(f"tangent:{o}", t) for o, t in (tangents or {}).items()]:
            if port not in spec.inputs and port in fns:   # a tensor no graph reads (so no spec names it)
                given[port] = fns[port](v, r, ws).clone()
                continue
            if port not in spec.inputs:     # a DTensor's part comes from its placements (_run_rank)
                given[port] = _FromPlacements(v)
                continue
            part = _derive(v, spec.inputs[port], r, ws, spec.mesh, fns.get(port))
            if part is not None:
                given[port] = part
        per_rank.append(given)
    expect = {o: spec.expect[o] for o in (spec.check or spec.expect)}
    return res, per_rank, expect, grad_inputs


def _run(model, inputs, values, grad_inputs, joint, tangents):
    """Forward (and backward with ``tangents``); returns ({output: tensor}, {output: tensor})."""
    for p in model.parameters():
        p.grad = None
    args = {}
    for k in inputs:
        v = values[f"input:{k}"].clone()
        if k in grad_inputs:
            v.requires_grad_(True)
        args[k] = v
    with torch.set_grad_enabled(joint):
        out = named_outputs(model(**args))
    res = {k: _materialise(_local(v)) for k, v in out.items()}   # a DTensor output: its local part, as captured
    if not joint:
        return res, None
    # an output no gradient flows from (top-k's indices, an integer tensor) has no tangent
    diff = [o for o in out if isinstance(out[o], torch.Tensor) and out[o].requires_grad]
    if tangents is None:
        return res, {o: res[o] for o in diff}
    # a rank's output whose tangent the spec does not give (a pipeline stage's handle, the spec
    # naming the last stage's): NaN, so that a gradient reading it shows
    torch.autograd.backward([out[o] for o in diff],
                            [_tangent(out[o], tangents[o], f"tangent:{o}") if o in tangents
                             else torch.full_like(out[o], float("nan")) for o in diff])
    name = _ddp_name(model)
    for n, p in model.named_parameters():
        if p.grad is not None:
            res[f"grad:{name(n)}"] = _materialise(_local(p.grad))    # a DTensor parameter's: its local part
    for k in grad_inputs:
        if args[k].grad is not None:
            res[f"grad:input:{k}"] = _materialise(args[k].grad)
    return res, None


class _FromPlacements:
    """A seq tensor the spec gives no relation for: the rank's DTensor parameter of that name gets
    its part by the DTensor's own placements (as parallelize_module / distribute_tensor lays it
    out: torch.chunk along a sharded dim), independently of the checker's reading of them."""

    def __init__(self, value):
        self.value = value

    def part(self, t, rank, ws, port):
        from torch.distributed.tensor import DTensor, Replicate, Shard
        if not isinstance(t, DTensor):
            raise ValueError(f"spec has no relation for {port}, which is not a DTensor")
        if t.device_mesh.ndim != 1:
            raise ValueError(f"{port}: a DTensor on a {t.device_mesh.ndim}-D mesh")
        (p,) = t.placements
        if isinstance(p, Shard):
            return torch.chunk(self.value, ws, dim=p.dim)[rank].clone()
        if isinstance(p, Replicate):
            return self.value.clone()
        raise ValueError(f"{port}: placement {p} is not derived here")


def _tangent(out, t, port):
    """A DTensor output's tangent the spec gives no relation for: a DTensor laid out as the output,
    its local part by the output's placements."""
    if not isinstance(t, _FromPlacements):
        return t
    from torch.distributed.tensor import DTensor
    mesh = out.device_mesh
    return DTensor.from_local(t.part(out, mesh.get_local_rank(), mesh.size(), port), mesh, out.placements)


def _local(t):
    from torch.distributed.tensor import DTensor
    return t._local_tensor if isinstance(t, DTensor) else t


def _run_rank(entry, rank, given, grad_inputs):
    mod = load_script(entry.script)
    model, inputs = mod.build(rank, entry.world_size)
    from torch.nn.parallel import DistributedDataParallel as DDP
    if any(isinstance(m, DDP) for m in model.modules()):
        # DDP's reducer keeps the dtype the parameters had when it was built: a model cast to
        # float64 afterwards is never averaged.  Build it again in float64 (every rank does).
        old = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            model, inputs = mod.build(rank, entry.world_size)
        finally:
            torch.set_default_dtype(old)
    model = model.to(torch.float64)
    given = dict(given)
    with torch.no_grad():
        for port, t in _ports(model, inputs).items():
            if port not in given and port.startswith(("input:", "param:")):
                # an input the relation gives another rank (a pipeline's batch enters at stage 0),
                # or a parameter of that name the spec relates to another rank's: NaN, so that a
                # rank reading it shows
                given[port] = torch.full(tuple(t.shape), float("nan"), dtype=torch.float64) \
                    if t.is_floating_point() else torch.zeros(tuple(t.shape), dtype=t.dtype)
            v = given[port]
            if isinstance(v, _FromPlacements):
                v = given[port] = v.part(t, rank, entry.world_size, port)
            t = _local(t)
            if tuple(t.shape) != tuple(v.shape):
                raise ValueError(f"rank {rank} {port}: build() gives {tuple(t.shape)}, the relation {tuple(v.shape)}")
            if port.startswith(("param:", "buffer:")):
                t.copy_(v)
    values = {k: v for k, v in given.items()}
    joint = entry.mode == "joint"
    tangents = {k[len("tangent:"):]: v for k, v in given.items() if k.startswith("tangent:")} if joint else None
    if rank > 0:
        # a script whose collective may be read unfinished (async_op=True, read before wait())
        # names a delay: its peers start late, so rank 0 reads before the collective can finish
        time.sleep(_setting(mod, "GLOO_PEER_DELAY", 0))
    res, _ = _run(model, inputs, values, grad_inputs, joint, tangents)
    return res


def _worker(rank, ws, port, out_dir, payload):
    _patch()
    gloo_ranks.init(rank, ws, port, timeout_s=60)
    entries, inputs = torch.load(payload, weights_only=False)
    gloo_ranks.run_each(out_dir, rank, entries, lambda e: e.id,
                        lambda e: _run_rank(e, rank, inputs[e.id][0][rank], inputs[e.id][1]))


def _compare(seq, outs, rel, mesh, ws, name=None, tol=None):
    tol = TOL if tol is None else tol
    if any(not isinstance(o, torch.Tensor) for o in outs):
        return False, "no tensor"
    if isinstance(rel.term, S.Leaf) and not 0 <= rel.term.rank < ws:
        return False, f"no rank {rel.term.rank}"
    partial = [p for p in rel.placements if type(p).__name__ == "Partial"] if rel.term is None else []
    if partial:
        if any(o.shape != seq.shape for o in outs):
            return False, "shapes differ"
        reduce = partial[0].reduce     # the ranks' sum, their max, or their mean (partial(avg))
        s = functools.reduce(torch.maximum, outs) if reduce == "max" else sum(outs) / (len(outs) if reduce == "avg" else 1)
        return torch.allclose(s, seq, rtol=tol, atol=tol), f"partial({reduce})"
    if isinstance(rel.term, S.Call):   # an explicit term over the ranks' outputs: evaluated on them
        from entangle_py.oracle.placement import eval_term
        got = eval_term(rel.term, [{name: o} for o in outs])
        if got.shape != seq.shape:
            return False, f"term: shape {tuple(got.shape)} vs {tuple(seq.shape)}"
        return torch.allclose(got, seq, rtol=tol, atol=tol), "term"
    for r, o in enumerate(outs):
        want = _derive(seq, rel, r, ws, mesh)
        if want is None:          # the relation names another rank's output
            continue
        if o.shape != want.shape:
            return False, f"rank {r}: shape {tuple(o.shape)} vs {tuple(want.shape)}"
        if not torch.allclose(o, want, rtol=tol, atol=tol):
            return False, f"rank {r}: max |diff| {(o - want).abs().nan_to_num(float('inf')).max().item():.3g}"
    return True, "matches"


def run(entries=None, seed=0, verbose=True) -> dict:
    """Run ``entries`` (default: the whole corpus); return {id: {label, gloo, detail}}."""
    if entries is None:
        sys.path.insert(0, str(HERE))
        from corpus import CORPUS as entries  # noqa: N811
    entries = list(entries)
    import torch.nn.functional as Fmod
    saved = Fmod.dropout
    prev = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    seq, inputs, expects, tols = {}, {}, {}, {}
    try:
        _patch()
        torch.use_deterministic_algorithms(True, warn_only=True)
        for e in entries:
            res, per_rank, expect, grad_inputs = _case(e, seed)
            seq[e.id], inputs[e.id], expects[e.id] = res, (per_rank, grad_inputs), (expect, read_spec(e.spec).mesh)
            # a script computing in float32 on purpose (Hugging Face's router softmax, dtype=torch.float)
            # names a looser tolerance: its sums over ranks round in another order than the sequential ones
            tols[e.id] = _setting(load_script(e.script), "GLOO_TOL", TOL)
    finally:
        Fmod.dropout = saved
        torch.use_deterministic_algorithms(prev[0], warn_only=prev[1])
    def spawn_batch(todo):
        with tempfile.TemporaryDirectory() as tmp:
            payload = os.path.join(tmp, "payload.pt")
            torch.save((todo, {e.id: inputs[e.id] for e in todo}), payload)
            return gloo_ranks.spawn(_worker, todo[0].world_size, (payload,))
    runs = {}
    for ws in sorted({e.world_size for e in entries}):
        runs.update(gloo_ranks.run_all([e for e in entries if e.world_size == ws], lambda e: e.id, spawn_batch))
    report = {}
    for e in entries:
        res = runs[e.id]
        errs = [f"rank {r}: {x['error']}" for r, x in enumerate(res) if "error" in x]
        if errs:
            verdict, detail = "buggy", "; ".join(errs)
        else:
            expect, mesh = expects[e.id]
            verdict, notes = "correct", []
            for o, rel in expect.items():
                # a rank-held output (a pipeline stage's gradient): only that rank has it
                held = rel.term.rank if isinstance(rel.term, S.Leaf) and 0 <= rel.term.rank < e.world_size else None
                if o not in seq[e.id] or any(o not in x for r, x in enumerate(res) if held in (None, r)):
                    verdict = "buggy"
                    notes.append(f"{o}: missing")
                    continue
                outs = [x[o] if held in (None, r) else res[held][o] for r, x in enumerate(res)]
                ok, why = _compare(seq[e.id][o], outs, rel, mesh, e.world_size, o, tols[e.id])
                if not ok:
                    verdict = "buggy"
                    notes.append(f"{o}: {why}")
            detail = "; ".join(notes) or "all outputs match"
        report[e.id] = {"label": e.label, "gloo": verdict, "detail": detail}
    if verbose:
        w = max(len(n) for n in report)
        for n, r in report.items():
            flag = "" if r["label"] == r["gloo"] else "  <-- MISLABELLED"
            print(f"{n:<{w}}  {r['label']:<7}  {r['gloo']:<7}  {r['detail']}{flag}")
    return report


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    from corpus import BY_ID, CORPUS
    picked = [BY_ID[n] for n in sys.argv[1:]] if len(sys.argv) > 1 else CORPUS
    rep = run(picked)
    sys.exit(0 if all(r["label"] == r["gloo"] for r in rep.values()) else 1)
