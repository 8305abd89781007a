"""Checking by pipeline stages (issue 28): ``[stages]`` in the spec names the tensors at the
boundaries between stages, in pipeline order, each with its relation to the ranks' tensors::

    [stages]
    "relu" = "r0.relu"        # stage 0 ends here: rank 0 holds h1
    "relu_1" = "r1.relu"      # stage 1 ends here: rank 1 holds h2

Stage ``i`` is an ordinary check with a derived spec: the boundaries before it are given (as
``[cut]`` gives a tensor: operators may be related through them), and it must prove the relation
of the boundary after it (as ``[outputs] check`` and ``[expect]`` would ask, a certificate over
the ranks' tensors of that name); the last stage proves the spec's own outputs, expectations and
state.  So every boundary a stage assumes is discharged by the stage before it, and every
obligation of the spec is the last stage's (assume-guarantee; the argument is in
docs/scale-out.md).  Each stage is a task on the executor (``--workers N``, ``--ray``): the
stages are checked at once.
"""
from __future__ import annotations

import copy
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from entangle_py.check_many import CheckTask, entry, check_task, preload
from entangle_py.check.spec import Spec, load_spec
from entangle_py.errors import InputError
from entangle_py.executor import Task, make_executor


@dataclass(frozen=True)
class Stage:
    index: int
    assumes: tuple      # ((boundary, relation text), ...): the boundaries before the stage, given
    proves: tuple       # ((boundary, relation text),) for the next boundary; () for the last stage
    spec: Spec

    @property
    def label(self) -> str:
        what = ", ".join(f"{k} = {v}" for k, v in self.proves) if self.proves else "the spec's outputs"
        return f"stage {self.index} (proves {what})"


def split(spec: Spec) -> list[Stage]:
    """One stage per boundary, and one after the last: stage i is given the boundaries before it
    and checks the next one; the last checks what the spec checks."""
    cuts = list(spec.stages.items())
    out = []
    for i in range(len(cuts) + 1):
        s = copy.deepcopy(spec)
        s.stages = {}
        s.cut = {**spec.cut, **dict(cuts[:i])}
        proves = ()
        if i < len(cuts):
            name, rel = cuts[i]
            s.check, s.expect = [name], {name: rel}
            proves = ((name, str(rel)),)
        out.append(Stage(i, tuple((k, str(v)) for k, v in cuts[:i]), proves, s))
    return out


def run_stages(seq: str, dist: str, spec_path: str, executor, assume=(), numeric=True, limits=None, memo=True,
               on_result=None, spec: Spec | None = None) -> list[dict]:
    """Every stage of the spec's [stages] through ``executor``; one entry per stage, in order
    (``spec``: the file's, where the caller has read it)."""
    spec = spec or load_spec(spec_path)
    if not spec.stages:
        raise InputError(f"{spec_path}: no [stages]: nothing to split")
    stages = split(spec)
    with tempfile.TemporaryDirectory(prefix="entangle-stages-") as d:
        tasks = []
        for st in stages:
            path = Path(d) / f"stage{st.index}.toml"
            path.write_text(st.spec.to_toml())
            tasks.append(CheckTask(st.label, seq, dist, str(path), tuple(assume), numeric,
                                   limits.memory if limits else 0, limits, memo, text=True))
        results = executor.run([Task(t.name, check_task, (t,)) for t in tasks], on_result=on_result)
    entries = []
    for st, t, r in zip(stages, tasks, results):
        e = entry(t, r)
        if e["report"] is not None:     # the derived spec was a temporary file: name the user's
            e["report"]["spec"] = f"{spec_path} [stage {st.index}]"
        e.update(spec=spec_path, index=st.index, assumes=dict(st.assumes),
                 proves=dict(st.proves) if st.proves else "the spec's outputs",
                 text=r.value.text if r.ok else "")
        entries.append(e)
    return entries


# options of `entangle check` that a check by stages does not carry to its stages yet
_NOT_BY_STAGES = {"html": "--html", "sarif": "--sarif", "write_spec": "--write-spec", "lemmas": "--lemmas"}


def run_stages_cli(args, spec: Spec) -> int:
    from rich.console import Console
    from entangle_py.config import Limits
    for key, flag in _NOT_BY_STAGES.items():
        if getattr(args, key, None):
            raise InputError(f"{flag} is not supported for a check by [stages] yet (remove it, or check the "
                             f"pair whole without [stages])")
    console = Console(highlight=False, emoji=False, soft_wrap=not sys.stdout.isatty())
    executor = make_executor(args.workers, args.ray, args.ray_address, preload)
    memory = args.max_memory or Limits().memory_bytes() // executor.workers
    limits = Limits(iterations=args.max_iterations, nodes=args.max_enodes, matches=args.max_matches,
                    seconds=args.max_seconds, memory=memory)
    n = len(spec.stages) + 1
    console.print(f"checking by {n} stages on {executor.name}, {executor.workers} worker(s)")
    t0, finished = time.perf_counter(), [0]

    def progress(i, r):
        finished[0] += 1
        what = (r.value.status if r.ok else "died" if r.deaths and len(r.deaths) == r.attempts else "error")
        console.print(f"[{finished[0]}/{n}] stage {i}: {what} {r.seconds:.1f} s on {r.worker}, "
                      f"peak {r.peak_rss / 2**20:.0f} MB" + (f", {r.attempts} attempts" if r.attempts > 1 else ""))

    entries = run_stages(args.seq, args.dist, args.spec, executor, assume=args.assume,
                         numeric=not args.no_numeric, limits=limits, memo=not args.no_memo, on_result=progress,
                         spec=spec)
    wall = time.perf_counter() - t0
    code = max(e["exit_code"] for e in entries)
    for e in entries:
        assumed = ", ".join(f"{k} = {v}" for k, v in e["assumes"].items()) or "nothing"
        console.print(f"stage {e['index']}: {e['status']} (exit {e['exit_code']}); assumes {assumed}; proves "
                      + (", ".join(f"{k} = {v}" for k, v in e["proves"].items()) if isinstance(e["proves"], dict)
                         else e["proves"]))
        if e["exit_code"] != 0:     # what the stage's own check says, as `entangle check` prints it
            body = e["text"] or e["message"]
            console.print("\n".join("  " + line for line in body.rstrip().splitlines()), markup=False)
    if code == 0:
        console.print(f"refines: by {n} stages, each proved under the relations at the boundaries before it "
                      f"and proving the one after it (wall {wall:.1f} s)")
    else:
        bad = [str(e["index"]) for e in entries if e["exit_code"] != 0]
        console.print(f"{'refinement fails' if code == 1 else 'not proved'}: stage{'s' if len(bad) > 1 else ''} "
                      f"{', '.join(bad)} (wall {wall:.1f} s)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"status": next(e["status"] for e in entries if e["exit_code"] == code),
                       "exit_code": code, "executor": executor.name, "workers": executor.workers,
                       "wall_seconds": round(wall, 3),
                       "stages": [{k: v for k, v in e.items() if k != "text"} for e in entries]}, fh, indent=1)
    return code
