"""Where each rank's random draws come from: the evidence ``check/random.py`` couples random
draws with, recorded while a rank is captured (bundle meta ``ir.bundle_meta.RNG_STREAMS``, read by ``ir.bundle_meta.rng_streams``).

Inside a Dynamo-compiled forward (torch 2.13) every random op draws from the rank's default CPU
generator: ``torch.manual_seed`` there is a graph break and an explicit ``generator=`` is not
supported.  So where a draw's samples come from is fixed by what ran before the forward: the seed
the program set (when its script is imported, or in ``build``) and the draws made since --
parameter init in ``build``, which capture runs on meta tensors where nothing is drawn but which
a real run draws before its forward.  Per rank this records:

* ``seeded``, ``seed``: whether the program seeded the generator, and with what.  Capture seeds it
  with a random sentinel before the script is imported; a seed other than the sentinel is the
  program's.  A program that never seeds runs on its process's own seed (CPU: random per process;
  CUDA: a fixed default), so nothing is known of how two ranks' streams relate.
* ``state``: a digest of the generator's state after ``build`` (real CPU draws it made are in it);
* ``build``: the draws ``build`` made on the default generator (op, shape, dtype, params), seen by
  a dispatch mode: on meta they draw nothing here, in a real run they advance the generator;
* ``forward``: the shapes of the draws the forward makes run eagerly (on fake tensors, in order;
  None when its graph draws nothing, or that run fails).  AOTAutograd drops a draw whose result is unused, which an eager run
  still makes: where the graph's draws are not these, eager and compiled runs draw from different
  positions of the stream, and check/random.py trusts neither.

Each rank is captured in a process of its own (frontend/rank_processes.py), which imports the
script itself: its Recorder sees the generator from before that import.  The generator of the
process recording is left as it was (``entry``).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os


class Recorder:
    """Make one before the capture script is imported (it may seed there), call ``imported()``
    after, wrap the rank's ``build`` in ``building(rank)``; ``entry(rank)`` gives its record (one
    per rank's process; ``merge`` makes the meta entry of all of them)."""

    def __init__(self):
        import torch
        self._caller = torch.get_rng_state()      # the state holds its seed: set_rng_state restores both
        self.sentinel = int.from_bytes(os.urandom(8), "little") >> 1
        torch.manual_seed(self.sentinel)
        self._imported = torch.get_rng_state()
        self.ranks: dict[int, dict] = {}

    def imported(self):
        """The script is imported: what every rank's process holds before its ``build``."""
        import torch
        self._imported = torch.get_rng_state()

    @contextlib.contextmanager
    def building(self, rank: int):
        import torch
        torch.set_rng_state(self._imported)
        log = _DrawLog()
        with log:
            yield
        seed = torch.initial_seed()
        entry = {"seeded": seed != self.sentinel, "state": _digest(torch.get_rng_state()), "build": log.draws}
        if entry["seeded"]:
            entry["seed"] = seed
        self.ranks[rank] = entry

    def forward(self, rank: int, shapes: list | None):
        """The shapes of the draws rank ``rank``'s forward makes run eagerly (``eager_draws``)."""
        if rank in self.ranks:
            self.ranks[rank]["forward"] = shapes

    def entry(self, rank: int) -> dict | None:
        """Rank ``rank``'s record (None when its build was not recorded); the caller's generator
        state is restored."""
        import torch
        torch.set_rng_state(self._caller)
        return self.ranks.get(rank)


def merge(entries: list) -> str | None:
    """The ``RNG_STREAMS`` meta entry from every rank's record, in rank order (None unless every
    rank was recorded: each is captured in a process of its own)."""
    if not entries or any(e is None for e in entries):
        return None
    return json.dumps({str(r): e for r, e in enumerate(entries)}, sort_keys=True)


def eager_draws(model, inputs: dict, fake_mode, gm) -> list | None:
    """The shapes of the draws ``model(**inputs)`` makes run eagerly on fake tensors, in order.
    None when its graph ``gm`` draws nothing (no position to check: the run is skipped) or the
    eager run fails (nothing is then known of where its draws come from)."""
    import torch
    if not any(isinstance(n.target, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in n.target.tags
               for n in gm.graph.nodes):
        return None
    log = _DrawLog()
    try:
        with fake_mode, torch.no_grad(), log:
            model(**inputs)
    except Exception:      # noqa: BLE001 - only the record is lost, and the check trusts no position
        return None
    return [d[1] for d in log.draws]


def _digest(state) -> str:
    return hashlib.sha256(state.numpy().tobytes()).hexdigest()


def signature(op: str, shape, dtype: str, params) -> list:
    """A draw as evidence lists it: [op, shape, dtype, params] (sizes as ints or their text)."""
    return [op, [d if isinstance(d, int) else str(d) for d in shape], dtype, str(params)]


def _DrawLog():
    """A dispatch mode logging each op that draws from the default generator."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class DrawLog(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.draws: list = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if torch.Tag.nondeterministic_seeded in func.tags and kwargs.get("generator") is None:
                out = func(*args, **kwargs)
                first = out[0] if isinstance(out, (tuple, list)) else out
                if isinstance(first, torch.Tensor):
                    params = tuple(a for a in args if not isinstance(a, torch.Tensor))
                    self.draws.append(signature(str(func), tuple(first.shape), str(first.dtype).removeprefix("torch."),
                                                params))
                return out
            return func(*args, **kwargs)

    return DrawLog()

