"""``torch.nn.parallel.DistributedDataParallel`` during capture.

Real DDP cannot be built on ``meta`` tensors (it verifies and broadcasts the parameters at
construction) and averages gradients in autograd hooks outside any graph.  While ``build`` runs,
:func:`capturing_ddp` replaces the construction of ``DistributedDataParallel`` (the class itself is
patched, so a script that bound it at import, ``from torch.nn.parallel import
DistributedDataParallel as DDP``, gets the stand-in too) by :class:`CapturedDDP`, a module that
writes DDP's contract for one training step into the traced graph as ordinary ops:

* parameters start equal on every rank of the DDP group (broadcast from the group's rank 0 at
  construction): where the forward reads a parameter it reads ``funcol.broadcast(p, 0, group)``
  (with ``init_sync=False``, the rank's own value);
* buffers (``broadcast_buffers`` / ``forward_sync_buffers``, on by default, or synced at init):
  rank 0's, copied into the buffer before the forward (the graph returns them as
  ``mutated:buffer:<fqn>``);
* the forward is the wrapped module's (``torch.func.functional_call`` with those parameters);
* each parameter's gradient is the all-reduce (sum) over the DDP group divided by the group's
  size; with ``find_unused_parameters=True`` a rank without a parameter's gradient all-reduces
  zeros for it, as DDP's reducer does, and the reductions are issued in one order on every rank
  (:func:`reduce_unused`; a parameter unused on every rank of the group keeps no gradient).

Both hold for the parameters the module has when DDP is built (real DDP syncs those at
construction and its reducer hooks those that require grad then): a parameter attached or
replaced later is the rank's own value with a local gradient, one unfrozen later is broadcast but
not averaged.  A reducer parameter replaced, removed or frozen later stalls the reducer (without
``find_unused_parameters=True`` it waits for that gradient): its bucket never becomes ready, the
backward never finalizes, and no gradient of that DDP is averaged in the step -- every one is the
rank's own, as measured on gloo with one and with several buckets.  With ``static_graph`` or
``gradient_as_bucket_view`` the stalled step is something else (buckets reduced in place, or the
first step's unused-parameter search) and is refused.

The process group is ``process_group``, or the group of a 1-D ``device_mesh``, else WORLD.
Everything else is refused (:class:`CaptureError`, exit 2, naming the construct and the script
line): a communication hook (``register_comm_hook``: fp16 compression, PowerSGD change the
reduction), ``mixed_precision``, ``join`` / ``no_sync``, any argument not known to leave the
step's result unchanged, DDP at world size 1 (torch needs a process group: the sequential program
uses the module itself), a subclass of DDP, DDP inside DDP, and a DDP parameter also held outside
the wrapper or read outside its forward.  In a joint capture, a parameter that gets no gradient
without ``find_unused_parameters=True`` stalls the reducer as above: the averaging is taken out
of the traced backward again (each rank's own gradient).

The stand-in is not an instance of DistributedDataParallel (TorchDynamo special-cases DDP
modules); ``.module`` is the wrapped module, as in DDP.

Port names: a DDP wrapper is transparent.  The wrapped module's parameters and buffers are named
as in the module itself, without the ``module.`` DDP puts in front of them: ``param:fc.weight``
for ``DDP(net)``'s ``module.fc.weight``, ``param:ddp.fc.weight`` for a wrapper held as
``self.ddp`` (:func:`port_renamer`).  The sequential program, which runs ``net`` unwrapped, has the
same names.
"""
from __future__ import annotations

import contextlib
import inspect
import traceback
from pathlib import Path

from entangle_py.frontend.capture_errors import CaptureError, capture_note, display_path, parse_stack_trace, pick_frame

_HERE = str(Path(__file__).resolve())

# DDP arguments that do not change what one step computes (performance, devices, bucketing, checks).
SEMANTICS_FREE = frozenset({"device_ids", "output_device", "bucket_cap_mb", "find_unused_parameters",
                            "gradient_as_bucket_view", "static_graph", "check_reduction"})
