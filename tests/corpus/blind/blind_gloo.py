"""Confirm the blind corpus's labels on real gloo ranks.

For one program and mode: the sequential program (``build(0, 1)``) runs on random float64
parameters, buffers and inputs; each of ``world_size`` CPU processes (``init_process_group("gloo")``)
builds its rank (``build(rank, W)``), takes its parameters, inputs and (joint) tangents derived
from the sequential ones through the spec's input relation (a DTensor parameter through its
placements when the spec leaves it out; shapes otherwise, as the README infers), runs, and
(joint) back-propagates.  Each checked output (and gradient) is compared with the sequential one
through its ``[expect]`` relation.  A program is correct iff every comparison holds
(float64, rtol 1e-7, atol 1e-9; a program that computes a part in float32 itself, as Hugging
Face's router softmax does, gets the manifest's looser ``rtol`` / ``atol``).

    python tests/corpus/blind/blind_gloo.py [NAME ...] [--mode forward|joint] [--corpus DIR]

(``--corpus DIR``: another corpus of this layout, with its own ``manifest.py``; default this one.)

prints one line per (program, mode) and exits 1 when a label is not confirmed.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import socket
import sys
import tempfile
import time
import tomllib
import traceback
import zlib
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import relations as R  # noqa: E402

RTOL, ATOL = 1e-7, 1e-9


def load_script(path: Path):
    spec = importlib.util.spec_from_file_location(f"blind_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --------------------------------------------------------------------------- one program's ports

def _flatten_outputs(out) -> dict[str, torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return {"out": out}
    if isinstance(out, (tuple, list)):
        return {f"out:{i}": t for i, t in enumerate(out)}
    if isinstance(out, dict):
        return {f"out:{k}": t for k, t in out.items()}
    raise TypeError(f"unsupported output {type(out)}")


def _local(t):
    from torch.distributed.tensor import DTensor
    return t._local_tensor if isinstance(t, DTensor) else t


def _placement(t, world_size):
    """A DTensor's relation text (1-D mesh), or None for a plain tensor."""
    from torch.distributed.tensor import DTensor, Replicate, Shard
    if not isinstance(t, DTensor):
        return None
    (p,) = t.placements
    if isinstance(p, Shard):
        return f"shard({p.dim})"
    if isinstance(p, Replicate):
        return "replicate"
    raise ValueError(f"placement {p} not handled")


def input_ports(model, inputs) -> dict[str, torch.Tensor]:
    ports = {}
    for n, p in model.named_parameters():
        ports[f"param:{n}"] = p
    for n, b in model.named_buffers():
        ports[f"buffer:{n}"] = b
    for n, t in inputs.items():
        ports[f"input:{n}"] = t
    return ports


def _draw(port, shape, dtype, entry, salt):
    gen = torch.Generator().manual_seed(zlib.crc32(port.encode()) + 1000 * salt)
    name = port.split(":", 1)[1] if port.startswith("input:") else port
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) < 0.5
    if not dtype.is_floating_point:
        lo, hi = entry["int_ranges"][name]
        return torch.randint(lo, hi, shape, generator=gen)
    t = torch.randn(shape, generator=gen, dtype=torch.float64)
    if name in entry.get("positive", ()):
        t = t.abs() + 0.5
    return t


def randomize(model, inputs, entry, salt=0) -> dict[str, torch.Tensor]:
    """Fresh float64 values for every floating parameter/buffer/input (integer buffers are kept:
    they are structure, e.g. an arange); returns port -> value."""
    values = {}
    with torch.no_grad():
        for port, t in input_ports(model, inputs).items():
            keep = port.startswith("buffer:") and not t.dtype.is_floating_point
            if port in entry.get("keep", ()) or keep:
                values[port] = t.detach().clone()
                continue
            values[port] = _draw(port, t.shape, t.dtype, entry, salt)
    return values


def load(model, inputs, values) -> dict:
    """Put ``values`` (port -> tensor) into the model's parameters/buffers; returns the inputs."""
    with torch.no_grad():
        for port, t in input_ports(model, inputs).items():
            if port.startswith(("param:", "buffer:")):
                _local(t).copy_(values[port].to(_local(t).dtype))
    new_inputs = {}
    for n, t in inputs.items():
        v = values[f"input:{n}"]
        if t.dtype.is_floating_point:
            v = v.to(t.dtype).detach().requires_grad_(t.requires_grad)
        new_inputs[n] = v
    return new_inputs


