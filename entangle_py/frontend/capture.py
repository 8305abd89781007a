"""Capture a sequential or multi-rank PyTorch program into a graph bundle.

Script contract
===============

A capture script is a Python file that defines::

    def build(rank: int, world_size: int) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]

``build`` returns the model *as rank ``rank`` of ``world_size`` holds it* (its parameter shards)
and the user inputs of one forward call, by name: the model is called as ``model(**inputs)``.
A target names the build function another way: ``prog.py:NAME`` (a file naming several
programs' builders) or ``package.module:NAME`` (``capture_target.py``).

* ``world_size == 1`` is the sequential program (the specification): no process group exists and
  the model must not call collectives (Megatron's parallel layers at TP=1 behave like plain ones).
* ``world_size > 1``: every rank is simulated with torch's fake process group
  (``dist.init_process_group("fake", ...)``): ``dist.get_rank()``, ``dist.group.WORLD`` and
  collectives (``dist.*``, functional collectives, inside ``torch.autograd.Function`` or not) all
  work and are recorded, nothing is communicated.
* Every rank (world size 1 too) is traced in a fresh process of its own (``rank_processes.py``:
  forked from a server that has imported torch and traced nothing), in parallel where cores
  allow: tracing leaves state in torch that ``torch._dynamo.reset()`` does not clear, and ranks
  traced one after another in one process leaked it (rank 1 of a DTensor
  ``ColwiseParallel(output_layouts=Replicate())`` layer took rank 0's half of the gradient).  The
  rank's process imports the script from its path; a module given to ``capture()`` is re-imported
  there (by name, or from its file), and a ``build`` no other process can import (a closure) is
  captured in forks of the calling process.  The error of the first failing rank (in rank order)
  is raised here as it was raised there; a rank's process that dies is reported
  (``RankProcessDied``), its output and warnings are relayed to this process.
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
recorded in the bundle's ``meta[DTENSOR_PLACEMENTS]`` as spec relations (``dtensor_plan.py``),
which ``entangle check`` uses for inputs the spec does not relate.

DistributedDataParallel (``DDP(net)`` in ``build``; see ``frontend/ddp.py``): captured as DDP's step
in graph ops -- each parameter read as ``funcol.broadcast`` from the DDP group's rank 0, buffers
copied from rank 0 before the forward, each gradient all-reduced (sum) over the group and divided
by its size.  A DDP wrapper is transparent in port names: ``DDP(net)``'s ``module.fc.weight`` is
``param:fc.weight`` (``self.ddp = DDP(net)``: ``param:ddp.fc.weight``), as in the sequential
program, which runs ``net`` itself (DDP needs a process group: ``DDP(net) if world_size > 1 else
net``).  Communication hooks, ``mixed_precision``, ``no_sync`` / ``join``, arguments not known to
leave the step unchanged, and DDP parameters read or held outside the wrapper are refused.

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
import json
import os
import re
import sys
import time
import types
import warnings
from pathlib import Path
from typing import Any

from entangle_py.errors import InputError
from entangle_py.frontend.capture_errors import (CaptureError, capture_error, collecting_notes, display_path,
                                                 first_line, merge_notes, quiet_torch_logs, user_frame_suffix)
from entangle_py.ir import graph, ops
from entangle_py.ir import bundle_meta
from entangle_py.frontend.capture_target import load_script, module_file, parse_target  # noqa: F401 - load_script: API
from entangle_py.frontend.convert import DynamoInfo, check_no_gradient_is_needed, convert, custom_op_schemas
from entangle_py.frontend import async_collectives, ddp, rank_processes, rng
from entangle_py.frontend.dtensor_plan import (dtensor_placements, fake_dtensor, is_dtensor, merge_placements,
                                             parallel_styles, placement_text, recording_parallel_styles)
from entangle_py.frontend.port_names import dynamo_port_names, flat_results, output_names
from entangle_py.frontend.received_aliases import repair_received_aliases
from entangle_py.frontend.functionalize import FunctionalizeError, functionalize


# ----------------------------------------------------------------------------- script loading

def _script_file(module: types.ModuleType) -> str | None:
    f = getattr(module, "__file__", None)
    return str(Path(f).resolve()) if f else None


# ----------------------------------------------------------------------------- public API

def capture(script, world_size: int = 1, joint: bool = False, dynamic: bool = False,
            progress=None, fork_from_here: bool = False) -> graph.Bundle:
    """Capture ``script`` (path or module, see the module docstring) for every rank of ``world_size``.

    Every rank is traced in a fresh process of its own (``frontend/rank_processes.py``), in
    parallel where cores allow; ``progress(rank, world_size, seconds)`` is called as each rank is
    captured.  An error is the one the first failing rank (in rank order) raised.
    ``fork_from_here``: the ranks' processes are forked from this one, not from the server (for a
    caller that has traced nothing, like ``entangle capture``).
    """
    if not isinstance(world_size, int) or isinstance(world_size, bool) or world_size < 1:
        raise CaptureError(f"world size must be a positive integer, got {world_size!r}")
    if _IN_RANK_PROCESS:
        raise CaptureError("capture() was called while a rank's process was importing the script "
                           "(a script that captures itself at import): put the call under "
                           "`if __name__ == \"__main__\":`")
    found, name, fork_here = _locate(script)
    torch = sys.modules.get("torch")      # the caller's default dtype is build()'s (torch imported or not)
    dtype = str(torch.get_default_dtype()).removeprefix("torch.") if torch is not None else "float32"
    jobs = [(f"rank {r}", _RankJob(found, r, world_size, joint, dynamic, os.getcwd(), list(sys.path), dtype))
            for r in range(world_size)]

    finished, reported = {}, [0]

    def done(out):       # reported in rank order (ranks run in parallel and may finish out of order)
        if out.error is None:
            finished[out.value.graph.rank] = out.seconds
        while progress is not None and reported[0] in finished:
            progress(reported[0], world_size, finished[reported[0]])
            reported[0] += 1
    outcomes = rank_processes.run(f"{__name__}:_rank_job", jobs, preload=_PRELOAD,
                                  fork_here=fork_here or fork_from_here, on_done=done)
    failed = next((o.error for o in outcomes if o.error is not None), None)
    if failed is not None:
        raise failed
    captured = [o.value for o in outcomes]
    # Ranks may take different inputs and return different outputs (pipeline stages hold their
    # own parameters): every rank's graph has its own ports, and the spec's input relation names
    # the ranks that hold a tensor (``"param:fc2" = "r1.param:fc2"``; see check/spec.py).
    ranks = [repair_received_aliases(c.graph) for c in captured]
    _drop_globally_unused(ranks, [set(c.zero_grads) for c in captured])
    meta = {
        "torch": captured[0].torch_version,
        "script": name,
        "world_size": str(world_size),
        "joint": str(bool(joint)).lower(),
        "dynamic": str(bool(dynamic)).lower(),
        "captured_by": "entangle capture",
    }
    dtensor = merge_placements([c.placements for c in captured])
    if dtensor:
        meta[bundle_meta.DTENSOR_PLACEMENTS] = json.dumps(dtensor, sort_keys=True)
    styles = {}
    for c in captured:
        for k, v in c.styles.items():
            styles.setdefault(k, v)
    if styles:
        meta[bundle_meta.PARALLEL_STYLES] = json.dumps(styles, sort_keys=True)
    notes = merge_notes(c.notes for c in captured)
    if notes:
        meta[bundle_meta.CAPTURE_NOTES] = json.dumps(notes, sort_keys=True)
    rng_streams = rng.merge([c.rng_stream for c in captured])
    if rng_streams:
        meta[bundle_meta.RNG_STREAMS] = rng_streams
    schemas = {}
    for c in captured:
        schemas.update(c.custom_op_schemas)
    if schemas:
        meta[bundle_meta.CUSTOM_OP_SCHEMAS] = json.dumps(schemas, sort_keys=True)
    return graph.Bundle(ranks=ranks, kind="joint" if joint else "forward", meta=meta)


def _print_progress(rank, world_size, seconds):
    print(f"rank {rank}/{world_size} captured in {seconds:.1f} s", file=sys.stderr, flush=True)


def cli_capture(args) -> int:
    t0 = time.perf_counter()
    # this process has traced nothing: the ranks' processes are forked from it (no server to start,
    # torch imported once, here, where the bundle is written too)
    rank_processes.preload_here(_PRELOAD)
    if parse_target(args.script).module is not None and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())      # MODULE:FUNCTION from the working directory, as `python -m`
    verbose = getattr(args, "verbose", False) or sys.stderr.isatty()
    progress = _print_progress if verbose else None
    bundle = capture(args.script, world_size=args.world_size, joint=args.joint, dynamic=args.dynamic,
                     progress=progress, fork_from_here=True)
    graph.save(bundle, args.output)
    g0 = bundle.rank(0)
    n_ops = sum(1 for n in g0.nodes if not n.is_placeholder)
    colls = sum(1 for n in g0.nodes if ops.is_collective(n.target))
    print(f"captured {args.script}: {bundle.kind}, {bundle.world_size} rank(s), {n_ops} ops/rank "
          f"({colls} collectives), {len(g0.inputs)} inputs, {len(g0.outputs)} outputs"
          f"{', dynamic' if args.dynamic else ''} -> {args.output} ({time.perf_counter() - t0:.1f} s)")
    return 0


# ----------------------------------------------------------------------------- a process per rank

# Imported once by the server that forks each rank's process (rank_processes.py), so that a rank
# starts with them: without them the first trace in a process spends a second or more importing.
# An optimisation only (a name torch no longer has is skipped); nothing is traced there.
_PRELOAD = (
    "torch", "torch._dynamo", "torch.distributed", "functorch.compile", "torch._dynamo.backends.common",
    "torch.testing._internal.distributed.fake_pg", "torch.distributed.tensor", "torch.distributed.tensor.parallel",
    "torch.distributed.fsdp", "torch._functorch._aot_autograd.descriptors", "torch._dynamo.backends.inductor",
    "torch._dynamo.backends.distributed", "torch._dynamo.testing", "torch._dynamo.repro.after_aot",
    "torch._dynamo.repro.after_dynamo", "torch.export._trace", "torch.distributed.tensor.experimental",
    "torch._inductor.scheduler", "torch._inductor.debug", "torch.fx.experimental.validator",
    "torch._subclasses.schema_check_mode", "torch.nn.attention.flex_attention",
    "torch._functorch._aot_autograd.subclass_codegen", "torch._higher_order_ops.passes.inline_invoke_subgraph",
    "sympy.combinatorics", "sympy.tensor.tensor", "entangle_py.frontend.capture",
)

_IN_RANK_PROCESS = False     # set in a rank's process: capture() there is a script capturing itself


@dataclasses.dataclass(frozen=True)
class _ByName:
    """A build function a rank's process imports by module name and attribute path (a module
    object given to capture(): the build of entangle_py.testing.assert_refines, an imported module)."""
    module: str
    attr: str
    file: str | None          # the module's file, for source locations

    def load(self) -> types.ModuleType:
        import importlib
        try:
            obj = importlib.import_module(self.module)
            for part in self.attr.split("."):
                obj = getattr(obj, part)
        except InputError:
            raise
        except Exception as e:
            raise CaptureError(f"importing {self.module}.{self.attr} in the rank's process failed: "
                               f"{type(e).__name__}: {first_line(e)}{user_frame_suffix(e, self.file)}") from e
        module = types.ModuleType(f"_entangle_build_{self.module}")
        module.build = obj
        if self.file:
            module.__file__ = self.file
        return module


@dataclasses.dataclass(frozen=True)
class _RankJob:
    script: Any          # a script's path, a _ByName, or (forked from the caller) the module itself
    rank: int
    world_size: int
    joint: bool
    dynamic: bool
    cwd: str             # source paths are shown relative to the caller's working directory
    sys_path: list
    default_dtype: str   # the caller's torch.get_default_dtype()


def _locate(script) -> tuple[Any, str, bool]:
    """How a rank's process gets the program: (what _RankJob.script holds, the name the bundle
    records, whether the process must be forked from this one)."""
    if not isinstance(script, types.ModuleType):
        target = parse_target(script)
        if target.module is not None:
            return _ByName(target.module, target.attr, module_file(target.module)), target.name, False
        return target.text, target.name, False
    build = getattr(script, "build", None)
    if not callable(build):
        raise CaptureError(f"module {script.__name__} has no build(rank, world_size) function")
    file = _script_file(script)
    name = Path(file).name if file else script.__name__
    spec = getattr(script, "__spec__", None)
    if spec is not None and sys.modules.get(script.__name__) is script and script.__name__ != "__main__":
        if spec.origin and Path(spec.origin).is_file() and spec.name == script.__name__ \
                and not script.__name__.startswith("_entangle_script_"):
            return _ByName(script.__name__, "build", file), name, False
        if file and script.__name__.startswith("_entangle_script_"):     # load_script's import of a file
            return file, name, False
    owner, qualname = getattr(build, "__module__", None), getattr(build, "__qualname__", "")
    if owner and owner != "__main__" and "<" not in qualname and _resolves(owner, qualname, build):
        return _ByName(owner, qualname, file), name, False
    return script, name, True      # a closure, a lambda, __main__'s: only this process has it


def _resolves(module: str, qualname: str, obj) -> bool:
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found is obj


def _rank_job(job: _RankJob) -> "RankCapture":
    """In a rank's own process: import the program, capture the rank."""
    global _IN_RANK_PROCESS
    _IN_RANK_PROCESS = True
    os.chdir(job.cwd)
    sys.path[:] = job.sys_path
    import torch
    torch.set_default_dtype(getattr(torch, job.default_dtype))
    streams = rng.Recorder()          # before the import: a script may seed its generator there
    module = job.script.load() if isinstance(job.script, _ByName) else load_script(job.script)
    streams.imported()
    return _capture_rank(module, job.rank, job.world_size, job.joint, job.dynamic, streams)


