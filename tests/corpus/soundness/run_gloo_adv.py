"""Confirm the adversary table's labels (adversary.py) on real gloo ranks: 2 or 4 CPU processes.

What a label means: the program is *correct* when, for inputs drawn as its spec's input relation
says, every checked output of the distributed program equals the sequential one through its
``[expect]`` relation, and the state either program leaves (parameters, buffers, the caller's input
tensors, plain tensor attributes of its modules) keeps the relation it had before the call
(float64, rtol = atol = 1e-9); an exception on a rank is *wrong*.  The relation used is the
attempt's ``truth`` spec (default: the spec checked): an attempt whose checked spec leaves an
input to inference or to a DTensor placement writes it out there.

Relations are read with entangle's spec parser (syntax only) and given their meaning here, on
torch, independently of the checker:

* a placement (``shard(d)``, ``replicate``, ``partial``, ``partial(max)``, ``@<mesh dim>`` on an
  N-D mesh, row-major like DeviceMesh): a sequential input is drawn and split -- a shard is
  ``torch.chunk`` along d over that mesh dim, nested in mesh-dim order; ``partial`` random shares
  that add up to it (``partial(avg)``: shares whose mean it is); ``partial(max)`` shares no larger than it, one of which holds each element;
* an explicit term (``concat``, ``sum``, ``max``, ``slice`` with Python's bounds, ``transpose``,
  ``permute``, ``reshape``, ``neg`` over ``rK.name``): the ranks' tensors it names are drawn and the
  sequential input is the term evaluated on them; a rank tensor it does not name is drawn apart;
* an expectation is the same relation read the other way: each rank's output must be its part of
  the sequential one (a partial mesh dim: the ranks' sum / max along it), or the term over the
  ranks' outputs must equal it.  An output with no ``[expect]`` must match under some relation
  (replicate, partial, shard(d)), as in run_gloo.py.

Float inputs and parameters are random float64; integer ones keep the values ``build(0, 1)`` gives
(token ids).  A script may set ``GLOO_CONSTANTS = {name: value}`` (module constants changed before
every build: a size the capture leaves symbolic) and ``GLOO_RANK_CONSTANTS = {rank: {name: value}}``
(one rank's own), and ``GLOO_ALONE = True`` to run in a spawn of its own (a collective whose sizes
differ across ranks aborts the gloo process: its label is then *wrong*).  ``python tests/corpus/soundness/run_gloo_adv.py [NAME...]``.
"""
from __future__ import annotations

import os
import sys
import tempfile
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # examples/
sys.path.insert(0, str(Path(__file__).resolve().parent / "adversary"))   # the programs' shared modules
from soundness import gloo_ranks  # noqa: E402
from soundness.run_gloo import _materialise, _ports, load_script, named_outputs, print_labels  # noqa: E402

from entangle_py.check import spec as S  # noqa: E402

TOL = 1e-9


# ----------------------------------------------------------------------------- relations on torch

def mesh_of(spec: S.Spec, ws: int) -> S.Mesh:
    return spec.mesh if spec.mesh.shape else S.Mesh((ws,), ("_all",))


def _dims(rel: S.Relation, mesh: S.Mesh) -> list:
    """(mesh dim index, placement) in mesh-dim order."""
    out = []
    for p in rel.placements:
        g = p.group if p.group is not None else mesh.names[0]
        out.append((mesh.names.index(g), p))
    return sorted(out, key=lambda x: x[0])


def shard_part(v: torch.Tensor, rel: S.Relation, mesh: S.Mesh, rank: int) -> torch.Tensor:
    """Rank ``rank``'s part of ``v`` under the relation's shards (replicas and partials keep it)."""
    coords = mesh.coords(rank)
    for i, p in _dims(rel, mesh):
        if isinstance(p, S.Shard):
            v = torch.chunk(v, mesh.shape[i], dim=p.dim)[coords[i]]
    return v


def split(v: torch.Tensor, rel: S.Relation, mesh: S.Mesh, g: torch.Generator) -> list:
    """Every rank's tensor of a sequential input ``v`` under a placement relation."""
    ws = 1
    for s in mesh.shape:
        ws *= s
    parts = [shard_part(v, rel, mesh, r).clone() for r in range(ws)]
    for i, p in _dims(rel, mesh):
        if not isinstance(p, S.Partial):
            continue
        groups: dict = {}
        for r in range(ws):
            c = list(mesh.coords(r))
            c[i] = None
            groups.setdefault(tuple(c), []).append(r)
        for members in groups.values():
            whole = parts[members[0]]
            n = len(members)
            if p.reduce in ("sum", "avg"):     # avg: n times shares that add up to it
                noise = [torch.randn(whole.shape, generator=g, dtype=whole.dtype) for _ in range(n - 1)]
                shares = [whole - sum(noise, torch.zeros_like(whole))] + noise
                shares = [s * n for s in shares] if p.reduce == "avg" else shares
            else:      # max: every share at most the value, one of them equal to it per element
                holder = torch.randint(0, n, whole.shape, generator=g)
                shares = [torch.where(holder == k, whole,
                                      whole - torch.rand(whole.shape, generator=g, dtype=whole.dtype) - 0.1)
                          for k in range(n)]
            for k, r in enumerate(members):
                parts[r] = shares[k]
    return parts


