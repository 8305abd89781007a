"""Capture a sequential or multi-rank PyTorch program into a graph bundle.

Script contract
===============

A capture script is a Python file that defines::

    def build(rank: int, world_size: int) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]

``build`` returns the model *as rank ``rank`` of ``world_size`` holds it* (its parameter shards)
and the user inputs of one forward call, by name: the model is called as ``model(**inputs)``.

* ``world_size == 1`` is the sequential program (the specification): no process group exists and
  the model must not call collectives (Megatron's parallel layers at TP=1 behave like plain ones).
* ``world_size > 1``: every rank is simulated in this process, one after the other, with torch's
  fake process group (``dist.init_process_group("fake", ...)``): ``dist.get_rank()``,
  ``dist.group.WORLD`` and collectives (``dist.*``, functional collectives, inside
  ``torch.autograd.Function`` or not) all work and are recorded, nothing is communicated.
* ``build`` runs under ``with torch.device("meta")``: modules and tensors it creates hold no memory.
  Anything it returns on another device is moved to ``meta``.  Sizes are all that matter.  For
  tracing, parameters, buffers, tensor attributes and inputs become *fake CPU* tensors (still no
  memory, no compute): tensors ``forward`` creates without a device (``torch.ones(s, s).tril()``)
  match them, and ops whose backward torch only knows off ``meta`` (``nll_loss``, ``var``, ...)
  differentiate.  In a ``joint`` capture a parameter or input that feeds an output differentiably
  but gets no gradient is an error (never a silently missing ``grad:`` output).
* Inputs that should get a gradient in a ``joint`` capture are created with ``requires_grad=True``.
* Optional ``DYNAMIC_DIMS = {"x": [0, 1]}``: with ``dynamic=True`` these input dims are symbolic
  (default: every dim of every input may be symbolic; dims that meet a fixed size are specialised).

What is captured: TorchDynamo with ``fullgraph=True`` then AOTAutograd.  ``joint=False``: the
inference (forward-only) ATen graph, traced under ``torch.no_grad()``.  ``joint=True``: the joint
forward+backward graph (AOTAutograd's ``partition_fn`` receives it), with tangents as inputs and
gradients as outputs.  A graph break (data-dependent ``if``, ``print``, ``.item()``, ...) or any
construct Dynamo/AOTAutograd rejects raises :class:`CaptureError` naming the construct and the
script's ``file:line``.

Stable port names (the same on every rank that has the port; spec files rely on them).  Ranks may
have different ports: a pipeline stage takes only its own parameters (and only the inputs its
graph reads), and returns what it returns.  Point-to-point ops (``dist.isend`` / ``irecv`` /
``batch_isend_irecv``, ``funcol.isend_inplace`` / ``irecv_inplace``) are traced with Dynamo's
``enable_p2p_compilation``; a receive whose value the trace drops is a CaptureError.

DTensor programs (``parallelize_module``, ``distribute_tensor``): a DTensor parameter or buffer is
its rank's local tensor in the graph, under its own port name; its placements are
recorded in the bundle's ``meta[DTENSOR_PLACEMENTS]`` as spec relations (see ``_placement_text``),
which ``entangle check`` uses for inputs the spec does not relate.

* inputs: ``param:<fqn>``, ``buffer:<fqn>``, ``input:<name>`` (keys of the inputs dict),
  ``tangent:<output name>`` (joint), ``size:<tensor port>:<dim>`` (a symbolic size, dynamic);
* outputs: ``out`` for a single tensor, ``out:0``, ``out:1``, ... for a tuple/list, ``out:<key>`` for
  a dict; gradients ``grad:<fqn>`` for parameters, ``grad:buffer:<fqn>`` and ``grad:input:<name>``;
  ``mutated:<input port>`` for the new value of an input or buffer the program updates in place.

Symbolic sizes (dynamic) are renamed after the input dim they come from (``x_size0`` is dim 0 of
input ``x``), so the same name means "that dim of that input in *this* bundle": a sharded input's
local size in a distributed bundle is not the global size in the sequential one.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.util
import json
import operator
import os
import re
import sys
import time
import types
import warnings
from pathlib import Path
from typing import Any

import sympy

from entangle_py.ir import graph, ops
from entangle_py.ir import symbolic
from entangle_py.errors import InputError


class CaptureError(InputError):
    """The program cannot be captured as one graph (graph break, unsupported construct, bad script)."""


# ----------------------------------------------------------------------------- script loading

def load_script(script) -> types.ModuleType:
    """Import a capture script from a path (or accept an already imported module)."""
    if isinstance(script, types.ModuleType):
        if not hasattr(script, "build"):
            raise CaptureError(f"module {script.__name__} has no build(rank, world_size) function")
        return script
    path = Path(script)
    if not path.is_file():
        raise CaptureError(f"{script}: no such script")
    path = path.resolve()
    name = "_entangle_script_" + re.sub(r"\W", "_", path.stem) + "_" + hashlib.sha1(str(path).encode()).hexdigest()[:8]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CaptureError(f"{script}: cannot be imported as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # Like `python script.py`: the script's directory is importable (helper modules beside it).
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    except InputError:
        raise
    except Exception as e:  # the user's script failed at import: say where
        raise CaptureError(f"{_display_path(path)}: importing the script failed: {type(e).__name__}: "
                           f"{_first_line(e)}{_user_frame_suffix(e, str(path))}") from e
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(path.parent))
    if not callable(getattr(module, "build", None)):
        raise CaptureError(f"{_display_path(path)}: defines no build(rank, world_size) function")
    return module


def _script_file(module: types.ModuleType) -> str | None:
    f = getattr(module, "__file__", None)
    return str(Path(f).resolve()) if f else None


def _display_path(p) -> str:
    """Paths inside the working directory are shown (and stored) relative to it."""
    p = Path(p)
    try:
        rp, cwd = p.resolve(), Path.cwd().resolve()
        return rp.relative_to(cwd).as_posix() if rp.is_relative_to(cwd) else p.as_posix()
    except (ValueError, OSError):
        return p.as_posix()


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    return lines[0][:300] if lines else type(e).__name__


def _user_frame_suffix(e: BaseException, script_file: str | None) -> str:
    import traceback
    frames = traceback.extract_tb(e.__traceback__)
    pick = _pick_frame([(f.filename, f.lineno, f.name, f.line or "") for f in frames], script_file)
    return f" (at {_display_path(pick[0])}:{pick[1]})" if pick else ""


# ----------------------------------------------------------------------------- public API

def capture(script, world_size: int = 1, joint: bool = False, dynamic: bool = False,
            progress=None) -> graph.Bundle:
    """Capture ``script`` (path or module, see the module docstring) for every rank of ``world_size``.

    ``progress(rank, world_size, seconds)`` is called after each rank is captured.
    """
    if not isinstance(world_size, int) or world_size < 1:
        raise CaptureError(f"world size must be a positive integer, got {world_size!r}")
    module = load_script(script)
    import torch
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        raise CaptureError("a default process group is already initialized in this process; "
                           "capture simulates ranks with its own fake process group")
    ranks, placements = [], []
    for r in range(world_size):
        t0 = time.perf_counter()
        placements.append({})
        ranks.append(_capture_rank(module, r, world_size, joint, dynamic, placements[-1]))
        if progress is not None:
            progress(r, world_size, time.perf_counter() - t0)
    # Ranks may take different inputs and return different outputs (pipeline stages hold their
    # own parameters): every rank's graph has its own ports, and the spec's input relation names
    # the ranks that hold a tensor (``"param:fc2" = "r1.param:fc2"``; see check/spec.py).
    for g in ranks:
        _check_received_values_read(g)
    script_file = _script_file(module)
    meta = {
        "torch": str(torch.__version__),
        "script": Path(script_file).name if script_file else module.__name__,
        "world_size": str(world_size),
        "joint": str(bool(joint)).lower(),
        "dynamic": str(bool(dynamic)).lower(),
        "captured_by": "entangle capture",
    }
    dtensor = _merge_placements(placements)
    if dtensor:
        meta[DTENSOR_PLACEMENTS] = json.dumps(dtensor, sort_keys=True)
    schemas = _custom_op_schemas(ranks)
    if schemas:
        meta[graph.CUSTOM_OP_SCHEMAS] = json.dumps(schemas, sort_keys=True)
    return graph.Bundle(ranks=ranks, kind="joint" if joint else "forward", meta=meta)


def cli_capture(args) -> int:
    t0 = time.perf_counter()
    progress = None
    if getattr(args, "verbose", False) or sys.stderr.isatty():
        def progress(rank, world_size, seconds):
            print(f"rank {rank}/{world_size} captured in {seconds:.1f} s", file=sys.stderr, flush=True)
    bundle = capture(args.script, world_size=args.world_size, joint=args.joint, dynamic=args.dynamic,
                     progress=progress)
    graph.save(bundle, args.output)
    g0 = bundle.rank(0)
    n_ops = sum(1 for n in g0.nodes if not n.is_placeholder)
    colls = sum(1 for n in g0.nodes if ops.is_collective(n.target))
    print(f"captured {args.script}: {bundle.kind}, {bundle.world_size} rank(s), {n_ops} ops/rank "
          f"({colls} collectives), {len(g0.inputs)} inputs, {len(g0.outputs)} outputs"
          f"{', dynamic' if args.dynamic else ''} -> {args.output} ({time.perf_counter() - t0:.1f} s)")
    return 0


# ----------------------------------------------------------------------------- one rank

@dataclasses.dataclass
class _DynamoInfo:
    port_names: list[str] = dataclasses.field(default_factory=list)   # per dynamo graph input
    num_outputs: int = 0
    shape_env: Any = None
    symbol_names: dict = dataclasses.field(default_factory=dict)       # torch symbol -> our name
    result_structure: list = dataclasses.field(default_factory=list)   # output port names
    no_grad_nodes: set = dataclasses.field(default_factory=set)       # Dynamo nodes run under no_grad




def _capture_rank(module, rank: int, world_size: int, joint: bool, dynamic: bool,
                  placements: dict | None = None) -> graph.RankGraph:
    import torch
    import torch.distributed as dist

    script_file = _script_file(module)
    torch._dynamo.reset()
    pg = False
    try:
        if world_size > 1:
            from torch.testing._internal.distributed.fake_pg import FakeStore
            dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world_size)
            pg = True
        model, inputs = _build(module, rank, world_size, script_file)
        if placements is not None:
            placements.update(_dtensor_placements(model, inputs, world_size))
        gm, info = _trace(model, inputs, module, joint, dynamic, script_file, rank)
        return _convert(gm, info, model, inputs, rank, script_file, joint, world_size)
    finally:
        torch._dynamo.reset()
        if pg:
            dist.destroy_process_group()


def _build(module, rank, world_size, script_file):
    import torch
    try:
        with torch.device("meta"):
            result = module.build(rank, world_size)
    except InputError:
        raise
    except Exception as e:
        raise CaptureError(f"build(rank={rank}, world_size={world_size}) failed: {type(e).__name__}: "
                           f"{_first_line(e)}{_user_frame_suffix(e, script_file)}") from e
    if not (isinstance(result, tuple) and len(result) == 2):
        raise CaptureError("build(rank, world_size) must return (model, inputs)")
    model, inputs = result
    if not isinstance(model, torch.nn.Module):
        raise CaptureError(f"build() returned a {type(model).__name__} as the model; expected a torch.nn.Module")
    if not isinstance(inputs, dict) or not all(isinstance(k, str) for k in inputs):
        raise CaptureError("build() must return the inputs as a dict {name: tensor}")
    for k, v in inputs.items():
        if not isinstance(v, torch.Tensor):
            raise CaptureError(f"input {k!r} is a {type(v).__name__}; inputs must be tensors")
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_.]*$", k):
            raise CaptureError(f"input name {k!r} must be an identifier")
    if any(p.device.type != "meta" for p in model.parameters()) or \
            any(b.device.type != "meta" for b in model.buffers()):
        model = model.to("meta")
    import inspect
    try:
        inspect.signature(model.forward).bind(**inputs)
    except TypeError as e:
        raise CaptureError(f"{type(model).__name__}.forward cannot be called with the inputs "
                           f"{sorted(inputs)} by name: {e}") from None
    except ValueError:
        pass  # no introspectable signature: let Dynamo try
    moved = {}
    for k, v in inputs.items():
        if v.device.type != "meta":
            v = v.detach().to("meta").requires_grad_(v.requires_grad)
        moved[k] = v
    return model, moved


def _trace(model, inputs, module, joint, dynamic, script_file, rank):
    """Run Dynamo + AOTAutograd; return the captured ATen GraphModule and what the backend saw."""
    import torch
    from functorch.compile import default_partition, make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    info = _DynamoInfo()
    captured: dict[str, Any] = {}
    fake_mode, inputs = _to_fake_cpu(model, inputs)
    port_of_id = {}
    for fqn, p in model.named_parameters(remove_duplicate=True):
        port_of_id.setdefault(id(p), f"param:{fqn}")
    for fqn, b in model.named_buffers(remove_duplicate=True):
        port_of_id.setdefault(id(b), f"buffer:{fqn}")
    for name, t in inputs.items():
        port_of_id.setdefault(id(t), f"input:{name}")

    if dynamic:
        dims = getattr(module, "DYNAMIC_DIMS", None)
        for name, t in inputs.items():
            if dims is None:
                for d in range(t.dim()):
                    torch._dynamo.maybe_mark_dynamic(t, d)
            else:
                for d in dims.get(name, ()):
                    torch._dynamo.mark_dynamic(t, d)

    def backend(gm, example_inputs):
        try:
            info.shape_env = torch._guards.TracingContext.get().fake_mode.shape_env
        except AttributeError:
            info.shape_env = None
        info.port_names = _dynamo_port_names(gm, port_of_id)
        out = next(n for n in gm.graph.nodes if n.op == "output")
        info.num_outputs = len(out.args[0]) if isinstance(out.args[0], (tuple, list)) else 1
        enabled = joint
        for n in gm.graph.nodes:
            if n.op == "call_function" and n.target is torch._C._set_grad_enabled and n.args:
                enabled = bool(n.args[0])
            elif not enabled:
                info.no_grad_nodes.add(n.name)

        def fw_compiler(g, _example):
            captured.setdefault("forward", g)

            def run(*args):   # the graph runs once, on fake tensors: what it creates is fake too
                with fake_mode:
                    return g.forward(*args)
            return make_boxed_func(run)

        def partition_fn(g, joint_inputs, **kw):
            captured["joint"] = g
            return default_partition(g, joint_inputs, **kw)

        return aot_autograd(fw_compiler=fw_compiler, bw_compiler=fw_compiler,
                            partition_fn=partition_fn)(gm, example_inputs)

    compiled = torch.compile(model, backend=backend, fullgraph=True, dynamic=None if dynamic else False)
    grad_ctx = contextlib.nullcontext() if joint else torch.no_grad()
    # point-to-point ops (dist.isend / irecv / batch_isend_irecv) trace only with this flag;
    # receives whose value torch's tracing drops are refused (_check_received_values_read)
    p2p = torch._dynamo.config.patch(enable_p2p_compilation=True)
    try:
        with grad_ctx, p2p, _quiet_torch_logs(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = compiled(**inputs)
    except InputError:
        raise
    except Exception as e:
        raise _capture_error(e, script_file, rank) from None
    for w in caught:
        m = _NO_AUTOGRAD_KERNEL.search(str(w.message))
        if m and joint:
            raise CaptureError(
                f"rank {rank}: the backward of {m.group(1)} is missing: torch has no autograd kernel "
                f"for it on the capture device, so the gradients flowing through it would be dropped")
        if not m:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    key = "joint" if joint else "forward"
    if key not in captured:
        if joint:
            raise CaptureError("joint capture requested, but no parameter or input requires grad, "
                               "so there is no backward graph")
        raise CaptureError("the program produced no graph (does forward compute anything?)")
    info.result_structure = _output_names(result, info.num_outputs)
    return captured[key], info


def _check_received_values_read(g: graph.RankGraph) -> None:
    """A point-to-point receive whose received tensor nothing reads, while the program reads the
    buffer it received into, is refused.

    ``dist.irecv(buf, src).wait()`` traces (torch 2.13) to an ``irecv`` whose result only
    ``wait_tensor`` reads, while the program's later reads of ``buf`` read the buffer as it was
    before: the received value is silently dropped.  ``dist.batch_isend_irecv`` and the return
    value of ``funcol.irecv_inplace`` keep it."""
    users = g.users()
    returned = {p.node for p in g.outputs}

    def read(name):      # returned, or read by something other than a chain of wait_tensor
        return name in returned or any(
            read(u) if ops.is_wait(g.node(u).target) else True
            for u in users.get(name, ()))

    def buffer_read_elsewhere(buf, n):     # the program reads the buffer it received into
        return isinstance(buf, graph.Ref) and any(u != n.name for u in users.get(buf.name, ()))

    for n in g.nodes:
        if n.target == ops.IRECV and n.args:
            lost = not read(n.name) and buffer_read_elsewhere(n.args[0], n)
        elif n.target == ops.BATCH_P2P and len(n.args) > 3 \
                and isinstance(n.args[0], (list, tuple)) and isinstance(n.args[3], (list, tuple)):
            got = {g.node(u).args[1]: u for u in users.get(n.name, ()) if g.node(u).target == "getitem"}
            lost = any(k == "irecv" and not (i in got and read(got[i])) and buffer_read_elsewhere(buf, n)
                       for i, (k, buf) in enumerate(zip(n.args[0], n.args[3])))
        else:
            continue
        if lost:
            where = f" at {n.source}" if n.source else ""
            raise CaptureError(
                f"rank {g.rank}: the tensor received by {n.name} ({n.target}){where} is never read: torch's "
                f"tracing of dist.irecv drops the received value (later reads of the buffer see what it "
                f"held before), so the graph would not be the program; receive with "
                f"dist.batch_isend_irecv([dist.P2POp(dist.irecv, buf, src)]) or use the tensor "
                f"funcol.irecv_inplace returns")


_NO_AUTOGRAD_KERNEL = re.compile(r"(\S+): an autograd kernel was not registered")


def _to_fake_cpu(model, inputs):
    """Swap the model's tensors and the inputs (built on ``meta``) for fake CPU tensors.

    Tracing on ``meta`` loses backward formulas: torch registers Python meta kernels for some
    CompositeImplicitAutograd ops (``nll_loss``, ``var``, ``dropout``, ...), which then skip autograd
    on ``meta``.  On (fake) CPU these ops decompose as in eager CPU and differentiate.  Tensors the
    forward creates without a device (``torch.ones(s, s)``) land on CPU, like the parameters.
    Fake tensors hold no memory and run no kernels.  Tied tensors stay tied.
    """
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    done: dict[int, Any] = {}

    def fake(t, param=False):
        if id(t) not in done:
            if _is_dtensor(t):     # a DTensor keeps its mesh and placements around a fake local tensor
                f = _fake_dtensor(t, mode)
            else:
                with mode:
                    f = torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device="cpu")
            if param:
                f = torch.nn.Parameter(f, requires_grad=t.requires_grad)
            else:
                f.requires_grad_(t.requires_grad)
            done[id(t)] = f
        return done[id(t)]

    for mod in model.modules():
        for k, p in list(mod._parameters.items()):
            if p is not None:
                mod._parameters[k] = fake(p, param=True)
        for k, b in list(mod._buffers.items()):
            if b is not None:
                mod._buffers[k] = fake(b)
        for k, v in list(vars(mod).items()):   # plain tensor attributes (not registered)
            if isinstance(v, torch.Tensor) and not isinstance(v, torch.nn.Parameter) and v.device.type == "meta":
                setattr(mod, k, fake(v))
    return mode, {k: fake(v) for k, v in inputs.items()}


# ----------------------------------------------------------------------------- DTensor

# Bundle meta key: {port: relation text} for the inputs a DTensor program holds as DTensors, read
# from their placements (``Shard(d)`` -> ``shard(d)``, ``Replicate()`` -> ``replicate``,
# ``Partial()`` -> ``partial``).  ``entangle check`` takes an input's relation from here when the
# spec does not give one, and prints it for review like a relation inferred from shapes.  A
# placement the spec language cannot say (an N-D or partial mesh, a strided shard, Partial(avg))
# is recorded as ``unmapped: <why>``: the spec must then give that input's relation.
DTENSOR_PLACEMENTS = "dtensor_placements"


def _dtensor_placements(model, inputs, world_size) -> dict[str, str]:
    items = [(f"param:{n}", p) for n, p in model.named_parameters(remove_duplicate=True)]
    items += [(f"buffer:{n}", b) for n, b in model.named_buffers(remove_duplicate=True)]
    items += [(f"input:{k}", v) for k, v in inputs.items()]
    return {port: _placement_text(t, world_size) for port, t in items if _is_dtensor(t)}


def _placement_text(t, world_size) -> str:
    from torch.distributed.tensor import Partial, Replicate, Shard
    mesh = t.device_mesh
    ranks = mesh.mesh.flatten().tolist()
    if mesh.ndim != 1 or ranks != list(range(world_size)):
        return f"unmapped: a DTensor on the mesh {mesh.mesh.tolist()} (only a 1-D mesh of every rank in order maps to a placement)"
    (p,) = t.placements
    if type(p) is Shard:
        return f"shard({p.dim})"
    if type(p) is Replicate:
        return "replicate"
    if type(p) is Partial and p.reduce_op in ("sum", "max"):
        return "partial" if p.reduce_op == "sum" else "partial(max)"
    return f"unmapped: placement {p} has no spec form"


def _merge_placements(per_rank: list[dict]) -> dict[str, str]:
    out = {}
    for port in sorted(set().union(*per_rank)):
        texts = {d.get(port) for d in per_rank if port in d}
        out[port] = texts.pop() if len(texts) == 1 else "unmapped: the ranks' placements differ"
    return out


def _is_opaque_object(v) -> bool:
    """A graph input that is an opaque script object (torch 2.13 passes a DeviceMesh so)."""
    import torch
    return not isinstance(v, (torch.Tensor, torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)) \
        and v is not None


def _is_dtensor(t) -> bool:
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:
        return False
    return isinstance(t, DTensor)


def _fake_dtensor(t, mode):
    """A DTensor (built on ``meta``) as the same DTensor over a fake CPU local tensor."""
    import torch
    from torch.distributed.tensor import DTensor
    local = t._local_tensor
    with mode:
        f = torch.empty_strided(tuple(local.shape), tuple(local.stride()), dtype=local.dtype, device="cpu")
    return DTensor.from_local(f, t.device_mesh, t.placements, run_check=False, shape=t.shape, stride=t.stride())


@contextlib.contextmanager
def _quiet_torch_logs():
    """Torch logs a traceback for a failing fake-tensor call; we report the error in one line."""
    import logging
    loggers = [logging.getLogger(n) for n in ("torch._subclasses.fake_tensor", "torch._dynamo",
                                               "torch.fx.experimental.symbolic_shapes")]
    old = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, lvl in zip(loggers, old):
            lg.setLevel(lvl)


def _dynamo_port_names(gm, port_of_id) -> list[str]:
    """Stable port names for the inputs of Dynamo's graph, in order (AOT's PlainAOTInput idx)."""
    import torch
    from torch._dynamo.source import TensorProperty, TensorPropertySource
    names, by_source = [], {}
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for n in phs:
        ga = n.meta.get("grapharg")
        ex = ga.example if ga is not None else None
        if isinstance(ex, torch.Tensor):
            name = port_of_id.get(id(ex))
            if name is None:
                src = ga.source.name if ga is not None and ga.source is not None else n.name
                src = src() if callable(src) else src
                name = "const:" + _sanitize(src)
            by_source[_source_name(ga)] = name
        names.append(name if isinstance(ex, torch.Tensor) else None)
    for i, n in enumerate(phs):
        if names[i] is not None:
            continue
        ga = n.meta.get("grapharg")
        src = ga.source if ga is not None else None
        if isinstance(src, TensorPropertySource):
            base = by_source.get(_source_name_of(src.base), "const:" + _sanitize(_source_name_of(src.base)))
            prop = {TensorProperty.SIZE: "size", TensorProperty.STRIDE: "stride"}.get(src.prop, "storage_offset")
            names[i] = f"{prop}:{base}" + (f":{src.idx}" if src.idx is not None else "")
        else:
            names[i] = "sym:" + _sanitize(_source_name_of(src) if src is not None else n.name)
    return names


def _source_name_of(src) -> str:
    name = getattr(src, "name", None)
    name = name() if callable(name) else name
    return str(name)


def _source_name(ga) -> str:
    return _source_name_of(ga.source) if ga is not None and ga.source is not None else ""


def _sanitize(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.:\[\]]+", "_", s).strip("_") or "anon"


def _output_names(result, num_graph_outputs: int) -> list[str]:
    import torch
    if isinstance(result, torch.Tensor):
        names = ["out"]
    elif isinstance(result, (tuple, list)) and all(isinstance(x, torch.Tensor) for x in result):
        names = [f"out:{i}" for i in range(len(result))]
    elif isinstance(result, dict) and all(isinstance(x, torch.Tensor) and isinstance(k, str) for k, x in result.items()):
        names = [f"out:{k}" for k in result]
    else:
        raise CaptureError(f"forward returned {type(result).__name__}; capture supports a tensor, "
                           f"a tuple/list of tensors, or a dict of tensors")
    if len(names) != num_graph_outputs:
        raise CaptureError(
            f"forward returns {len(names)} tensor(s) but the captured graph computes {num_graph_outputs}: "
            f"returning an input unchanged, or the same tensor twice, is not supported")
    return names


# ----------------------------------------------------------------------------- errors

def _capture_error(e: BaseException, script_file: str | None, rank: int) -> CaptureError:
    """Turn a Dynamo/AOTAutograd exception into one line: the construct and the user's file:line."""
    import torch._dynamo.exc as dexc
    inner = e
    while isinstance(inner, dexc.BackendCompilerFailed) and getattr(inner, "inner_exception", None) is not None:
        inner = inner.inner_exception
    if isinstance(inner, InputError):
        return inner if isinstance(inner, CaptureError) else CaptureError(str(inner))
    where = _exc_location(inner, script_file)
    x = inner.__cause__ or inner.__context__
    while not where and x is not None:
        where = _exc_location(x, script_file)
        x = x.__cause__ or x.__context__
    what = getattr(inner, "gb_type", None)
    text = getattr(inner, "msg", None) or str(inner)
    explanation = ""
    m = re.search(r"Explanation:\s*(.+)", text)
    if m:
        explanation = m.group(1).strip()
    raised = _user_visible_exception(inner)
    if raised is not None:   # the program raised (e.g. a collective given a bad group): torch's words
        head = f"capture failed: {raised}"
        detail = ""
    elif isinstance(inner, dexc.Unsupported):
        head = f"graph break: {what or _first_line(inner)}"
        detail = explanation or ""
    elif "data-dependent" in text or "DATA_DEPENDENT" in str(getattr(inner, "error_type", "")):
        head = ("graph break: data-dependent value (a tensor's contents used as a Python number or "
                "condition: .item(), int(t), bool(t), a size computed from values)")
        m = re.search(r"data-dependent expression (.+?) \(", text)
        detail = f"the expression {m.group(1)} cannot be known at capture time" if m else ""
    elif isinstance(inner, dexc.UserError):
        head = f"unsupported construct: {_first_line(inner)}"
        detail = ""
    else:
        m = re.search(r"got (\w+(?:Error|Exception))\((['\"])(.*?)\2\)", text)
        if m:      # an error raised while running an op on fake tensors (e.g. a shape mismatch)
            head = f"capture failed: {m.group(1)}: {m.group(3)}"
        else:
            head = f"capture failed: {type(inner).__name__}: {_first_line(inner)}"
        detail = ""
    loc = f" at {where}" if where else ""
    tail = f" -- {detail}" if detail and detail not in head else ""
    return CaptureError(f"rank {rank}: {head}{loc}{tail}")


