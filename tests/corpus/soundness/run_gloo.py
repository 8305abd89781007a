"""Confirm the corpus labels by running every program for real: seq on CPU, dist on 2 gloo processes.

For each program: the sequential model (``build(0, 1)``) gets random float64 parameters and inputs
(seeded) and is run on CPU; the distributed ranks' parameters and inputs are DERIVED from those
through the spec's ``[inputs]`` relation (``shard(d)``: split along d in rank order, ``replicate``:
the same tensor, ``partial``: a random split whose rank-order sum is the tensor); every rank runs
``build(rank, 2)`` with them on its gloo process.  Each checked output (``[outputs] check``) is
compared with seq's through its ``[expect]`` relation: replicate -> every rank's equals seq's,
shard(d) -> their concat along d does, partial -> their sum does (float64, rtol = atol = 1e-9).
An output without ``[expect]`` matches if ANY of these relations holds (replicate, shard(d) for
every d, partial, partial(avg): their mean, a sum over ranks divided by the world size, clean as
the definition of refines says): the checker may then certify whichever relation it finds.  The parameters and
buffers after the call must keep their input relation (a write only one program makes, or makes
differently, changes what the next call computes); an inner tensor a spec checks is not observed.  Verdict: "correct" iff every checked output matches; an exception is "wrong".

Uninitialised memory is deterministic here: ``torch.use_deterministic_algorithms`` makes
``empty``/``empty_like`` fill floats with NaN, so a returned uninitialised buffer never matches by
accident (e.g. by reusing a freed block that held the right values).

All programs run inside ONE spawn of 2 processes.  ``python tests/corpus/soundness/run_gloo.py [NAME...]``
prints the table; ``run(entries)`` returns ``{name: {"label", "gloo", "detail"}}``.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import tempfile
import tomllib
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # tests/corpus/: not soundness/, whose corpus.py
from soundness import gloo_ranks  # noqa: E402                  # would shadow other corpora

WORLD = 2
TOL = 1e-9
ANY = ("any", None)    # no [expect] for the output: some relation must hold (see _match_any)


# ----------------------------------------------------------------------------- helpers

def load_script(path):
    path = Path(path).resolve()
    name = "_gloo_script_" + re.sub(r"\W", "_", path.stem) + "_" + hashlib.sha1(str(path).encode()).hexdigest()[:8]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def parse_relation(text: str):
    text = text.strip()
    if text in ("replicate", "partial"):
        return (text, None)
    m = re.fullmatch(r"shard\((-?\d+)\)", text)
    if m:
        return ("shard", int(m.group(1)))
    raise ValueError(f"run_gloo supports replicate / shard(d) / partial, not {text!r}")


def read_spec(path):
    with open(path, "rb") as f:
        data = tomllib.load(f)
    inputs = {k: parse_relation(v) for k, v in data.get("inputs", {}).items()}
    expect = {k: parse_relation(v) for k, v in data.get("expect", {}).items()}
    check = list(data.get("outputs", {}).get("check", [])) or list(expect) or ["out"]
    # an inner tensor a spec checks as well (the end of a region) is not observable here: the
    # program's label is about what it returns and the state it leaves
    check = [k for k in check if k == "out" or k.startswith("out:")] or ["out"]
    return inputs, check, {k: expect.get(k, ANY) for k in check}


def named_outputs(result) -> dict:
    if isinstance(result, torch.Tensor):
        return {"out": result}
    if isinstance(result, (tuple, list)):
        return {f"out:{i}": t for i, t in enumerate(result)}
    if isinstance(result, dict):
        return {f"out:{k}": t for k, t in result.items()}
    raise TypeError(f"model returned a {type(result).__name__}")


def _materialise(t):
    # AsyncCollectiveTensor waits on first use; clone() makes a plain tensor
    return torch.Tensor.clone(t.detach()).contiguous() if isinstance(t, torch.Tensor) else t


def _ports(model, inputs):
    ports = {f"param:{n}": p for n, p in model.named_parameters()}
    ports.update({f"buffer:{n}": b for n, b in model.named_buffers()})
    ports.update({f"input:{k}": v for k, v in inputs.items()})
    return ports


def _deterministic():
    torch.use_deterministic_algorithms(True, warn_only=True)   # empty() fills floats with NaN


def seq_case(entry, seed=0):
    """Random float64 seq inputs/params, seq outputs, and every rank's derived inputs/params."""
    _deterministic()
    mod = load_script(entry.script)
    rel, check, expect = read_spec(entry.spec)
    g = torch.Generator().manual_seed(seed)
    model, inputs = mod.build(0, 1)
    model = model.to(torch.float64)
    values, per_rank = {}, [dict() for _ in range(WORLD)]
    with torch.no_grad():
        for port, t in _ports(model, inputs).items():
            v = torch.randn(tuple(t.shape), generator=g, dtype=torch.float64)
            values[port] = v
            if port not in rel:
                raise ValueError(f"{entry.name}: spec has no relation for {port}")
            kind, d = rel[port]
            if kind == "replicate":
                parts = [v.clone() for _ in range(WORLD)]
            elif kind == "shard":
                parts = [c.clone() for c in torch.chunk(v, WORLD, dim=d)]
            else:
                noise = [torch.randn(v.shape, generator=g, dtype=torch.float64) for _ in range(WORLD - 1)]
                parts = [v - sum(noise)] + noise
            for r in range(WORLD):
                per_rank[r][port] = parts[r]
        for n, p in model.named_parameters():
            p.copy_(values[f"param:{n}"])
        for n, b in model.named_buffers():
            b.copy_(values[f"buffer:{n}"])
        out = named_outputs(model(**{k: values[f"input:{k}"] for k in inputs}))
        out.update(_state_after(model))
    return {k: _materialise(v) for k, v in out.items()}, per_rank, check, expect