def run_program(model, inputs, joint, tangents_for):
    """Forward (and joint backward): port -> value of outputs and gradients."""
    if not joint:
        with torch.no_grad():
            outs = _flatten_outputs(model(**inputs))
        return {k: _local(v).detach() for k, v in outs.items()}
    outs = _flatten_outputs(model(**inputs))
    diff = {k: v for k, v in outs.items() if v.requires_grad}
    tangents = tangents_for({k: _local(v) for k, v in diff.items()})
    # a program whose backward must run inside a context (torchtitan's loss_parallel) names it
    with getattr(model, "backward_context", contextlib.nullcontext)():
        torch.autograd.backward(list(diff.values()), [_tangent_like(v, tangents[k]) for k, v in diff.items()])
    result = {k: _local(v).detach() for k, v in outs.items()}
    for n, p in model.named_parameters():
        if p.grad is not None:
            result[f"grad:{n}"] = _local(p.grad).detach()
    for n, t in inputs.items():
        if isinstance(t, torch.Tensor) and t.requires_grad and t.grad is not None:
            result[f"grad:input:{n}"] = t.grad.detach()
    return result


def _tangent_like(out, local_tangent):
    if hasattr(out, "placements"):
        from torch.distributed.tensor import DTensor
        return DTensor.from_local(local_tangent.to(out.dtype), out.device_mesh, out.placements, run_check=False)
    return local_tangent.to(out.dtype)


# --------------------------------------------------------------------------- the rank processes

def _worker(rank, world_size, port, entry, mode, result_dir):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(0)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    try:
        result = _rank_run(rank, world_size, entry, mode)
        torch.save(result, Path(result_dir) / f"r{rank}.pt")
    except Exception:  # reported by the parent as an error of this program
        (Path(result_dir) / f"r{rank}.err").write_text(traceback.format_exc())
    finally:
        dist.destroy_process_group()


def _dir(entry) -> Path:
    """Where the entry's script and specs live (its corpus; an absolute path in them wins)."""
    return Path(entry.get("dir", HERE))


def _spec(entry, mode):
    return tomllib.loads((_dir(entry) / entry["spec"][mode]).read_text())


def _rank_run(rank, world_size, entry, mode):
    joint = mode == "joint"
    spec = _spec(entry, mode)
    rels = spec.get("inputs", {})
    script = load_script(_dir(entry) / entry["script"])

    # the sequential program, in every process (deterministic), compared on rank 0
    torch.manual_seed(0)
    seq_model, seq_inputs = script.build(0, 1)
    seq_values = randomize(seq_model, seq_inputs, entry)
    seq_in = load(seq_model, seq_inputs, seq_values)
    seq_tangents = {}

    def seq_tangent(outs):
        for k, v in outs.items():
            seq_tangents[k] = _draw(f"tangent:{k}", v.shape, torch.float64, entry, 0)
        return seq_tangents

    seq_result = run_program(seq_model, seq_in, joint, seq_tangent)

    # this rank
    torch.manual_seed(0)
    model, inputs = script.build(rank, world_size)
    ports = input_ports(model, inputs)
    shapes = {k: tuple(_local(v).shape) for k, v in ports.items()}
    placements = {k: _placement(v, world_size) for k, v in ports.items()}
    all_shapes = [None] * world_size
    dist.all_gather_object(all_shapes, shapes)
    values = {}
    for port in ports:
        rank_shapes = [s.get(port) for s in all_shapes]
        seq_v = seq_values[port]
        rel = rels.get(port) or placements[port] or R.infer(tuple(seq_v.shape), rank_shapes)
        values[port] = R.distribute(rel, seq_v, rank_shapes, port)[rank]
    rank_in = load(model, inputs, values)

    def rank_tangent(outs):
        local_shapes = {k: tuple(v.shape) for k, v in outs.items()}
        every = [None] * world_size
        dist.all_gather_object(every, local_shapes)
        tangents = {}
        for k in outs:
            rel = rels.get(f"tangent:{k}")
            if rel is None:
                raise ValueError(f"spec gives no relation for tangent:{k}")
            tangents[k] = R.distribute(rel, seq_tangents[k], [s.get(k) for s in every], f"tangent:{k}")[rank]
        return tangents

    rank_result = run_program(model, rank_in, joint, rank_tangent)
    gathered = [None] * world_size
    dist.all_gather_object(gathered, rank_result)
    if rank != 0:
        return None
    return compare(spec, seq_result, gathered, entry.get("rtol", RTOL), entry.get("atol", ATOL))