_OBSERVED = re.compile(r"raised exception (\w+)\((.*)\)\s*$", re.S)


def _user_visible_exception(e: BaseException) -> str | None:
    """``Type: message`` of an exception the traced program itself raised, as torch words it.

    Dynamo reports it wrapped: as an ``Observed exception`` graph break (the exception raised inside
    traced code) or as an ``InternalTorchDynamoError`` (raised while Dynamo ran a torch function).
    An exception without a message is named with the torch function that raised it.
    """
    import ast
    import torch._dynamo.exc as dexc
    chain, x = [], e
    while x is not None and x not in chain and len(chain) < 16:
        chain.append(x)
        x = x.__cause__ or x.__context__
    for x in chain:
        if isinstance(x, dexc.ObservedException):
            m = _OBSERVED.search(str(x))
            if not m:
                continue
            typ, arg = m.group(1), m.group(2).strip()
            with contextlib.suppress(ValueError, SyntaxError):
                arg = str(ast.literal_eval(arg)) if arg else ""
            frames = [(f.filename, f.lineno, f.name) for f in getattr(x, "real_stack", None) or []]
            return _exception_text(typ, arg, frames)
        if isinstance(x, Exception) and not isinstance(x, dexc.TorchDynamoException) and x is not e \
                and isinstance(e, dexc.InternalTorchDynamoError):
            import traceback
            msg = str(x).split("\n\nfrom user code:")[0].strip()
            frames = [(f.filename, f.lineno, f.name) for f in traceback.extract_tb(x.__traceback__)]
            return _exception_text(type(x).__name__, msg, frames)
    return None