# DDP arguments this module models (the group, the initial and forward syncs).
MODELLED = frozenset({"process_group", "device_mesh", "init_sync", "broadcast_buffers", "forward_sync_buffers"})
# Methods of DDP that change the reduction or the step: refused when called.
_REFUSED_METHODS = {
    "register_comm_hook": "a communication hook changes the gradient reduction (fp16 compression, PowerSGD, ...)",
    "_register_builtin_comm_hook": "a built-in communication hook changes the gradient reduction",
    "_register_buffer_comm_hook": "a buffer communication hook changes how buffers are synced",
    "_register_fused_optim": "a fused optimizer runs the optimizer step inside the reduction",
    "no_sync": "no_sync skips the gradient all-reduce (gradient accumulation)",
    "join": "join (uneven inputs) shadows collectives of ranks that ran out of data",
    "join_hook": "join (uneven inputs) shadows collectives of ranks that ran out of data",
    "_set_sparse_metadata": "sparse gradient metadata",
}


def _ddp_class():
    try:
        from torch.nn.parallel import DistributedDataParallel
    except ImportError:
        return None
    return DistributedDataParallel


def _call_site(script_file):
    """' at file:line' of the user's frame calling into here (the script, else outside libraries)."""
    frames = [(f.filename, f.lineno, f.name, f.line or "") for f in traceback.extract_stack()[:-2]]
    pick = pick_frame(frames, script_file)
    return (f" at {display_path(pick[0])}:{pick[1]}", pick) if pick else ("", None)


def _refuse(what: str, why: str, script_file, rank):
    where, _ = _call_site(script_file)
    raise CaptureError(f"rank {rank}: {what}{where} is not supported by capture: {why}")


@contextlib.contextmanager
def capturing_ddp(rank: int, world_size: int, script_file):
    """While ``build`` runs: ``DistributedDataParallel(...)`` makes a :class:`CapturedDDP`."""
    cls = _ddp_class()
    if cls is None:
        yield
        return
    orig = cls.__dict__["__init__"]
    sig = inspect.signature(orig)

    def __init__(self, *args, **kwargs):
        if type(self) is not cls:
            _refuse(f"{type(self).__name__}, a subclass of DistributedDataParallel,",
                    "its overrides are not modelled", script_file, rank)
        try:
            bound = sig.bind(self, *args, **kwargs)
        except TypeError as e:
            raise CaptureError(f"rank {rank}: DistributedDataParallel(...){_call_site(script_file)[0]}: {e}") from None
        CapturedDDP.setup(self, bound, sig, rank, world_size, script_file)

    cls.__init__ = __init__
    try:
        yield
    finally:
        cls.__init__ = orig


def _group_of(opts, rank, script_file):
    import torch.distributed as dist
    pg, mesh = opts.get("process_group"), opts.get("device_mesh")
    if pg is not None and mesh is not None:
        _refuse("DistributedDataParallel with both process_group and device_mesh",
                "torch rejects it (one of them chooses the group)", script_file, rank)
    if mesh is not None:
        if mesh.ndim != 1:
            _refuse(f"DistributedDataParallel(device_mesh=<{mesh.ndim}-D mesh>)",
                    "DDP takes a 1-D mesh (pass mesh[\"dp\"])", script_file, rank)
        pg = mesh.get_group(0)
    if pg is None:
        pg = dist.group.WORLD
    if dist.get_rank(pg) < 0:
        _refuse("DistributedDataParallel over a process group this rank is not a member of",
                "the rank cannot take part in its collectives", script_file, rank)
    return pg, dist.get_world_size(pg)