# ----------------------------------------------------------------------------- one rank

@dataclasses.dataclass
class RankCapture:
    """What one rank's capture gives the cross-rank steps of capture()."""
    graph: graph.RankGraph
    placements: dict              # {port: relation text} of its DTensor inputs
    styles: dict                  # {module path: ParallelStyle entry}
    zero_grads: list              # (grad port, DDP group members): DDP reductions of zeros
    notes: list                   # its capture notes (capture_errors.capture_note)
    custom_op_schemas: dict       # {target: schema} as its process registered them
    torch_version: str
    rng_stream: dict | None       # where its random draws come from (frontend/rng.py)


def _capture_rank(module, rank: int, world_size: int, joint: bool, dynamic: bool,
                  streams: rng.Recorder) -> RankCapture:
    import torch
    import torch.distributed as dist

    script_file = _script_file(module)
    if dist.is_available() and dist.is_initialized():
        raise CaptureError("a default process group is already initialized in this process; "
                           "capture simulates ranks with its own fake process group")
    torch._dynamo.reset()
    pg = False
    try:
        with collecting_notes() as notes:
            if world_size > 1:
                from torch.testing._internal.distributed.fake_pg import FakeStore
                dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world_size)
                pg = True
            found = {}
            with _groups_on_the_fake_backend(pg), recording_parallel_styles(found), \
                    ddp.capturing_ddp(rank, world_size, script_file), streams.building(rank):
                model, inputs = _build(module, rank, world_size, script_file)
            ddp.check_model(model, rank)
            placements = dtensor_placements(model, inputs, world_size)
            styles = parallel_styles(model, found)
            with _groups_on_the_fake_backend(pg):
                gm, info = _trace(model, inputs, module, joint, dynamic, script_file, rank)
            if joint:     # a DTensor output's tangent is laid out as the output: its placement
                placements.update({f"tangent:{port}": placement_text(t, world_size)
                                   for port, t in info.results if is_dtensor(t)})
            streams.forward(rank, info.eager_draws)
            g = convert(gm, info, model, inputs, rank, script_file, joint, world_size)
            # AOTAutograd's graphs are functional already (an input written to is a mutated:
            # output); an op writing in place that slipped through is made functional too
            try:
                g = functionalize(g)
            except FunctionalizeError as e:
                raise CaptureError(f"rank {rank}: {e}") from None
        return RankCapture(g, placements, styles, list(info.ddp_zero_grads), list(notes),
                           custom_op_schemas([g]), str(torch.__version__), streams.entry(rank))
    finally:
        torch._dynamo.reset()
        if pg:
            dist.destroy_process_group()