def _exception_text(typ: str, msg: str, frames) -> str:
    lines = [ln.strip() for ln in msg.splitlines() if ln.strip()]
    msg = " ".join(lines)[:400]
    if msg:
        text = f"{typ}: {msg}"
    else:
        lib = [f for f in frames if _is_library(f[0]) and "_dynamo" not in f[0]]
        where = ""
        if lib:
            f = lib[-1]
            path = Path(f[0])
            shown = next((path.relative_to(Path(d).parent).as_posix() for d in _torch_dirs()[:1]
                          if str(path.resolve()).startswith(d)), path.name)
            where = f" by {f[2]} ({shown}:{f[1]})"
        text = f"{typ} (torch gives no message) raised{where}"
    if re.search(r"\bgroup\b", msg) and re.search(r"-100\b", msg):
        text += (" [-100 is GroupMember.NON_GROUP_MEMBER: dist.new_group returns it on ranks outside "
                 "the group, so this rank calls a collective of a group it is not in]")
    return text


def _exc_location(e: BaseException, script_file: str | None) -> str:
    frames = []
    for f in getattr(e, "real_stack", None) or []:
        frames.append((f.filename, f.lineno, f.name, f.line or ""))
    if not frames:
        import traceback
        frames = [(f.filename, f.lineno, f.name, f.line or "") for f in traceback.extract_tb(e.__traceback__)]
    pick = _pick_frame(frames, script_file)
    if pick is None:
        f = getattr(e, "innermost_user_frame_summary", None)
        if f is not None and not _is_library(f.filename):
            pick = (f.filename, f.lineno, f.name, f.line or "")
    if pick is None:
        return ""
    code = (pick[3] or "").strip()
    return f"{_display_path(pick[0])}:{pick[1]} in {pick[2]}" + (f": {code}" if code else "")