def _module_class():
    import torch.nn as nn

    class CapturedDDP(nn.Module):
        """DDP's step as graph ops (see the module docstring); made by ``DistributedDataParallel(...)``
        during capture."""

        @staticmethod
        def setup(self, bound, sig, rank, world_size, script_file):
            import torch.distributed as dist
            where, frame = _call_site(script_file)
            if not (dist.is_available() and dist.is_initialized()):
                raise CaptureError(
                    f"DistributedDataParallel{where} at world size {world_size}: torch needs a process group "
                    f"for DDP, and the sequential program (world size 1) has none; use the module itself "
                    f"there (net = DDP(net) if world_size > 1 else net)")
            opts = dict(bound.arguments)
            opts.pop("self")
            module = opts.pop("module", None)
            if not isinstance(module, nn.Module):
                raise CaptureError(f"rank {rank}: DistributedDataParallel{where} wraps a "
                                   f"{type(module).__name__}, not a torch.nn.Module")
            for k, v in opts.items():
                if k in SEMANTICS_FREE or k in MODELLED:
                    continue
                default = sig.parameters[k].default
                if v is default or (v == default if isinstance(v, (int, float, str, type(None))) else False):
                    continue
                why = ("mixed precision changes the dtypes of the forward and of the reduction"
                       if k == "mixed_precision" else
                       f"only arguments known not to change the step's result are accepted "
                       f"({', '.join(sorted(SEMANTICS_FREE | MODELLED))})")
                raise CaptureError(f"rank {rank}: DistributedDataParallel(..., {k}=...){where} is not "
                                   f"supported by capture: {why}")
            ignored = getattr(module, "_ddp_params_and_buffers_to_ignore", None)
            if ignored:
                raise CaptureError(f"rank {rank}: DistributedDataParallel{where}: parameters and buffers to "
                                   f"ignore ({sorted(ignored)[:3]}...) are not supported by capture")
            for name, m in module.named_modules():
                if isinstance(m, CapturedDDP):
                    raise CaptureError(f"rank {rank}: DistributedDataParallel{where} wraps a module that holds "
                                       f"another DistributedDataParallel ({name}): nested DDP is not supported")
            try:
                from torch.distributed.tensor import DTensor
            except ImportError:
                DTensor = ()
            for name, t in list(module.named_parameters()) + list(module.named_buffers()):
                if isinstance(t, DTensor):
                    raise CaptureError(f"rank {rank}: DistributedDataParallel{where} over DTensor {name}: "
                                       f"DDP over DTensors is not supported by capture")
            group, size = _group_of(opts, rank, script_file)
            if size == 1 and world_size > 1:
                capture_note(rank, f"DistributedDataParallel over a group of one rank (of {world_size}): it "
                             f"averages no gradient across ranks", frame)
            fwd_sync = opts.get("forward_sync_buffers")
            init_sync = bool(opts.get("init_sync", True))
            if fwd_sync is None:
                bb = opts.get("broadcast_buffers")
                fwd_sync = init_bufs = True if bb is None else bool(bb)
            else:
                init_bufs = True
            nn.Module.__init__(self)
            self.__class__ = CapturedDDP
            self.module = module
            # DDP fixes its parameters at construction: the init sync broadcasts those the module
            # has then, and its reducer averages those of them that require grad then (one hook
            # each); a parameter attached, replaced or (un)frozen later is not DDP's
            # (the parameters themselves are held: their ids are compared once build returns,
            # _plan, before capture swaps them for fake tensors)
            self._ddp = dict(group=group, size=size, init_sync=init_sync,
                             sync_buffers=bool(fwd_sync) or (init_sync and init_bufs),
                             find_unused=bool(opts.get("find_unused_parameters", False)),
                             static_graph=bool(opts.get("static_graph", False)),
                             bucket_view=bool(opts.get("gradient_as_bucket_view", False)),
                             where=where, frame=frame, rank=rank,
                             built=[(n, p, p.requires_grad) for n, p in module.named_parameters()],
                             plan=None, modelled={})

        def forward(self, *args, **kwargs):
            import torch
            import torch.distributed._functional_collectives as funcol
            c = self._ddp
            if c["sync_buffers"]:
                with torch.no_grad():
                    for b in self.module.buffers():
                        b.copy_(funcol.broadcast(b, 0, c["group"]))
            plan = _plan(self)
            params, modelled = {}, {}
            for name, p in self.module.named_parameters():
                bcast, avg = plan.get(name, (False, False))
                if avg and not p.requires_grad:
                    _refuse_gone(c, [name])
                modelled[name] = (bcast, avg)
                params[name] = _DDPParam.apply(p, c["group"], c["size"], bcast, avg) if bcast or avg else p
            c["modelled"] = modelled
            return torch.func.functional_call(self.module, params, args, kwargs, tie_weights=True, strict=False)

        def _set_static_graph(self):      # semantics-free, but for a stalled reducer (_plan)
            self._ddp["static_graph"] = True
            if self._ddp.get("stalled"):
                _refuse_stall(self._ddp, self._ddp["stalled"])

    for name, why in _REFUSED_METHODS.items():
        def refused(self, *a, _name=name, _why=why, **k):
            where, _ = _call_site(None)
            raise CaptureError(f"rank {self._ddp['rank']}: DistributedDataParallel.{_name}{where} is not "
                               f"supported by capture: {_why}")
        setattr(CapturedDDP, name, refused)
    return CapturedDDP


