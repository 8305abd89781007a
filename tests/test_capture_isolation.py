"""Each rank's captured graph is what that rank runs (issue 23 item 5).

Every rank is captured in a fresh process of its own (frontend/rank_processes.py).  Here each
rank's captured graph, run by the interpreter (entangle_py/oracle/interp.py, collectives
simulated), is compared with that rank run for real on gloo on the same inputs: every output
the graph has -- forward outputs, gradients, new values of buffers -- must be the rank's own
(float64, rtol = atol = 1e-9, or the script's ``GLOO_TOL``).  Inputs are the same on both sides: float parameters, buffers,
inputs and tangents drawn from a generator seeded by the port's name and global shape (a DTensor
parameter's local part cut by its placement, as parallelize_module lays it out), integer ones as
``build`` made them on that gloo rank.

The programs: the DTensor colwise-to-replicate layer whose rank 1 once took rank 0's half of
the gradient (tests/corpus/capture/dtensor_colwise_replicate.py) at 2 and 4 ranks, and a subset of
the corpus's rank-dependent programs (tests/corpus/programs: DTensor, vocab-parallel, context
parallel, 2-D mesh, pipeline, expert parallel), joint where the corpus has a joint entry.
Also: the machinery itself (errors, crashes, output and warnings of a rank's process).
"""
from __future__ import annotations

import os
import sys
import textwrap
import zlib
from pathlib import Path

import pytest
import torch

from entangle_py.frontend import rank_processes
from entangle_py.frontend.capture import CaptureError, capture, load_script
from entangle_py.oracle import interp

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "corpus" / "programs"
COLREP = ROOT / "tests" / "corpus" / "capture" / "dtensor_colwise_replicate.py"
sys.path.insert(0, str(ROOT / "tests" / "corpus"))
from soundness import gloo_ranks  # noqa: E402

TOL = 1e-9

# (id, script, world size, joint)
CASES = [
    ("colrep@2", COLREP, 2, True),
    ("colrep@4", COLREP, 4, True),
    ("dtensor_mlp", PROGRAMS / "_dtensor.py:dtensor_mlp_correct", 2, True),
    ("dtensor_sp", PROGRAMS / "_dtensor.py:dtensor_sp_correct", 2, True),
    ("dtensor_bias_mlp_local", PROGRAMS / "_dtensor.py:dtensor_bias_mlp_local_correct", 2, True),
    ("dtensor_bias_sp_local", PROGRAMS / "_dtensor.py:dtensor_bias_sp_local_correct", 2, True),
    ("vocab_cross_entropy", PROGRAMS / "_vocab.py:vocab_cross_entropy_correct", 2, True),
    ("cp_attention", PROGRAMS / "_cp_attn.py:cp_attention_correct", 2, False),
    ("mesh_dp_tp@4", PROGRAMS / "_mesh.py:mesh_dp_tp_correct", 4, True),
    ("pp_p2p", PROGRAMS / "_pp.py:pp_p2p_correct", 2, True),
    ("pp_skip@3", PROGRAMS / "_pp.py:pp_skip_correct", 3, True),
    ("moe_ep", PROGRAMS / "_moe.py:moe_ep_correct", 2, True),
    ("moe_hf@4", PROGRAMS / "_moe_hf.py:moe_hf_correct", 4, True),
]


# ----------------------------------------------------------------------------- the gloo side

def _value(port: str, shape, dtype=torch.float64) -> torch.Tensor:
    """The value of a float port: the same on every rank for the same port and shape."""
    g = torch.Generator().manual_seed(zlib.crc32(f"{port}{tuple(shape)}".encode()))
    return torch.randn(tuple(shape), generator=g, dtype=dtype)