# ----------------------------------------------------------------------------- source frames

_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)\s*$')


def _torch_dirs() -> tuple[str, ...]:
    import torch
    dirs = [str(Path(torch.__file__).resolve().parent)]
    with contextlib.suppress(ImportError):
        import functorch
        dirs.append(str(Path(functorch.__file__).resolve().parent))
    dirs.append(str(Path(contextlib.__file__).resolve().parent))  # the standard library
    return tuple(dirs)


def _is_library(path: str) -> bool:
    if path.startswith("<"):
        return True
    try:
        p = str(Path(path).resolve())
    except OSError:
        p = path
    return p.startswith(_torch_dirs()) or p.startswith(str(Path(__file__).resolve().parent))


def _pick_frame(frames, script_file: str | None):
    """Innermost frame in the script; else innermost frame outside torch and the stdlib."""
    def same(f):
        try:
            return script_file is not None and str(Path(f).resolve()) == script_file
        except OSError:
            return False
    for f in reversed(frames):
        if same(f[0]):
            return f
    for f in reversed(frames):
        if not _is_library(f[0]):
            return f
    return None


def parse_stack_trace(text: str | None):
    """FX ``stack_trace`` text -> [(file, line, fn, code)], outermost first."""
    if not text:
        return []
    frames, lines = [], text.splitlines()
    for i, ln in enumerate(lines):
        m = _FRAME.match(ln)
        if m:
            code = lines[i + 1].strip() if i + 1 < len(lines) and not _FRAME.match(lines[i + 1]) else ""
            frames.append((m.group("file"), int(m.group("line")), m.group("fn"), code))
    return frames