def leaves(t):
    if isinstance(t, S.Leaf):
        yield t
    else:
        for a in t.args:
            yield from leaves(a)


def evaluate(t, value_of) -> torch.Tensor:
    """The term ``t`` on torch, ``value_of(rank, name)`` giving each leaf."""
    if isinstance(t, S.Leaf):
        return value_of(t.rank, t.name)
    args = [evaluate(a, value_of) for a in t.args]
    a = dict(t.attrs)
    if t.op == "concat":
        return torch.cat(args, dim=a.get("dim", 0))
    if t.op in ("sum", "mean"):
        return sum(args[1:], args[0]) / (len(args) if t.op == "mean" else 1)
    if t.op == "max":
        out = args[0]
        for x in args[1:]:
            out = torch.maximum(out, x)
        return out
    (x,) = args
    if t.op == "slice":
        d = a.get("dim", 0)
        index = [slice(None)] * x.dim()
        index[d] = slice(a.get("start"), a.get("end"), a.get("step"))
        return x[tuple(index)]
    if t.op == "transpose":
        d0, d1 = a["dims"] if "dims" in a else (a.get("dim0", 0), a.get("dim1", 1))
        return x.transpose(d0, d1)
    if t.op == "permute":
        return x.permute(*a["dims"])
    if t.op == "reshape":
        return x.reshape(*a["shape"])
    if t.op == "neg":
        return -x
    raise ValueError(f"operator {t.op} in {t}")


def matches(seq, values: list, rel, mesh: S.Mesh, name: str) -> tuple[bool, str]:
    """Whether the ranks' tensors ``values`` (None where a rank has none) relate to ``seq`` as
    ``rel`` says (None: some relation, as run_gloo.py's ``_match_any``)."""
    if rel is None:
        for cand in ["replicate", "partial", "partial(avg)"] + [f"shard({d})" for d in range(seq.dim())]:
            ok, _ = matches(seq, values, S.parse_relation(cand, "", S.Mesh()), mesh, name)
            if ok:
                return True, f"matches as {cand}"
        return False, "no relation (replicate, partial, partial(avg), shard(d)) matches"
    if rel.term is not None:
        try:
            got = evaluate(rel.term, lambda r, n: values[r] if n == name else None)
        except Exception as ex:  # noqa: BLE001 - a term over tensors the ranks do not have
            return False, f"term: {type(ex).__name__}: {ex}"
        return _close(got, seq, "term")
    if any(v is None for v in values):
        return False, "a rank has no such tensor"
    ws = len(values)
    partial = [(i, p) for i, p in _dims(rel, mesh) if isinstance(p, S.Partial)]
    groups: dict = {}
    for r in range(ws):
        c = list(mesh.coords(r))
        for i, _ in partial:
            c[i] = None
        groups.setdefault(tuple(c), []).append(r)
    for members in groups.values():
        got = [values[r] for r in members]
        if partial:
            if any(x.shape != got[0].shape for x in got):
                return False, "the partial shares' shapes differ"
            combined = got[0]
            for x in got[1:]:
                combined = torch.maximum(combined, x) if partial[0][1].reduce == "max" else combined + x
            got = [combined / len(got) if partial[0][1].reduce == "avg" else combined]
        want = shard_part(seq, rel, mesh, members[0])
        for x in got:
            ok, why = _close(x, want, f"ranks {members}")
            if not ok:
                return ok, why
    return True, "matches"


def _close(got, want, where) -> tuple[bool, str]:
    if not isinstance(got, torch.Tensor):
        return False, f"{where}: no tensor"
    if got.shape != want.shape:
        return False, f"{where}: shape {tuple(got.shape)} vs {tuple(want.shape)}"
    if got.dtype != want.dtype:
        got, want = got.double(), want.double()
    if not torch.allclose(got, want, rtol=TOL, atol=TOL):
        return False, f"{where}: max |diff| {(got - want).abs().nan_to_num(float('inf')).max().item():.3g}"
    return True, "matches"


# ----------------------------------------------------------------------------- programs