def _plan(w) -> dict:
    """{name: (broadcast, averaged)} of the module's parameters as real DDP treats them.  DDP fixes
    its parameters at construction: the init sync broadcasts rank 0's value of each parameter the
    module has then, and its reducer averages the gradients of those that require grad then (a hook
    each).  A parameter attached or replaced later is the rank's own, its gradient local; one
    unfrozen later is broadcast but not averaged.  A reducer parameter no longer in the step
    (replaced, removed or frozen later) stalls the reducer unless find_unused_parameters=True: then
    no gradient is averaged (module docstring).  Computed once, by identity, while the module
    holds the parameters build made (check_model, right after build; or a forward build runs).
    What the user may not expect is a capture note at the DDP's line."""
    c = w._ddp
    if c["plan"] is None:
        built = c["built"]
        synced = {id(p) for _, p, _ in built}
        reduced = {id(p): n for n, p, trained in built if trained}
        now = dict(w.module.named_parameters())
        live = {id(p) for p in now.values() if p.requires_grad}
        gone = [n for i, n in reduced.items() if i not in live]
        late = [n for n, p in now.items() if id(p) not in synced]
        if late:
            capture_note(c["rank"], f"DistributedDataParallel: parameter(s) {', '.join(late[:3])} were not in the "
                         f"module when it was built: each rank keeps its own value and gradient (neither "
                         f"broadcast nor averaged)", c["frame"])
        if gone and not c["find_unused"]:
            _refuse_stall(c, gone)
            c["stalled"] = gone
            _warn_stall(c, gone, "no longer take part in the step (replaced, removed or frozen after construction)")
        c["plan"] = {n: (c["init_sync"] and id(p) in synced,
                         id(p) in reduced and p.requires_grad and not c.get("stalled"))
                     for n, p in now.items()}
        c["built"] = None
    return c["plan"]


def _refuse_stall(c, names, why="no longer take part in the step (replaced, removed or frozen after construction)"):
    """A stalled reducer (``names`` never get a gradient) is modelled only where measured: without
    static_graph (its first step searches for unused parameters, like find_unused_parameters) and
    without gradient_as_bucket_view (ready buckets are reduced into the gradients in place)."""
    opt = "static_graph" if c["static_graph"] else "gradient_as_bucket_view" if c["bucket_view"] else None
    if opt:
        raise CaptureError(
            f"rank {c['rank']}: DistributedDataParallel{c['where']}: parameter(s) {', '.join(names[:3])} it was "
            f"built with {why}, and with {opt}=True what the stalled reducer leaves in the gradients is not "
            f"modelled")


def _warn_stall(c, names, why="get no gradient in the step"):
    capture_note(c["rank"], f"DistributedDataParallel: its parameter(s) {', '.join(names[:3])} {why}: "
                 f"its reducer waits for their gradients and never finishes, so no gradient of this DDP is "
                 f"averaged in the step (each rank keeps its own; real DDP raises at the next step; "
                 f"find_unused_parameters=True lets it finish)", c["frame"])


def _refuse_gone(c, names):
    if c["find_unused"]:    # DDP marks a parameter without a gradient ready (as unused): its bucket completes
        return
    raise CaptureError(
        f"rank {c['rank']}: DistributedDataParallel{c['where']}: parameter(s) {', '.join(names[:3])} it was "
        f"built with no longer take part in the step (replaced, removed or frozen after construction): real "
        f"DDP's reducer waits for their gradients and, without find_unused_parameters=True, never reduces "
        f"their bucket")


def _param_function():
    import torch

    class DDPParam(torch.autograd.Function):
        """A parameter as DDP's forward reads it (rank 0's) and its gradient as DDP leaves it (the
        group's mean)."""

        @staticmethod
        def forward(ctx, p, group, size, bcast, avg):
            import torch.distributed._functional_collectives as funcol
            ctx.group, ctx.size, ctx.avg = group, size, avg
            return funcol.broadcast(p, 0, group) if bcast else p

        @staticmethod
        def backward(ctx, grad):
            import torch.distributed._functional_collectives as funcol
            if not ctx.avg:
                return grad, None, None, None, None
            return funcol.all_reduce(grad, "sum", ctx.group) / ctx.size, None, None, None, None

    return DDPParam