# ----------------------------------------------------------------------------- conversion

class _Converter:
    def __init__(self, info: _DynamoInfo, script_file, rank):
        self.info = info
        self.script_file = script_file
        self.rank = rank
        self.sym_exprs: dict[str, Any] = {}       # inlined SymInt arithmetic nodes: name -> expr
        self.torch_syms: dict[Any, sympy.Symbol] = {}
        self.used: dict[str, sympy.Symbol] = {}   # our symbol name -> symbol
        self._frame_cache: dict[str, graph.Source | None] = {}

    # ---- symbols
    def symbol(self, s) -> sympy.Symbol:
        if s not in self.torch_syms:
            name = self.info.symbol_names.get(s, s.name)
            self.torch_syms[s] = symbolic.make_symbol(name)
            self.used[name] = self.torch_syms[s]
        return self.torch_syms[s]

    def expr(self, e):
        """A torch ShapeEnv expression -> ours (symbols renamed, whitelisted constructors only)."""
        if isinstance(e, bool) or e is sympy.true or e is sympy.false:
            return sympy.true if e else sympy.false
        if isinstance(e, int):
            return sympy.Integer(int(e))
        se = self.info.shape_env
        if se is not None:
            with contextlib.suppress(Exception):
                e = se.replace(e)
        if getattr(e, "is_Integer", False):
            return sympy.Integer(int(e))
        subs = {s: self.symbol(s) for s in e.free_symbols}
        try:
            text_expr = e.xreplace({s: sympy.Symbol(v.name) for s, v in subs.items()})
            return symbolic.from_torch(text_expr, self.used)
        except symbolic.SymbolicError as err:
            raise CaptureError(f"rank {self.rank}: {err}") from None

    def symint(self, v):
        import torch
        if isinstance(v, (torch.SymInt, torch.SymBool)):
            return self.expr(v.node.expr)
        if isinstance(v, bool):
            return sympy.true if v else sympy.false
        return sympy.Integer(int(v))

    # ---- values
    def val(self, v):
        import torch
        if v is None:
            return None
        if isinstance(v, torch.Tensor):
            shape = []
            for d in v.shape:
                e = self.symint(d)
                shape.append(int(e) if e.is_Integer else e)
            return graph.TensorMeta(tuple(shape), _dtype_name(v.dtype))
        if isinstance(v, torch.SymInt):
            return graph.SymIntMeta(self.symint(v))
        if isinstance(v, (torch.SymFloat, torch.SymBool)):
            return graph.ScalarMeta("float" if isinstance(v, torch.SymFloat) else "bool")
        if isinstance(v, bool):
            return graph.ScalarMeta("bool")
        if isinstance(v, int):
            return graph.SymIntMeta(sympy.Integer(v))
        if isinstance(v, float):
            return graph.ScalarMeta("float")
        if isinstance(v, (tuple, list)):
            return tuple(self.val(x) for x in v)
        return None

    # ---- arguments
    def arg(self, a):
        import torch
        import torch.fx as fx
        if isinstance(a, fx.Node):
            if a.name in self.sym_exprs:
                return self.sym_exprs[a.name]
            return graph.Ref(a.name)
        if a is None or isinstance(a, bool):
            return a
        if isinstance(a, str):
            return str(a)
        if isinstance(a, int):
            return int(a)
        if isinstance(a, float):
            return float(a)
        if isinstance(a, (torch.SymInt, torch.SymBool)):
            e = self.symint(a)
            return int(e) if getattr(e, "is_Integer", False) else e
        if isinstance(a, (list, tuple)):
            return [self.arg(x) for x in a]
        if isinstance(a, torch.dtype):
            return graph.TorchConst("dtype", _dtype_name(a))
        if isinstance(a, torch.device):
            return graph.TorchConst("device", str(a))
        if isinstance(a, torch.layout):
            return graph.TorchConst("layout", str(a).removeprefix("torch."))
        if isinstance(a, torch.memory_format):
            return graph.TorchConst("memory_format", str(a).removeprefix("torch."))
        if isinstance(a, torch._ops.OpOverload):   # the op a higher-order op wraps (auto_functionalized)
            return graph.check_target(str(a))
        raise CaptureError(f"rank {self.rank}: unsupported argument {a!r} of type {type(a).__name__}")

    # ---- provenance
    def source(self, node) -> graph.Source | None:
        trace = node.meta.get("stack_trace")
        if not trace:
            return None
        if trace not in self._frame_cache:
            pick = _pick_frame(parse_stack_trace(trace), self.script_file)
            self._frame_cache[trace] = None if pick is None else graph.Source(
                _display_path(pick[0]), pick[1], pick[2], pick[3])
        return self._frame_cache[trace]

    def module(self, node) -> str | None:
        stack = node.meta.get("nn_module_stack")
        if not stack:
            return None
        # The keys are module ids at trace time (not reliable afterwards); use the access path.
        value = list(stack.values())[-1]
        path = value[0] if isinstance(value, tuple) else str(value)
        return _dynamo_path_to_fqn(path) or None


