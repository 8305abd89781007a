"""Run a worker on real gloo ranks (CPU processes) and collect what each rank saved.

One copy of the spawn/collect protocol the ground-truth harnesses share (tests/corpus/soundness,
tests/corpus/programs, tests/test_interp_gloo).  Why not a bare ``mp.spawn``: gloo can abort a rank
in C++ teardown after its work is done ("terminate called without an active exception", seen
once in CI), which ``mp.spawn`` reports as a failed run.  So a rank saves its results atomically
and leaves with ``os._exit`` (no interpreter teardown), and a run in which a rank died by a
signal is retried once on a fresh port; a second crash is raised, never hidden.
"""
from __future__ import annotations

import datetime
import os
import socket
import sys
import tempfile

import torch


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def init(rank: int, world: int, port: int, timeout_s: int = 60) -> None:
    import torch.distributed as dist
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=timeout_s))


def finish(out_dir: str, rank: int, results) -> None:
    """Save ``results`` for the parent (write then rename: a crash never leaves half a file),
    leave the process group, and exit without interpreter teardown."""
    import torch.distributed as dist
    path = os.path.join(out_dir, f"r{rank}.pt")
    torch.save(results, path + ".tmp")
    os.replace(path + ".tmp", path)
    try:
        dist.destroy_process_group()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def run_each(out_dir: str, rank: int, entries, key, run_one) -> None:
    """``run_one(entry)`` for every entry, in order, a barrier after each (the ranks stay in step);
    an exception is the entry's ``{"error": ...}`` (a program that fails on gloo is wrong).  When
    the barrier itself fails, the ranks fell out of step in that entry (a rank raised before a
    collective the others entered): the entry is an error and this run stops there (``run_all``
    runs the rest in a fresh spawn).  Then ``finish``: the results by ``key(entry)``."""
    import torch.distributed as dist
    results = {}
    try:
        for e in entries:
            try:
                results[key(e)] = run_one(e)
            except Exception as ex:  # noqa: BLE001 - a program that fails on gloo is wrong
                results[key(e)] = {"error": f"{type(ex).__name__}: {str(ex).splitlines()[0][:200]}"}
            try:
                dist.barrier()
            except Exception as ex:  # noqa: BLE001 - the process group is no longer usable
                results[key(e)] = {"error": f"the ranks fell out of step in it ({type(ex).__name__}: "
                                            f"{str(ex).splitlines()[0][:160]})"}
                break
    finally:
        finish(out_dir, rank, results)


def run_all(entries, key, spawn_batch) -> dict:
    """{key(entry): [each rank's result]} for every entry: ``spawn_batch(entries)`` runs a list of
    entries on fresh gloo ranks (a worker calling ``run_each``) and returns each rank's results.
    Entries a run did not reach, because the ranks fell out of step in an earlier one, run again
    in a fresh spawn; a run that reaches no entry is an error, never a label."""
    results, todo = {}, list(entries)
    while todo:
        ranks = spawn_batch(todo)
        done = [e for e in todo if all(key(e) in r for r in ranks)]
        if not done:
            raise AssertionError(f"a gloo run reached none of {[key(e) for e in todo][:5]}...")
        for e in done:
            results[key(e)] = [r[key(e)] for r in ranks]
        todo = [e for e in todo if key(e) not in results]
    return results


def spawn(worker, world: int, args: tuple = (), setup=None) -> list:
    """``worker(rank, world, port, out_dir, *args)`` on ``world`` gloo ranks; it must end with
    ``finish``.  ``setup(out_dir)`` writes the payload first.  Returns each rank's results."""
    import torch.multiprocessing as mp
    for attempt in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            if setup is not None:
                setup(tmp)
            try:
                mp.spawn(worker, args=(world, free_port(), tmp, *args), nprocs=world, join=True)
            except mp.ProcessExitedException as ex:
                if ex.signal_name is None or attempt == 2:
                    raise
                print(f"gloo_ranks: {ex}; running again on a fresh port", file=sys.stderr)
                continue
            return [torch.load(os.path.join(tmp, f"r{r}.pt"), weights_only=False) for r in range(world)]
    raise AssertionError("unreachable")