def compare(spec, seq_result, ranks, rtol=RTOL, atol=ATOL) -> dict:
    checks = spec.get("outputs", {}).get("check") or sorted(seq_result)
    expect = spec.get("expect", {})
    verdicts = {}
    for name in checks:
        if name not in expect:
            raise ValueError(f"spec has no [expect] for {name}")
        if name not in seq_result:
            raise ValueError(f"the sequential program has no output {name}")
        rel = R.parse(expect[name])
        want = seq_result[name]
        try:
            if R.replicated_ranks(rel):
                gots = [r[name] for r in ranks]
            else:
                gots = [R.evaluate(rel, [r.get(name) for r in ranks], name, ranks)]
        except (RuntimeError, KeyError) as e:  # shapes that do not concatenate, a missing output
            verdicts[name] = {"holds": False, "why": f"cannot evaluate: {e}"}
            continue
        holds, worst = True, 0.0
        for got in gots:
            if got.shape != want.shape:
                holds, worst = False, float("inf")
                break
            if want.dtype.is_floating_point:
                diff = (got.double() - want.double()).abs()
                worst = max(worst, diff.max().item() if diff.numel() else 0.0)
                if not torch.allclose(got.double(), want.double(), rtol=rtol, atol=atol):
                    holds = False
            elif not torch.equal(got, want):
                holds, worst = False, float("nan")
        verdicts[name] = {"holds": holds, "max_abs_diff": worst}
    return verdicts


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def confirm(entry: dict, mode: str, timeout: float = 300) -> dict:
    """Run one program on gloo: {'matches': bool, 'outputs': {...}} or {'error': text}."""
    with tempfile.TemporaryDirectory() as d:
        ctx = mp.start_processes(_worker, args=(entry["world_size"], _free_port(), entry, mode, d),
                                 nprocs=entry["world_size"], join=False, start_method="spawn")
        deadline = time.time() + timeout
        while not ctx.join(timeout=max(1, deadline - time.time())):
            if time.time() > deadline:
                for p in ctx.processes:
                    p.kill()
                return {"error": "timeout"}
        errs = sorted(Path(d).glob("*.err"))
        if errs:
            return {"error": errs[0].read_text()}
        verdicts = torch.load(Path(d) / "r0.pt")
    return {"matches": all(v["holds"] for v in verdicts.values()), "outputs": verdicts}


def assert_label_confirmed(entry: dict, mode: str) -> None:
    """Fail unless the gloo ranks agree with the entry's label: a correct program matches its
    specification at every checked output, a buggy one differs at some."""
    result = confirm(entry, mode)
    assert "error" not in result, result.get("error")
    differing = [k for k, v in result["outputs"].items() if not v["holds"]]
    if entry["label"] == "correct":
        assert not differing, f"a correct program differs from its specification at {differing}"
    else:
        assert differing, "a buggy program computes what its specification does"


def main(argv=None) -> int:
    from manifest import load_entries
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="pair or program names (default: all)")
    ap.add_argument("--corpus", help="a corpus directory with its own manifest.py (default: this one)")
    ap.add_argument("--mode", choices=["forward", "joint"])
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    rows, bad = [], 0
    ENTRIES = load_entries(args.corpus)
    start = time.time()
    for e in ENTRIES:
        if args.names and e["name"] not in args.names and e["pair"] not in args.names:
            continue
        for mode in e["modes"]:
            if args.mode and mode != args.mode:
                continue
            t0 = time.time()
            r = confirm(e, mode)
            dt = time.time() - t0
            if "error" in r:
                status, detail = "ERROR", r["error"].strip().splitlines()[-1]
            else:
                ok = r["matches"] == (e["label"] == "correct")
                status = "confirmed" if ok else "NOT CONFIRMED"
                failing = [k for k, v in r["outputs"].items() if not v["holds"]]
                detail = "all outputs match" if r["matches"] else "differs: " + ", ".join(
                    f"{k} ({r['outputs'][k].get('max_abs_diff', r['outputs'][k].get('why')):.3g})"
                    if isinstance(r['outputs'][k].get('max_abs_diff'), float) else f"{k} ({r['outputs'][k].get('why')})"
                    for k in failing)
            bad += status != "confirmed"
            rows.append({"program": e["name"], "mode": mode, "label": e["label"], "status": status,
                         "detail": detail, "seconds": round(dt, 1)})
            print(f"{e['name']:40s} {mode:8s} {e['label']:8s} {status:14s} {dt:5.1f}s  {detail}", flush=True)
    print(f"{len(rows)} runs, {bad} not confirmed, {time.time() - start:.0f} s wall")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