def _dynamo_path_to_fqn(path: str) -> str:
    """"L['self'].layers[0]._modules['fc1']" -> "layers.0.fc1"."""
    path = re.sub(r"^L\['[^']*'\]", "", path)
    parts = re.findall(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\['([^']*)'\]", path)
    out = []
    for attr, idx, key in parts:
        tok = attr or idx or key
        if tok in ("_modules",):
            continue
        out.append(tok)
    return ".".join(out)


def _dtype_name(dt) -> str:
    return str(dt).removeprefix("torch.")


def _is_sym_arith(node) -> bool:
    """Python-level arithmetic on symbolic sizes (``operator.mul(s0, s1)``, ``sym_max``, ...).

    Such nodes are not stored: their value is a size expression, which replaces every reference.
    """
    import torch
    if node.op != "call_function" or isinstance(node.target, (torch._ops.OpOverload, torch._ops.HigherOrderOperator)):
        return False
    return isinstance(node.meta.get("val"), (torch.SymInt, torch.SymBool, int))


def _target_name(node) -> str:
    import torch
    t = node.target
    if isinstance(t, torch._ops.OpOverload):
        return str(t)
    if t is operator.getitem:
        return "getitem"
    if isinstance(t, torch._ops.HigherOrderOperator):
        return f"higher_order.{t.name()}"
    raise CaptureError(f"unsupported operation {getattr(t, '__name__', t)!r} in the captured graph")