@contextlib.contextmanager
def _groups_on_the_fake_backend(active: bool):
    """Process groups the program creates for another backend (Megatron's ``backend="gloo"``
    groups beside its NCCL ones, a ``pg_options`` of NCCL) are made on the fake backend of the
    simulated ranks: the same members under the program's group name, nothing communicated.
    A group's backend does not change what its collectives compute."""
    if not active:
        yield
        return
    import torch.distributed.distributed_c10d as c10d
    orig = c10d._new_process_group_helper

    def helper(group_size, group_rank, global_ranks_in_group, backend, store, group_name, backend_options=None,
               *args, **kwargs):
        if backend is not None and str(backend).lower() != "fake":
            backend, backend_options = "fake", None
        return orig(group_size, group_rank, global_ranks_in_group, backend, store, group_name, backend_options,
                    *args, **kwargs)
    c10d._new_process_group_helper = helper
    try:
        yield
    finally:
        c10d._new_process_group_helper = orig


def _build(module, rank, world_size, script_file):
    import torch
    try:
        with torch.device("meta"):
            result = module.build(rank, world_size)
    except InputError:
        raise
    except Exception as e:
        raise CaptureError(f"build(rank={rank}, world_size={world_size}) failed: {type(e).__name__}: "
                           f"{first_line(e)}{user_frame_suffix(e, script_file)}") from e
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
    _refuse_hooked_sharding(model)
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