CapturedDDP = _module_class()      # torch is a dependency: built at import, like any class
_DDPParam = _param_function()


# ----------------------------------------------------------------------------- after build

def wrappers(model) -> list[tuple[str, object]]:
    """(path, CapturedDDP) of the model's DDP wrappers."""
    return [(name, m) for name, m in model.named_modules() if isinstance(m, CapturedDDP)]


def port_renamer(model):
    """fqn -> port fqn: the ``module.`` a DDP wrapper adds dropped (``ddp.module.fc.w`` -> ``ddp.fc.w``)."""
    return renamer_for_wrappers(p for p, _ in wrappers(model))


def renamer_for_wrappers(paths):
    """fqn -> port fqn for DDP wrappers at ``paths`` (module paths, "" for the model itself); also
    what the gloo runner uses on real DDP, so both name ports alike."""
    prefixes = [(f"{p}.module." if p else "module.", f"{p}." if p else "") for p in paths]
    if not prefixes:
        return lambda fqn: fqn

    def rename(fqn: str) -> str:
        for long, short in prefixes:
            if fqn.startswith(long):
                return short + fqn[len(long):]
        return fqn
    return rename


def check_model(model, rank) -> None:
    """Refuse a DDP parameter the model also holds outside the wrapper (its gradient there would
    reach the parameter without DDP's averaging in the graph, while real DDP averages all of it)."""
    found = wrappers(model)
    if not found:
        return
    for _, w in found:      # which parameters are DDP's: compared while build's tensors are held
        _plan(w)
    inside = {}
    for path, w in found:
        for name, p in w.module.named_parameters(remove_duplicate=False):
            inside[id(p)] = (path, name)
    pre = [f"{path}." if path else "" for path, _ in found]
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in inside and not any(name.startswith(f"{q}module.") for q in pre):
            path, inner = inside[id(p)]
            raise CaptureError(f"rank {rank}: parameter {name} is also {inner} inside the DistributedDataParallel "
                               f"wrapper{' ' + path if path else ''}{found[0][1]._ddp['where']}: a DDP parameter "
                               f"used outside the wrapper is not supported by capture")


def _aot_port(desc, dynamo_port_names, rename):
    """The port an AOTAutograd input descriptor stands for (None: neither an input nor a parameter)."""
    from torch._functorch._aot_autograd import descriptors as D
    if isinstance(desc, D.PlainAOTInput):
        return dynamo_port_names[desc.idx]
    if isinstance(desc, D.ParamAOTInput):
        return f"param:{rename(desc.target)}"
    return None


def _ddp_frame(node) -> bool:
    """Whether the node was made by this module (its innermost frame outside torch is here)."""
    frames = parse_stack_trace(node.meta.get("stack_trace"))
    pick = pick_frame(frames, _HERE)
    return pick is not None and str(Path(pick[0]).resolve()) == _HERE