def _convert(gm, info: _DynamoInfo, model, inputs, rank, script_file, joint, world_size) -> graph.RankGraph:
    import torch
    from torch._functorch._aot_autograd import descriptors as D

    info.symbol_names = _symbol_names(info, inputs)
    conv = _Converter(info, script_file, rank)
    out_names = info.result_structure
    nodes: list[graph.Node] = []
    ports_in: list[graph.Port] = []
    ports_out: list[graph.Port] = []
    groups: dict[str, list[int]] = {}

    def plain_in_name(desc) -> str:
        if isinstance(desc, D.PlainAOTInput):
            return info.port_names[desc.idx]
        if isinstance(desc, D.ParamAOTInput):
            return f"param:{desc.target}"
        if isinstance(desc, D.BufferAOTInput):
            return f"buffer:{desc.target}"
        if isinstance(desc, D.SubclassGetAttrAOTInput) and desc.attr == "_local_tensor":
            return plain_in_name(desc.base)     # a DTensor's local tensor: the rank's part of it
        raise CaptureError(f"rank {rank}: unsupported graph input kind {type(desc).__name__} ({desc})")

    def out_name(desc) -> str:
        if isinstance(desc, D.PlainAOTOutput):
            return out_names[desc.idx]
        if isinstance(desc, D.GradAOTOutput):
            p = plain_in_name(desc.grad_of)
            return "grad:" + (p[len("param:"):] if p.startswith("param:") else p)
        if isinstance(desc, D.InputMutationAOTOutput):   # e.g. a buffer updated in place
            return "mutated:" + plain_in_name(desc.mutated_input)
        if isinstance(desc, D.SubclassGetAttrAOTOutput) and desc.attr == "_local_tensor":
            return out_name(desc.base)          # a DTensor output (a parameter's gradient): its local tensor
        raise CaptureError(f"rank {rank}: unsupported graph output kind {type(desc).__name__} ({desc}); "
                           f"in-place updates of inputs are not supported")

    # Backward nodes carry no nn_module_stack; they share seq_nr with the forward op they belong to.
    module_of_seq = {}
    for n in gm.graph.nodes if joint else ():
        if n.meta.get("partitioner_tag") != "is_backward" and "seq_nr" in n.meta:
            module_of_seq.setdefault(n.meta["seq_nr"], conv.module(n))

    for n in gm.graph.nodes:
        if n.op == "placeholder":
            desc = n.meta.get("desc")
            if isinstance(desc, D.SubclassGetAttrAOTInput) and desc.attr != "_local_tensor":
                # a DTensor's other flattened attribute (its device mesh: an opaque object, not a
                # tensor); the graph must not compute with it
                if any(u.op != "output" for u in n.users) or isinstance(n.meta.get("val"), torch.Tensor):
                    raise CaptureError(f"rank {rank}: the graph reads {desc.expr()} of a tensor subclass "
                                       f"({type(n.meta.get('val')).__name__}); only its local tensor is supported")
                continue
            if isinstance(desc, D.TangentAOTInput):
                port = "tangent:" + out_name(desc.output)
            elif desc is not None:
                port = plain_in_name(desc)
            else:
                raise CaptureError(f"rank {rank}: graph input {n.name} has no descriptor")
            val = conv.val(n.meta.get("val"))
            if val is None and _is_opaque_object(n.meta.get("val")) and all(u.op == "output" for u in n.users):
                continue      # an opaque object nothing computes with (a DTensor hook's DeviceMesh)
            nodes.append(graph.Node(n.name, "placeholder", val=val))
            ports_in.append(graph.Port(port, n.name))
        elif n.op == "call_function":
            if _is_sym_arith(n):
                conv.sym_exprs[n.name] = conv.symint(n.meta["val"])
                continue
            target = _target_name(n)
            args = tuple(conv.arg(a) for a in n.args)
            kwargs = {k: conv.arg(v) for k, v in n.kwargs.items()}
            if isinstance(n.target, torch._ops.OpOverload) and n.target.namespace in ops.COLLECTIVE_NAMESPACES:
                _record_groups(n, groups, rank, conv.source(n))
            module = conv.module(n)
            if module is None and n.meta.get("partitioner_tag") == "is_backward":
                module = module_of_seq.get(n.meta.get("seq_nr"))
            nodes.append(graph.Node(n.name, target, args, kwargs, conv.val(n.meta.get("val")),
                                    conv.source(n), module))
        elif n.op == "output":
            outs = n.args[0]
            descs = n.meta.get("desc")
            outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
            if descs is None or len(descs) != len(outs):
                raise CaptureError(f"rank {rank}: graph outputs carry no descriptors")
            for o, desc in zip(outs, descs):
                if isinstance(desc, D.SubclassGetAttrAOTOutput):
                    if desc.attr != "_local_tensor":      # a DTensor's device mesh: not a tensor
                        continue
                    if o is not None:
                        ports_out.append(graph.Port(out_name(desc), o.name))
                        continue
                    desc = desc.base
                if o is None and isinstance(desc, D.GradAOTOutput):
                    _check_no_gradient_is_needed(gm, desc, outs, descs, out_name(desc), rank,
                                                 info.no_grad_nodes)
                if desc is None or o is None:
                    continue
                if isinstance(desc, (D.GradAOTOutput, D.PlainAOTOutput, D.InputMutationAOTOutput)):
                    if not hasattr(o, "name"):
                        continue
                    ports_out.append(graph.Port(out_name(desc), o.name))
                else:
                    out_name(desc)  # raises
        elif n.op == "get_attr":
            raise CaptureError(f"rank {rank}: the captured graph reads a constant tensor ({n.target}); "
                               f"create constants from inputs or register them as buffers")
        else:
            raise CaptureError(f"rank {rank}: unsupported graph node {n.op} {n.target}")

    symbols, guards = _symbols_and_guards(conv, info)
    return graph.RankGraph(rank=rank, nodes=nodes, inputs=ports_in, outputs=ports_out,
                           groups=groups, symbols=symbols, guards=guards)