_DEFAULTS: dict = {}     # script -> the module constants a rank's GLOO_RANK_CONSTANTS change


def _script(entry, rank=None):
    """The script's module with its GLOO_CONSTANTS, and rank ``rank``'s own (another rank's undone:
    the module is loaded once per process)."""
    mod = load_script(entry.script)
    own = getattr(mod, "GLOO_RANK_CONSTANTS", {})
    defaults = _DEFAULTS.setdefault(entry.script, {k: getattr(mod, k) for c in own.values() for k in c})
    for k, v in {**defaults, **getattr(mod, "GLOO_CONSTANTS", {}), **own.get(rank, {})}.items():
        setattr(mod, k, v)
    return mod


def _local(t):
    from torch.distributed.tensor import DTensor
    return t._local_tensor if isinstance(t, DTensor) else t


def _attrs(model) -> dict:
    """Plain tensor attributes of the model's modules (state the next call reads, like a buffer)."""
    out = {}
    for path, m in model.named_modules():
        for k, v in vars(m).items():
            if isinstance(v, torch.Tensor) and not isinstance(v, torch.nn.Parameter):
                out[f"attr:{path + '.' if path else ''}{k}"] = v
    return out


def _run(model, inputs: dict, given: dict) -> dict:
    """The model with ``given`` parameters, buffers and inputs: its outputs, and the state after
    the call as ``state:<port>``."""
    with torch.no_grad():
        ports = _ports(model, inputs)
        for port, t in ports.items():
            if port.startswith(("param:", "buffer:")):
                v = given[port]
                if tuple(_local(t).shape) != tuple(v.shape):
                    raise ValueError(f"{port}: build() gives {tuple(_local(t).shape)}, the relation {tuple(v.shape)}")
                _local(t).copy_(v)
        args = {k: given[f"input:{k}"].clone() for k in inputs}
        for k, v in args.items():
            if tuple(inputs[k].shape) != tuple(v.shape):
                raise ValueError(f"input:{k}: build() gives {tuple(inputs[k].shape)}, the relation {tuple(v.shape)}")
        out = named_outputs(model(**args))
        res = {k: _materialise(v) for k, v in out.items()}
        after = {p: _local(t) for p, t in _ports(model, {}).items()}
        after.update({f"input:{k}": v for k, v in args.items()})
        after.update(_attrs(model))
        res.update({f"state:{p}": _materialise(v) for p, v in after.items()})
    return res


def _case(entry, seed):
    """(seq results, every rank's given values) for one attempt."""
    torch.use_deterministic_algorithms(True, warn_only=True)     # empty() is NaN: never right by accident
    torch.manual_seed(seed)      # integer inputs are what build() draws: the same on every run
    g = torch.Generator().manual_seed(seed)
    spec = S.load_spec(entry.truth)
    ws, mesh = entry.world_size, mesh_of(spec, entry.world_size)
    model, inputs = _script(entry).build(0, 1)
    model = model.to(torch.float64)
    values = {}
    for port, t in _ports(model, inputs).items():
        t = _local(t)
        values[port] = (torch.randn(tuple(t.shape), generator=g, dtype=torch.float64) if t.is_floating_point()
                        else t.detach().clone())
    given = [dict() for _ in range(ws)]
    for port, v in values.items():
        rel = spec.inputs.get(port, S.Relation(placements=(S.Replicate(),)))
        if rel.term is None:
            for r, part in enumerate(split(v, rel, mesh, g)):
                given[r][port] = part
            continue
        drawn = {}

        def leaf(r, name, port=port):
            if (r, name) not in drawn:
                shape = _rank_shape(entry, r, name)
                drawn[(r, name)] = (torch.randn(shape, generator=g, dtype=torch.float64) if v.is_floating_point()
                                    else v.clone())
            return drawn[(r, name)]
        values[port] = evaluate(rel.term, leaf).clone()
        if values[port].shape != v.shape:
            raise ValueError(f"{entry.name}: {port} = {rel} has shape {tuple(values[port].shape)}, not {tuple(v.shape)}")
        for r in range(ws):       # a rank tensor the term does not name: drawn apart
            given[r][port] = drawn.get((r, port))
            if given[r][port] is None:
                shape = _rank_shape(entry, r, port)
                given[r][port] = torch.randn(shape, generator=g, dtype=torch.float64) if v.is_floating_point() else v.clone()
    model, inputs = _script(entry).build(0, 1)
    model = model.to(torch.float64)
    return _run(model, inputs, values), given