def _local_part(t, port: str) -> torch.Tensor:
    """A DTensor's local part of the port's global value, cut as its placements lay it out."""
    from torch.distributed.tensor import Replicate, Shard
    mesh = t.device_mesh
    part = _value(port, t.shape)
    for dim, p in enumerate(t.placements):
        coord = mesh.get_local_rank(dim)
        if isinstance(p, Shard):
            part = torch.chunk(part, mesh.size(dim), dim=p.dim)[coord]
        elif not isinstance(p, Replicate):
            raise ValueError(f"{port}: placement {p} is not cut here")
    return part


def _named_outputs(result) -> dict:
    if isinstance(result, torch.Tensor):
        return {"out": result}
    if isinstance(result, (tuple, list)):
        return {f"out:{i}": t for i, t in enumerate(result)}
    return {f"out:{k}": t for k, t in result.items()}


def _plain(t):
    from torch.distributed.tensor import DTensor
    t = t._local_tensor if isinstance(t, DTensor) else t
    return torch.Tensor.clone(t.detach()).contiguous()   # an AsyncCollectiveTensor waits here


def _run_rank(script, rank, world, joint):
    """Run ``build(rank, world)`` on this gloo rank: ({input port: value}, {output port: value})."""
    from torch.distributed.tensor import DTensor
    from entangle_py.frontend.ddp import port_renamer
    model, inputs = load_script(script).build(rank, world)
    rename = port_renamer(model)
    given, out = {}, {}
    with torch.no_grad():
        for kind, named in (("param", model.named_parameters()), ("buffer", model.named_buffers())):
            for fqn, t in named:
                port = f"{kind}:{rename(fqn)}"
                if t.is_floating_point():
                    local = t._local_tensor if isinstance(t, DTensor) else t
                    local.copy_(_local_part(t, port) if isinstance(t, DTensor) else _value(port, t.shape))
                given[port] = _plain(t)
    args = {}
    for k, v in inputs.items():
        if v.is_floating_point():
            v = _value(f"input:{k}", v.shape).requires_grad_(v.requires_grad)
        given[f"input:{k}"] = v.detach().clone()
        args[k] = v
    with torch.set_grad_enabled(joint):
        result = _named_outputs(model(**args))
    out.update({k: _plain(v) for k, v in result.items()})
    out.update({f"mutated:buffer:{rename(n)}": _plain(b) for n, b in model.named_buffers()})
    if joint:
        diff = {k: v for k, v in result.items() if v.requires_grad}
        tangents = {k: _value(f"tangent:{k}", v.shape) for k, v in diff.items()}
        given.update({f"tangent:{k}": t for k, t in tangents.items()})
        torch.autograd.backward(list(diff.values()), list(tangents.values()))
        for fqn, p in model.named_parameters():
            if p.grad is not None:
                out[f"grad:{rename(fqn)}"] = _plain(p.grad)
        for k, v in args.items():
            if v.grad is not None:
                out[f"grad:input:{k}"] = _plain(v.grad)
    return given, out


def _worker(rank, world, port, tmp, cases):
    gloo_ranks.init(rank, world, port, timeout_s=120)
    import torch.distributed as dist
    torch.set_default_dtype(torch.float64)              # DDP keeps the dtype it was built with
    torch.use_deterministic_algorithms(True, warn_only=True)
    results = {}
    for cid, script, joint in cases:
        try:
            results[cid] = _run_rank(script, rank, world, joint)
        except Exception as e:    # noqa: BLE001 - reported by the test as this case's failure
            results[cid] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        dist.barrier()
    gloo_ranks.finish(tmp, rank, results)


@pytest.fixture(scope="module")
def gloo():
    """{case id: per rank (inputs, outputs)} from one gloo spawn per world size."""
    out = {}
    for world in sorted({w for _, _, w, _ in CASES}):
        cases = [(cid, str(s), j) for cid, s, w, j in CASES if w == world]
        ranks = gloo_ranks.spawn(_worker, world, (cases,))
        for cid, _, _ in cases:
            out[cid] = [ranks[r][cid] for r in range(world)]
    return out


