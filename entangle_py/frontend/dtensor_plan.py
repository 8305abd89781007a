"""A DTensor program as capture sees it: the placement of each input, parameter and buffer as a spec
relation (``shard(d)``, ``replicate``, ``partial``; ``unmapped: <why>`` where the spec language
cannot say it), and where the plan made and applied each ParallelStyle (a failure inside a module
is reported with its plan entry)."""
from __future__ import annotations

import contextlib

from entangle_py.frontend.capture_errors import display_path, pick_frame


def dtensor_placements(model, inputs, world_size) -> dict[str, str]:
    items = [(f"param:{n}", p) for n, p in model.named_parameters(remove_duplicate=True)]
    items += [(f"buffer:{n}", b) for n, b in model.named_buffers(remove_duplicate=True)]
    items += [(f"input:{k}", v) for k, v in inputs.items()]
    return {port: placement_text(t, world_size) for port, t in items if is_dtensor(t)}


def placement_text(t, world_size) -> str:
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
    if type(p) is Partial and p.reduce_op in ("sum", "max", "avg"):
        return "partial" if p.reduce_op == "sum" else f"partial({p.reduce_op})"
    return f"unmapped: placement {p} has no spec form"


# Bundle meta key: {module path: {"style", "file", "line", "code"}}, the ParallelStyle that
# parallelize_module applied to each module of the model and where the program made it (the plan
# entry).  A failure inside such a module is reported with its plan line: a wrong layout is a bug
# in the plan, not in the forward code the graph's sources point at.
@contextlib.contextmanager
def recording_parallel_styles(found: dict):
    """While build() runs: where each ParallelStyle is made, and the module each is applied to.
    ``found`` gets {id(module): (module, style, frame)}; the classes are restored after."""
    try:
        from torch.distributed.tensor.parallel.style import ParallelStyle
    except ImportError:       # a torch without tensor parallelism: nothing to record
        yield
        return
    import traceback
    made, saved = {}, []

    def classes(c):
        yield c
        for sub in c.__subclasses__():
            yield from classes(sub)

    def wrap_init(orig):
        def __init__(self, *args, **kwargs):
            if id(self) not in made:
                frames = [(f.filename, f.lineno, f.name, f.line or "") for f in traceback.extract_stack()[:-1]]
                made[id(self)] = (self, pick_frame(frames, None))
            orig(self, *args, **kwargs)
        return __init__

    def wrap_apply(orig):
        def _apply(self, module, device_mesh):
            found[id(module)] = (module, self, (made.get(id(self)) or (None, None))[1])
            return orig(self, module, device_mesh)
        return _apply

    for c in set(classes(ParallelStyle)):
        for attr, wrap in (("__init__", wrap_init), ("_apply", wrap_apply)):
            if attr in c.__dict__:
                saved.append((c, attr, c.__dict__[attr]))
                setattr(c, attr, wrap(c.__dict__[attr]))
    try:
        yield
    finally:
        for c, attr, orig in saved:
            setattr(c, attr, orig)


def parallel_styles(model, found: dict) -> dict[str, dict]:
    out = {}
    for name, m in model.named_modules():
        if id(m) in found and found[id(m)][0] is m:
            _, style, frame = found[id(m)]
            entry = {"style": repr(style)}
            if frame is not None:
                entry.update(file=display_path(frame[0]), line=frame[1], code=frame[3].strip())
            out[name or "<model>"] = entry
    return out


def merge_placements(per_rank: list[dict]) -> dict[str, str]:
    out = {}
    for port in sorted(set().union(*per_rank)):
        texts = {d.get(port) for d in per_rank if port in d}
        out[port] = texts.pop() if len(texts) == 1 else "unmapped: the ranks' placements differ"
    return out


def is_dtensor(t) -> bool:
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:
        return False
    return isinstance(t, DTensor)


def fake_dtensor(t, mode):
    """A DTensor (built on ``meta``) as the same DTensor over a fake CPU local tensor."""
    import torch
    from torch.distributed.tensor import DTensor
    local = t._local_tensor
    with mode:
        f = torch.empty_strided(tuple(local.shape), tuple(local.stride()), dtype=local.dtype, device="cpu")
    return DTensor.from_local(f, t.device_mesh, t.placements, run_check=False, shape=t.shape, stride=t.stride())