def _check_no_gradient_is_needed(gm, desc, outs, descs, grad_port, rank, no_grad_nodes=()):
    """A gradient AOTAutograd left out (None) must be one no output depends on differentiably.

    A backward that silently went missing (an op without an autograd formula on the capture device)
    shows up exactly so: the parameter feeds an output through floating-point ops but gets no gradient.
    Paths through ``detach``, through non-floating values (comparisons, indices) or through ops run
    under ``torch.no_grad()`` in forward (``no_grad_nodes``: Dynamo node names) do not count.
    """
    import torch
    from torch._functorch._aot_autograd import descriptors as D
    ph = next((n for n in gm.graph.nodes if n.op == "placeholder" and n.meta.get("desc") == desc.grad_of), None)
    if ph is None:
        return
    targets = {o for o, d in zip(outs, descs) if o is not None and not isinstance(d, D.GradAOTOutput)}

    def under_no_grad(n):
        src = n.meta.get("from_node")
        return bool(src) and src[-1].name in no_grad_nodes

    def floating(n):
        v = n.meta.get("val")
        if isinstance(v, (tuple, list)):
            return any(isinstance(x, torch.Tensor) and x.is_floating_point() for x in v)
        return isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex())

    parent = {ph: None}
    todo, hit = [ph], None
    while todo and hit is None:
        n = todo.pop()
        for u in n.users:
            if u in parent or u.op != "call_function" or u.meta.get("partitioner_tag") == "is_backward":
                continue
            if u.target is torch.ops.aten.detach.default or not floating(u) or under_no_grad(u):
                continue
            parent[u] = n
            if u in targets:
                hit = u
                break
            todo.append(u)
    if hit is None:
        return
    path, n = [], hit
    while n is not None and n is not ph:
        if n.target is not operator.getitem:
            path.append(_target_name(n).removeprefix("aten.").removesuffix(".default"))
        n = parent[n]
    path.reverse()
    shown = " -> ".join(path if len(path) <= 8 else path[:3] + ["..."] + path[-4:])
    raise CaptureError(
        f"rank {rank}: joint capture: {grad_port[len('grad:'):]} feeds the output through {shown} but "
        f"gets no gradient ({grad_port} is missing): the backward of one of these ops was dropped "
        f"(no autograd formula on the capture device)")


def _custom_op_schemas(ranks) -> dict:
    """{target: schema} of every custom op (a plugin namespace) the graphs call, directly or
    wrapped by auto_functionalized, as this process has it registered."""
    import torch
    out = {}
    for g in ranks:
        for n in g.nodes:
            for t in (n.target, n.args[0] if n.target in ops.AUTO_FUNCTIONALIZED and n.args else None):
                if isinstance(t, str) and ops.namespace(t) in ops.PLUGIN_NAMESPACES and t not in out:
                    ns, name, overload = t.split(".")
                    out[t] = str(getattr(getattr(getattr(torch.ops, ns), name), overload)._schema)
    return out


def _record_groups(n, groups, rank, src=None):
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _resolve_process_group
    schema = n.target._schema
    for i, a in enumerate(schema.arguments):
        if a.name != "group_name":
            continue
        name = n.kwargs.get("group_name", n.args[i] if i < len(n.args) else None)
        if not isinstance(name, str) or name in groups:
            continue
        try:
            pg = _resolve_process_group(name)
            groups[name] = list(dist.get_process_group_ranks(pg))
        except Exception as e:  # noqa: BLE001 - report which group could not be resolved
            at = f" at {src.file}:{src.line}" + (f": {src.code}" if src.code else "") if src else ""
            raise CaptureError(f"rank {rank}: cannot resolve process group {name!r} of {n.target}: "
                               f"{type(e).__name__}: {_first_line(e)}{at}") from None


def _symbol_names(info: _DynamoInfo, inputs) -> dict:
    """Rename ShapeEnv symbols (s0, s77, ...) after the input dim they stand for: ``x_size0``."""
    se = info.shape_env
    if se is None:
        return {}
    from torch._dynamo.source import TensorProperty, TensorPropertySource
    names, taken = {}, set()
    for sym, sources in getattr(se, "var_to_sources", {}).items():
        new = None
        for src in sources:
            if isinstance(src, TensorPropertySource) and src.prop is TensorProperty.SIZE:
                base = _source_name_of(src.base)
                m = re.fullmatch(r"L\['([A-Za-z_][A-Za-z0-9_]*)'\]", base)
                if m:
                    new = f"{m.group(1)}_size{src.idx}"
                    break
        if new is None or new in taken:
            continue
        taken.add(new)
        names[sym] = new
    return names


def _symbols_and_guards(conv: _Converter, info: _DynamoInfo):
    se = info.shape_env
    if se is None or not conv.used:
        return {}, []
    inv = {v.name: k for k, v in conv.torch_syms.items()}
    symbols = {}
    for name in sorted(conv.used):
        tsym = inv[name]
        rng = se.var_to_range.get(tsym)
        lo = hi = None
        if rng is not None:
            lo = _range_end(rng.lower)
            hi = _range_end(rng.upper)
        symbols[name] = (lo, hi)
    guards = []
    known = set(conv.torch_syms)
    seen = set()
    for g in getattr(se, "guards", []):
        e = g.expr
        with contextlib.suppress(Exception):
            e = se.simplify(e)
        if e is sympy.true or e is True or not getattr(e, "free_symbols", None):
            continue
        if not e.free_symbols <= known:
            continue
        try:
            ours = conv.expr(e)
        except CaptureError:
            continue
        if ours is sympy.true:
            continue
        text = symbolic.to_text(ours)
        if text not in seen:
            seen.add(text)
            guards.append(ours)
    return symbols, guards


def _range_end(x):
    try:
        if x.is_finite and x.is_Integer:
            return int(x)
    except AttributeError:
        pass
    return None


# ----------------------------------------------------------------------------- committed examples

def capture_pair(script, world_size: int, joint: bool = False, dynamic: bool = False):
    """(sequential bundle, distributed bundle) of one script: world size 1 and ``world_size``."""
    return (capture(script, 1, joint=joint, dynamic=dynamic),
            capture(script, world_size, joint=joint, dynamic=dynamic))


def regenerate_examples(script, graphs, root=None) -> None:
    """Write ``graphs/<dir>/{seq.pt,dist.pt,spec.toml}`` for an example's ``GRAPHS`` table.

    ``graphs`` holds ``(dir, world_size, joint, dynamic, spec_text)``.  Paths in the bundles are
    stored relative to the repository root (the parent of ``examples/``).
    """
    script = Path(script).resolve()
    root = Path(root) if root is not None else script.parent.parent
    old = os.getcwd()
    os.chdir(root)
    try:
        for d, world_size, joint, dynamic, spec in graphs:
            t0 = time.perf_counter()
            seq, dist_b = capture_pair(script, world_size, joint=joint, dynamic=dynamic)
            out = root / "graphs" / d
            out.mkdir(parents=True, exist_ok=True)
            graph.save(seq, out / "seq.pt")
            graph.save(dist_b, out / "dist.pt")
            (out / "spec.toml").write_text(spec)
            print(f"graphs/{d}: seq {len(seq.rank(0).nodes)} nodes, dist {world_size} x "
                  f"{len(dist_b.rank(0).nodes)} nodes ({time.perf_counter() - t0:.1f} s)")
    finally:
        os.chdir(old)