# ----------------------------------------------------------------------------- the comparison

def _compare(bundle, per_rank, tol=TOL) -> list[str]:
    """What differs between each rank's graph run by the interpreter and that rank on gloo."""
    problems = []
    inputs = []
    for g, (given, _) in zip(bundle.ranks, per_rank):
        missing = [p.name for p in g.inputs if p.name not in given]
        if missing:
            problems.append(f"rank {g.rank}: the graph reads {missing}, which the rank does not hold")
        inputs.append({p.name: given[p.name] for p in g.inputs if p.name in given})
    if problems:
        return problems
    envs = interp.run_bundle(bundle, inputs, float_dtype=torch.float64)
    for g, got, (_, want) in zip(bundle.ranks, interp.output_values(bundle, envs), per_rank):
        for port in (p.name for p in g.outputs):
            if port not in want:
                problems.append(f"rank {g.rank}: {port} is not something the rank computes")
                continue
            a, b = got[port], want[port]
            if tuple(a.shape) != tuple(b.shape):
                problems.append(f"rank {g.rank}: {port} has shape {tuple(a.shape)}, the rank's {tuple(b.shape)}")
            elif not torch.allclose(a.to(b.dtype), b, rtol=tol, atol=tol):
                diff = (a.to(b.dtype) - b).abs().max().item()
                problems.append(f"rank {g.rank}: {port} differs from the rank's by {diff:.3g}")
    return problems


@pytest.mark.parametrize("cid,script,world,joint", CASES, ids=[c[0] for c in CASES])
def test_each_rank_graph_is_what_the_rank_runs(cid, script, world, joint, gloo):
    per_rank = gloo[cid]
    errors = [r for r in per_rank if isinstance(r, str)]
    assert not errors, errors
    bundle = capture(script, world, joint=joint)
    # a script computing in float32 on purpose (Hugging Face's router softmax) names its tolerance:
    # the interpreter runs the graph in float64 throughout
    problems = _compare(bundle, per_rank, getattr(load_script(script), "GLOO_TOL", TOL))
    assert not problems, "\n".join(problems)
    if joint:
        assert all(any(p.name.startswith("grad:") for p in g.outputs) for g in bundle.ranks)