def _rank_shape(entry, rank, port) -> tuple:
    """The shape rank ``rank``'s ``build`` gives ``port`` (built here on meta: no process group)."""
    with torch.device("meta"):
        model, inputs = _script(entry, rank).build(rank, entry.world_size)
    return tuple(_local(_ports(model, inputs)[port]).shape)


def _worker(rank, ws, port, out_dir, payload):
    warnings.filterwarnings("ignore", category=FutureWarning)     # funcol's deprecated names
    gloo_ranks.init(rank, ws, port, timeout_s=60)
    torch.use_deterministic_algorithms(True, warn_only=True)
    entries, given = torch.load(payload, weights_only=False)

    def one(e):
        model, inputs = _script(e, rank).build(rank, ws)
        return _run(model.to(torch.float64), inputs, given[e.name][rank])
    gloo_ranks.run_each(out_dir, rank, entries, lambda e: e.name, one)


def _verdict(entry, seq: dict, res: list) -> tuple[str, str]:
    errs = [f"rank {r}: {x['error']}" for r, x in enumerate(res) if "error" in x]
    if errs:
        return "wrong", "; ".join(errs)
    spec = S.load_spec(entry.truth)
    mesh = mesh_of(spec, entry.world_size)
    outs = [k for k in seq if not k.startswith("state:")]
    check = [k for k in (spec.check if spec.check is not None else list(spec.expect) or outs)
             if k == "out" or k.startswith("out:")] or outs
    notes, verdict = [], "correct"
    for o in check:
        ok, why = matches(seq[o], [x.get(o) for x in res], spec.expect.get(o), mesh, o)
        notes.append(f"{o}: {why}")
        verdict = verdict if ok else "wrong"
    for key in sorted(k for k in seq if k.startswith("state:")):
        port = key[len("state:"):]
        rel = spec.inputs.get(port, S.Relation(placements=(S.Replicate(),)))
        if rel.term is not None:      # the term's leaves name the port: its state after the call
            rel = S.Relation(term=_renamed(rel.term, port, key))
        ok, why = matches(seq[key], [x.get(key) for x in res], rel, mesh, key)
        if not ok:
            verdict = "wrong"
            notes.append(f"{key}: {why}")
    return verdict, "; ".join(notes)


def _renamed(t, port, key):
    if isinstance(t, S.Leaf):
        return S.Leaf(t.rank, key if t.name == port else t.name)
    return S.Call(t.op, tuple(_renamed(a, port, key) for a in t.args), t.attrs)


def run(entries, seed=0, verbose=True) -> dict:
    """Run the attempts ``entries`` (their gloo harness "plain"); {name: {label, gloo, detail}}."""
    entries = list(entries)
    prev = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    seq, given = {}, {}
    try:
        with torch.random.fork_rng(devices=[]):
            for e in entries:
                seq[e.name], given[e.name] = _case(e, seed)
    finally:      # the caller's process (pytest) keeps its own setting
        torch.use_deterministic_algorithms(prev[0], warn_only=prev[1])
    # one spawn per world size; a script setting GLOO_ALONE (a collective whose sizes differ
    # across ranks: gloo aborts the process) runs in a spawn of its own, an abort its label
    batches: dict = {}
    for e in entries:
        alone = getattr(load_script(e.script), "GLOO_ALONE", False)
        batches.setdefault((e.world_size, e.name if alone else ""), []).append(e)
    results = {}

    def spawn_batch(todo):
        ws = todo[0].world_size
        with tempfile.TemporaryDirectory() as tmp:
            payload = os.path.join(tmp, "payload.pt")
            torch.save((todo, {e.name: given[e.name] for e in todo}), payload)
            try:
                return gloo_ranks.spawn(_worker, ws, (payload,))
            except torch.multiprocessing.ProcessExitedException as ex:
                if len(todo) > 1:
                    raise
                return [{todo[0].name: {"error": f"a rank aborted ({ex})"}}] * ws
    for group in batches.values():
        results.update(gloo_ranks.run_all(group, lambda e: e.name, spawn_batch))
    report = {}
    for e in entries:
        res = results[e.name]
        verdict, detail = _verdict(e, seq[e.name], res)
        report[e.name] = {"label": e.label, "gloo": verdict, "detail": detail}
    if verbose:
        print_labels(report)
    return report


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from adversary import BY_NAME, plain, random_draws
    from soundness import run_gloo_random
    picked = [BY_NAME[n] for n in sys.argv[1:]] if len(sys.argv) > 1 else list(BY_NAME.values())
    rep = {}
    if plain(picked):
        rep.update(run(plain(picked)))
    if random_draws(picked):
        rep.update(run_gloo_random.run(random_draws(picked)))
    sys.exit(0 if all(r["label"] == r["gloo"] for r in rep.values()) else 1)