def check_graph(gm, dynamo_port_names, model, rank, joint) -> None:
    """Every read of a DDP parameter in the captured graph is DDP's (its broadcast), and in a joint
    graph every DDP parameter's gradient is DDP's mean (a read outside the wrapper's forward, e.g.
    ``ddp.module.fc(x)``, would bypass both), or CaptureError.  ``dynamo_port_names``: the port of
    each input of Dynamo's graph."""
    import torch
    found = wrappers(model)
    if not found:
        return
    rename = port_renamer(model)
    placeholders, grad_at = _ports(gm, dynamo_port_names, rename)
    managed = {}
    for path, w in found:
        pre = f"{path}.module." if path else "module."
        # (broadcast, averaged) as the wrapper's forward read each parameter (frozen at DDP's
        # construction: a parameter attached later is neither)
        for name, (bcast, avg) in w._ddp["modelled"].items():
            managed[f"param:{rename(pre + name)}"] = (w, bcast, avg)
    for port, n in placeholders.items():
        if port not in managed:
            continue
        w, bcast, _ = managed[port]
        c = w._ddp
        if bcast:
            bad = [u for u in n.users if u.op != "output" and not _ddp_frame(u)]
            if bad:
                src = pick_frame(parse_stack_trace(bad[0].meta.get("stack_trace")), None)
                at = f" at {display_path(src[0])}:{src[1]}" if src else ""
                raise CaptureError(f"rank {rank}: {port} of the DistributedDataParallel wrapper{c['where']} is read "
                                   f"outside the wrapper's forward{at}: capture models DDP's parameters only where "
                                   f"its forward reads them")
    if not joint:
        return
    out = next(n for n in gm.graph.nodes if n.op == "output")
    grads = {port: out.args[0][i] for port, i in grad_at.items()}
    # a reducer parameter without a gradient stalls its reducer (no find_unused_parameters): as
    # when one is frozen or replaced after construction (_plan), no gradient of that DDP is averaged
    stalled = {}
    for port, (w, _, avg) in managed.items():
        if avg and grads.get(port) is None and not w._ddp["find_unused"]:
            stalled.setdefault(id(w), (w, []))[1].append(port.removeprefix("param:"))
    for w, names in stalled.values():
        _refuse_stall(w._ddp, names, "get no gradient in the step")
        _warn_stall(w._ddp, names)
    for port, (w, _, avg) in managed.items():
        if not avg:
            continue
        c = w._ddp
        g = grads.get(port)
        if g is None:
            continue
        if not (isinstance(g, torch.fx.Node) and g.target is torch.ops.aten.div.Tensor and _ddp_frame(g)):
            raise CaptureError(f"rank {rank}: the gradient of {port} (DistributedDataParallel wrapper{c['where']}) "
                               f"does not come only through the wrapper's forward: capture models DDP's averaging "
                               f"only of gradients that flow through it")
        if id(w) in stalled:
            _unaverage(gm, out, g)
    if stalled:
        gm.graph.lint()
        gm.recompile()


def _unaverage(gm, out, g):
    """Make the output ``g`` -- DDPParam's backward, div(wait_tensor(all_reduce(grad)), size) --
    the rank's own ``grad``, and drop the reduction (a stalled reducer averages nothing)."""
    chain = _reduction(g)
    if chain is None or not _ddp_frame(chain[0]):
        raise CaptureError(f"DDP's averaged gradient {g.name} is not the all-reduce capture writes; "
                           f"cannot model its stalled reducer")
    red = chain[0]
    out.args = (tuple(red.args[0] if a is g else a for a in out.args[0]),) + tuple(out.args[1:])
    for n in reversed(chain):
        if not n.users:
            gm.graph.erase_node(n)


def _reduction(g):
    """(all_reduce, wait_tensor, div) if ``g`` is DDPParam's backward, div(wait_tensor(all_reduce(
    grad)), size), else None."""
    import torch
    div_op = torch.ops.aten.div.Tensor
    wait_op, ar_op = torch.ops._c10d_functional.wait_tensor.default, torch.ops._c10d_functional.all_reduce.default
    wait = g.args[0] if getattr(g, "target", None) is div_op and g.args else None
    ar = wait.args[0] if getattr(wait, "target", None) is wait_op and wait.args else None
    return (ar, wait, g) if getattr(ar, "target", None) is ar_op else None


def _ports(gm, dynamo_port_names, rename) -> tuple[dict, dict]:
    """A traced graph's {port: placeholder} of its inputs and parameters, and {port: index of its
    gradient among the graph's outputs}."""
    from torch._functorch._aot_autograd import descriptors as D
    placeholders = {}
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            port = _aot_port(n.meta.get("desc"), dynamo_port_names, rename)
            if port is not None:
                placeholders[port] = n
    out = next(n for n in gm.graph.nodes if n.op == "output")
    grad_at = {}
    for i, d in enumerate(out.meta.get("desc") or []):
        if isinstance(d, D.GradAOTOutput):
            port = _aot_port(d.grad_of, dynamo_port_names, rename)
            if port is not None:
                grad_at[port] = i
    return placeholders, grad_at