def test_colwise_replicate_rank_takes_its_own_part_of_the_gradient():
    """The graphs differ between ranks exactly in the index of the gradient's part they take."""
    for world in (2, 4):
        b = capture(COLREP, world, joint=True)
        taken = []
        for g in b.ranks:
            splits = {n.name for n in g.nodes if n.target == "aten.split.Tensor" and n.args[1:] == (4 // world * 2, 1)}
            taken.append([n.args[1] for n in g.nodes if n.target == "getitem" and n.args[0].name in splits])
        assert taken == [[r] for r in range(world)], taken


def test_a_wrong_graph_is_caught_by_the_comparison(gloo):
    """The comparison is not vacuous: rank 1's graph with rank 0's index (the old capture) differs."""
    import dataclasses
    b = capture(COLREP, 2, joint=True)
    g = b.ranks[1]
    splits = {n.name for n in g.nodes if n.target == "aten.split.Tensor" and n.args[1:] == (4, 1)}
    nodes = [dataclasses.replace(n, args=(n.args[0], 0)) if n.target == "getitem" and n.args[0].name in splits else n
             for n in g.nodes]
    wrong = dataclasses.replace(b, ranks=[b.ranks[0], dataclasses.replace(g, nodes=nodes)])
    problems = _compare(wrong, gloo["colrep@2"])
    # rank 1's weight gradient is wrong, and the input's gradient (all-reduced) on every rank
    assert "rank 1: grad:fc.weight" in " ".join(problems) and not any(": out " in p for p in problems), problems


# ----------------------------------------------------------------------------- the processes

def _script(tmp_path, body: str, name="prog.py") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return p


PLAIN = """
import torch, torch.nn as nn
def build(rank, world_size):
    return nn.Linear(4, 4), {"input": torch.randn(2, 4)}
"""


def test_no_state_survives_between_ranks(tmp_path):
    """Each rank runs in a process of its own: a module-level counter the script bumps in build is
    1 on every rank, and the processes are distinct and not this one."""
    p = _script(tmp_path, PLAIN.replace("def build(rank, world_size):", """
CALLS = []
def build(rank, world_size):
    import os, warnings
    CALLS.append(rank)
    warnings.warn(f"rank {rank} pid {os.getpid()} calls {len(CALLS)}")"""))
    with pytest.warns(UserWarning) as got:
        capture(p, 3)
    seen = sorted(str(w.message) for w in got if "pid" in str(w.message))
    assert len(seen) == 3 and all(s.endswith("calls 1") for s in seen), seen
    pids = {s.split()[3] for s in seen}
    assert len(pids) == 3 and str(os.getpid()) not in pids


def test_output_of_a_rank_process_reaches_this_process(tmp_path, capsys):
    p = _script(tmp_path, PLAIN.replace("def build(rank, world_size):", """
import sys
def build(rank, world_size):
    print(f"hello from rank {rank}")
    print(f"complaint from rank {rank}", file=sys.stderr)"""))
    capture(p, 2)
    out, err = capsys.readouterr()
    assert "hello from rank 0" in out and "hello from rank 1" in out
    assert "complaint from rank 1" in err


def test_an_error_is_the_first_failing_ranks_with_its_line(tmp_path):
    p = _script(tmp_path, """
import torch, torch.nn as nn
def build(rank, world_size):
    if rank >= 1:
        raise ValueError(f"no rank {rank} here")
    return nn.Linear(4, 4), {"input": torch.randn(2, 4)}
""")
    with pytest.raises(CaptureError, match=r"build\(rank=1, world_size=3\) failed: ValueError: no rank 1 here "
                                           r"\(at .*prog.py:5\)"):
        capture(p, 3)


@pytest.mark.parametrize("how,words", [
    ("os.kill(os.getpid(), signal.SIGKILL)", "was killed by signal SIGKILL"),
    ("os._exit(3)", "exited with code 3"),
])
def test_a_rank_process_that_dies_is_reported(tmp_path, how, words):
    p = _script(tmp_path, f"""
import os, signal, torch, torch.nn as nn
def build(rank, world_size):
    if rank == 1:
        {how}
    return nn.Linear(4, 4), {{"input": torch.randn(2, 4)}}
""")
    with pytest.raises(rank_processes.RankProcessDied, match=f"the process running rank 1 {words}"):
        capture(p, 2)
    assert capture(p, 1).world_size == 1      # the next capture works


def test_a_script_capturing_itself_at_import_is_refused(tmp_path):
    p = _script(tmp_path, PLAIN + "\nfrom entangle_py.frontend.capture import capture\ncapture(__file__, 2)\n")
    with pytest.raises(CaptureError, match=r"capture\(\) was called while a rank's process was importing"):
        capture(p, 2)


def test_a_closure_build_is_captured_in_forks_of_this_process(tmp_path):
    from entangle_py.testing import assert_refines
    width = 4

    def build(rank, world_size):          # a closure: no process but this one can import it
        return torch.nn.Linear(width, width), {"input": torch.randn(2, width)}
    assert assert_refines(build, world_size=2).status == "refines"


def test_an_internal_error_keeps_its_traceback(tmp_path):
    p = _script(tmp_path, PLAIN + """
import entangle_py.frontend.capture as _capture
def _boom(*a, **k):
    raise KeyError("inside the capture")
_capture.convert = _boom
""")
    with pytest.raises(KeyError) as e:
        capture(p, 1)
    assert isinstance(e.value.__cause__, rank_processes.RemoteTraceback)
    assert "_boom" in str(e.value.__cause__)