def _state_after(model) -> dict:
    """The parameters and buffers after the call, as ``state:<port>`` (a write the program makes
    to its state is part of what it computes: the next call reads it)."""
    return {f"state:{p}": t for p, t in _ports(model, {}).items()}


# ----------------------------------------------------------------------------- the gloo side

def _run_rank(entry, rank, given):
    import torch.distributed  # noqa: F401
    mod = load_script(entry.script)
    model, inputs = mod.build(rank, WORLD)
    model = model.to(torch.float64)
    with torch.no_grad():
        ports = _ports(model, inputs)
        for port, t in ports.items():
            v = given[port]
            if tuple(t.shape) != tuple(v.shape):
                raise ValueError(f"rank {rank} {port}: build() gives shape {tuple(t.shape)}, the relation {tuple(v.shape)}")
            if port.startswith(("param:", "buffer:")):
                t.copy_(v)
        out = named_outputs(model(**{k: given[f"input:{k}"].clone() for k in inputs}))
        out.update(_state_after(model))
        return {k: _materialise(v) for k, v in out.items()}


def _worker(rank, world, port, out_dir, payload):
    torch.manual_seed(1234 + rank)
    _deterministic()
    gloo_ranks.init(rank, world, port, timeout_s=30)
    entries, inputs = torch.load(payload, weights_only=False)
    gloo_ranks.run_each(out_dir, rank, entries, lambda e: e.name, lambda e: _run_rank(e, rank, inputs[e.name][rank]))


def _match_any(seq, outs):
    cands = [("replicate", None), ("partial", None), ("mean", None)] + [("shard", d) for d in range(seq.dim())]
    for kind, d in cands:
        ok, _ = _match(seq, outs, kind, d)
        if ok:
            return True, f"matches as {kind}" + (f"({d})" if d is not None else "")
    return False, "no relation (replicate, shard(d), partial, partial(avg)) matches"