def _refuse_hooked_sharding(model):
    """FSDP2 (``fully_shard``) gathers and scatters in module hooks that torch 2.13 runs under
    ``torch._dynamo.disable`` (``_fsdp_common._dynamo_disable``, "skipping FSDP hooks": the
    unshard's all-gather before forward and backward, the reduce-scatter after backward); the
    switch earlier releases had to trace them (``torch._dynamo.config.skip_fsdp_hooks = False``)
    is gone, and compiled autograd would still not see the forward's all-gathers.  No graph holds
    them, so the program is refused here, by name, not at a graph break."""
    from torch.distributed.fsdp import FSDPModule
    for name, m in model.named_modules():
        if isinstance(m, FSDPModule):
            raise CaptureError(f"{'module ' + repr(name) if name else 'the model'} is sharded with FSDP2 (fully_shard), "
                               "whose all-gathers and reduce-scatters run in module hooks torch 2.13 keeps out of "
                               "every traced graph (torch._dynamo.disable: \"skipping FSDP hooks\"): not supported; "
                               "check the model's other parallelism without fully_shard, or write ZeRO-3 explicitly (all-gather the weights in "
                               "forward, reduce-scatter their gradients in backward), as tests/corpus/programs/_fsdp.py does")


def _trace(model, inputs, module, joint, dynamic, script_file, rank):
    """Run Dynamo + AOTAutograd; return the captured ATen GraphModule and what the backend saw."""
    import torch
    from functorch.compile import default_partition, make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    info = DynamoInfo()
    captured: dict[str, Any] = {}
    fake_mode, inputs = _to_fake_cpu(model, inputs)
    port_of_id = {}
    rename = ddp.port_renamer(model)      # a DDP wrapper is transparent: its "module." is dropped
    for fqn, p in model.named_parameters(remove_duplicate=True):
        port_of_id.setdefault(id(p), f"param:{rename(fqn)}")
    for fqn, b in model.named_buffers(remove_duplicate=True):
        port_of_id.setdefault(id(b), f"buffer:{rename(fqn)}")
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
        info.port_names = dynamo_port_names(gm, port_of_id)
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
    # receives whose value torch's tracing drops are refused or repaired (repair_received_aliases)
    p2p = torch._dynamo.config.patch(enable_p2p_compilation=True)
    # a warning or a log line in forward (Megatron warns in its linear layers) computes nothing:
    # Dynamo drops it instead of breaking the graph there
    quiet = torch._dynamo.config.patch(ignore_logging_functions=_ignored_in_forward())
    try:
        with grad_ctx, p2p, quiet, async_collectives.tracing_async_collectives(), quiet_torch_logs(), \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = compiled(**inputs)
    except InputError:
        raise
    except Exception as e:
        raise capture_error(e, script_file, rank) from None
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
    info.result_structure = output_names(result, info.num_outputs)
    info.results = list(zip(info.result_structure, flat_results(result)))
    info.eager_draws = rng.eager_draws(model, inputs, fake_mode, captured[key])   # a trace may drop a draw
    ddp.check_graph(captured[key], info.port_names, model, rank, joint)
    if joint:
        gm = captured[key]

        def no_gradient_is_needed(desc, port):
            out = next(n for n in gm.graph.nodes if n.op == "output")
            outs = list(out.args[0]) if isinstance(out.args[0], (tuple, list)) else [out.args[0]]
            check_no_gradient_is_needed(gm, desc, outs, out.meta.get("desc"), port, rank, info.no_grad_nodes)
        info.ddp_zero_grads = ddp.reduce_unused(gm, info.port_names, model, rank, no_gradient_is_needed)
    return captured[key], info