def reduce_unused(gm, dynamo_port_names, model, rank, no_gradient_is_needed) -> list:
    """A joint graph's DDP reductions as real DDP with ``find_unused_parameters=True`` issues them.

    Its reducer marks a parameter that gets no gradient on this rank (read detached, or not at
    all) unused and all-reduces zeros for it, so every rank issues one reduction per parameter, and
    their gradient is the group's mean over the ranks that have one.  The capture writes each
    reduction where autograd computes the parameter's gradient (``DDPParam``), which a rank without
    that gradient never reaches: for such a wrapper each parameter's reduction (all_reduce, wait,
    division by the group's size) is moved to the end of the graph in one order on every rank (the
    reverse of the parameters', DDP's bucket order: c10d pairs the ranks' collectives by issue
    order, DDP's buckets pair them by parameter), and a parameter without a gradient gets a
    reduction of zeros there (``no_gradient_is_needed(desc, port)`` first refuses one whose backward
    went missing rather than being detached).  The gradient is then the reduction's mean on every
    rank, as DDP leaves it.  Returns the (grad port, group members) of those written as zeros'
    reductions (a parameter unused on every rank of its group keeps no gradient: the caller drops
    those outputs)."""
    import torch
    import torch.distributed as dist
    found = [(p, w) for p, w in wrappers(model) if w._ddp["find_unused"]]
    filled = []
    if not found:
        return filled
    rename = port_renamer(model)
    placeholders, grad_at = _ports(gm, dynamo_port_names, rename)
    out = next(n for n in gm.graph.nodes if n.op == "output")
    outs = list(out.args[0]) if isinstance(out.args[0], (tuple, list)) else [out.args[0]]
    descs = out.meta.get("desc") or []
    ar_op, wait_op = torch.ops._c10d_functional.all_reduce.default, torch.ops._c10d_functional.wait_tensor.default
    div_op, zeros_op = torch.ops.aten.div.Tensor, torch.ops.aten.zeros.default
    for path, w in found:
        c = w._ddp
        pre = f"{path}.module." if path else "module."
        group_name, size = c["group"].group_name, c["size"]
        for name, (_, avg) in reversed(list(c["modelled"].items())):
            if not avg:
                continue
            port = f"param:{rename(pre + name)}"
            i, ph = grad_at.get(port), placeholders.get(port)
            if i is None or ph is None:
                raise CaptureError(f"rank {rank}: {port} of the DistributedDataParallel wrapper{c['where']} has no "
                                   f"gradient output in the joint graph: its reduction cannot be placed")
            g = outs[i]
            if g is not None:
                chain = _reduction(g)
                if (chain is None or tuple(chain[0].args[1:]) != ("sum", group_name)
                        or g.args[1:] != (size,) or any(len(n.users) != 1 for n in chain)
                        or sum(o is g for o in outs) != 1):
                    raise CaptureError(f"rank {rank}: the gradient of {port} (DistributedDataParallel "
                                       f"wrapper{c['where']}) is not DDP's reduction alone: with "
                                       f"find_unused_parameters=True capture cannot order it as DDP does")
                for n in chain:
                    out.prepend(n)
                continue
            no_gradient_is_needed(descs[i], "grad:" + port[len("param:"):])
            v = ph.meta.get("val")
            if not isinstance(v, torch.Tensor) or not all(isinstance(s, int) for s in v.shape):
                raise CaptureError(f"rank {rank}: {port} of the DistributedDataParallel wrapper{c['where']} gets no "
                                   f"gradient and has no static shape: the zeros DDP reduces for it are not modelled")
            trace = next((n.meta.get("stack_trace") for n in gm.graph.nodes
                          if n.op == "call_function" and n.target is div_op and _ddp_frame(n)), None)
            with gm.graph.inserting_before(out):
                z = gm.graph.call_function(zeros_op, (list(v.shape),), {"dtype": v.dtype, "device": v.device,
                                                                         "pin_memory": False})
                ar = gm.graph.call_function(ar_op, (z, "sum", group_name))
                wait = gm.graph.call_function(wait_op, (ar,))
                g = gm.graph.call_function(div_op, (wait, size))
            zero = torch.zeros_like(v)
            for n in (z, ar, wait, g):
                n.meta["val"] = zero
                if trace:
                    n.meta["stack_trace"] = trace
            outs[i] = g
            filled.append(("grad:" + port[len("param:"):], tuple(dist.get_process_group_ranks(c["group"]))))
    out.args = (type(out.args[0])(outs) if isinstance(out.args[0], (tuple, list)) else outs[0],)
    gm.graph.lint()
    gm.recompile()
    return filled