def _match(seq, outs, kind, d):
    if kind == "any":
        return _match_any(seq, outs)
    if any(not isinstance(o, torch.Tensor) for o in outs):
        return False, "no tensor"
    if kind == "replicate":
        cands = outs
    elif kind == "shard":
        try:
            cands = [torch.cat(outs, dim=d)]
        except RuntimeError as ex:
            return False, f"cannot concat: {ex}"
    else:
        if any(o.shape != outs[0].shape for o in outs):
            return False, "shapes differ across ranks"
        cands = [sum(outs) / (len(outs) if kind == "mean" else 1)]
    for c in cands:
        if c.shape != seq.shape:
            return False, f"shape {tuple(c.shape)} vs seq {tuple(seq.shape)}"
        if not torch.allclose(c, seq, rtol=TOL, atol=TOL):
            return False, f"max |diff| {(c - seq).abs().nan_to_num(float('inf')).max().item():.3g}"
    return True, "matches"


def run(entries=None, seed=0, verbose=True) -> dict:
    """Run ``entries`` (default: the whole corpus); return {name: {label, gloo, detail}}."""
    if entries is None:
        from corpus import CORPUS as entries   # noqa: N811 (tests/corpus/soundness on sys.path)
    entries = list(entries)
    for e in entries:
        if e.mode != "forward":
            raise NotImplementedError(f"{e.name}: run_gloo only runs forward programs")
    seq, inputs, checks, inputs_rel = {}, {}, {}, {}
    prev = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    try:
        for e in entries:
            out, per_rank, check, expect = seq_case(e, seed)
            seq[e.name], inputs[e.name], checks[e.name] = out, per_rank, (check, expect)
            inputs_rel[e.name] = read_spec(e.spec)[0]
    finally:   # the caller's process (pytest) keeps its own setting
        torch.use_deterministic_algorithms(prev[0], warn_only=prev[1])
    runs = gloo_ranks.run_all(entries, lambda e: e.name, lambda todo: spawn_with_payload(_worker, (todo, inputs)))
    report = {}
    for e in entries:
        res = runs[e.name]
        errs = [f"rank {r}: {x['error']}" for r, x in enumerate(res) if "error" in x]
        if errs:
            verdict, detail = "wrong", "; ".join(errs)
        else:
            check, expect = checks[e.name]
            verdict, notes = "correct", []
            for o in check:
                if o not in seq[e.name] or any(o not in x for x in res):
                    verdict = "wrong"
                    notes.append(f"{o}: missing")
                    continue
                ok, why = _match(seq[e.name][o], [x[o] for x in res], *expect[o])
                notes.append(f"{o}: {why}")
                if not ok:
                    verdict = "wrong"
            # the state after the call keeps the relation it had before (the input relation)
            for o in sorted(k for k in seq[e.name] if k.startswith("state:")):
                port = o[len("state:"):]
                ok, why = _match(seq[e.name][o], [x[o] for x in res], *inputs_rel[e.name][port])
                if not ok:
                    verdict = "wrong"
                    notes.append(f"{o}: {why}")
            detail = "; ".join(notes)
        report[e.name] = {"label": e.label, "gloo": verdict, "detail": detail}
    if verbose:
        print_labels(report)
    return report


def spawn_with_payload(worker, payload) -> list:
    """``worker(rank, world, port, out_dir, path)`` on WORLD gloo ranks, ``payload`` saved at ``path``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "payload.pt")
        torch.save(payload, path)
        return gloo_ranks.spawn(worker, WORLD, (path,))


def print_labels(report: dict):
    """The table: each program's claimed label, gloo's, and why."""
    w = max(len(n) for n in report)
    print(f"{'program':<{w}}  claimed  gloo     detail")
    for n, r in report.items():
        flag = "" if r["label"] == r["gloo"] else "  <-- MISLABELLED"
        print(f"{n:<{w}}  {r['label']:<7}  {r['gloo']:<7}  {r['detail']}{flag}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from corpus import BY_NAME, CORPUS
    picked = [BY_NAME[n] for n in sys.argv[1:]] if len(sys.argv) > 1 else CORPUS
    rep = run(picked)
    sys.exit(0 if all(r["label"] == r["gloo"] for r in rep.values()) else 1)