def _ignored_in_forward() -> set:
    """What a forward may call for its user's information only: warnings and logging.Logger's
    methods (they return None and change no tensor)."""
    import logging
    log = logging.Logger
    return {warnings.warn, warnings.warn_explicit, log.debug, log.info, log.warning, log.warn, log.error,
            log.critical, log.exception, log.log}


def _drop_globally_unused(ranks, zero_grads) -> None:
    """A DDP parameter (``find_unused_parameters=True``) no rank of its group has a gradient of
    keeps no gradient: real DDP's reducer all-reduces its zeros but leaves the gradient untouched
    (None) where the parameter is unused globally.  The capture wrote each rank's reduction of zeros
    (``ddp.reduce_unused``, ``zero_grads[r]``: (grad port, group members)); the reductions stay
    (every rank of the group issues them alike), the gradient outputs go."""
    for r, g in enumerate(ranks):
        drop = {port for port, members in zero_grads[r]
                if all((port, members) in zero_grads[m] for m in members)}
        if drop:
            g.outputs[:] = [p for p in g.outputs if p.name not in drop]


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
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    mode = FakeTensorMode(allow_non_fake_inputs=True, shape_env=ShapeEnv())
    done: dict[int, Any] = {}

    def fake(t, param=False):
        if id(t) not in done:
            if is_dtensor(t):     # a DTensor keeps its mesh and placements around a fake local tensor
                f = fake_dtensor(t, mode)
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
