"""Run independent tasks on workers: in this process, a local process pool, or a Ray cluster.

One interface, ``executor.run(tasks, on_result) -> [TaskResult]`` in the tasks' order, for
anything that fans out -- whole checks today (``entangle check-many``), stages and blocks of one
check later.  A ``Task`` names a module-level function and its picklable arguments; the
executor knows nothing of what it runs, so a stage check is just another task.

What every executor guarantees (tests/test_executor.py, tests/test_executor_ray.py):
- the results are the function's return values, whatever the executor (no executor-specific
  state reaches a task);
- a worker that dies under a task (a signal, the OOM killer, a lost Ray node) is replaced and the
  task retried once; a task that still cannot finish is reported with its name and why, and the
  other tasks finish;
- an exception raised by the function is not retried (it would raise again): it is the task's
  error, with the traceback's last line.

Ray is imported only by ``RayExecutor`` (``pip install -e '.[ray]'``); the default install has none.
"""
from __future__ import annotations

import os
import resource
import signal
import socket
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

from entangle_py.errors import InputError

RETRIES = 1     # a worker death is retried this many times


@dataclass(frozen=True)
class Task:
    """``fn(*args)`` under the name ``name`` (shown in progress lines and in failures).  ``fn`` is
    a module-level function and ``args`` plain data, so both pickle by reference / value."""
    name: str
    fn: Callable[..., Any]
    args: tuple = ()


@dataclass
class TaskResult:
    name: str
    value: Any = None                 # fn's return value; None when the task did not finish
    error: str | None = None          # why it did not finish (an exception, or a worker death twice)
    seconds: float = 0.0              # wall time of the successful (or last) attempt
    worker: str = ""                  # which worker ran it (host, slot or Ray node, pid)
    peak_rss: int = 0                 # peak resident bytes of the worker process after the task
    attempts: int = 1
    deaths: list = field(default_factory=list)   # why each dead attempt died

    @property
    def ok(self) -> bool:
        return self.error is None


def _run_here(task: Task, worker: str) -> tuple:
    """The task in the calling process -> ("ok", value, seconds, worker, rss) or ("error", text, ...)."""
    t0 = time.perf_counter()
    try:
        value = task.fn(*task.args)
        status = "ok"
    except Exception as e:    # the task's own failure: reported, never retried
        tb = traceback.extract_tb(e.__traceback__)
        where = f" at {tb[-1].filename}:{tb[-1].lineno}" if tb else ""
        value, status = f"{type(e).__name__}: {e}{where}", "error"
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024     # KiB on Linux
    return status, value, time.perf_counter() - t0, worker, rss


def _finished(task: Task, outcome: tuple, attempts: int, deaths: list) -> TaskResult:
    status, value, seconds, worker, rss = outcome
    return TaskResult(task.name, value if status == "ok" else None, None if status == "ok" else value,
                      seconds, worker, rss, attempts, deaths)


def _gave_up(task: Task, deaths: list, worker: str) -> TaskResult:
    return TaskResult(task.name, error=f"worker died on every attempt ({'; '.join(deaths)})", worker=worker,
                      attempts=len(deaths), deaths=deaths)


class InProcessExecutor:
    """One worker: this process, tasks in order.  A task that kills its process kills the caller
    too, so there is no retry here; use the pool for untrusted work."""
    name = "in-process"
    workers = 1

    def run(self, tasks: list[Task], on_result: Callable[[int, TaskResult], None] | None = None) -> list[TaskResult]:
        out = []
        worker = f"{socket.gethostname()}:main/{os.getpid()}"
        for i, task in enumerate(tasks):
            r = _finished(task, _run_here(task, worker), 1, [])
            out.append(r)
            if on_result:
                on_result(i, r)
        return out


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exited with code {exitcode} before returning a result"


def _pool_worker(conn, worker: str, preload):
    """A pool worker's life: warm up, then run each task received until told to stop (None)."""
    if preload:
        preload()
    worker = f"{worker}/{os.getpid()}"
    while (task := conn.recv()) is not None:
        conn.send(_run_here(task, worker))


class ProcessPoolExecutor:
    """Up to ``workers`` tasks at once, on as many long-lived worker processes.  Workers are
    spawned, not forked: a parent that has run egglog holds its thread pool's locks, and a fork of
    it deadlocks on them.  ``preload`` (a module-level function) runs once in each worker, to
    import what every task needs before the first one.  A worker that ends without sending its
    task's result died: it is replaced and the task retried once."""
    name = "process pool"

    def __init__(self, workers: int | None = None, preload: Callable[[], None] | None = None):
        self.workers = max(1, workers or default_workers())
        self.preload = preload

    def run(self, tasks: list[Task], on_result: Callable[[int, TaskResult], None] | None = None) -> list[TaskResult]:
        import multiprocessing as mp
        from multiprocessing.connection import wait
        ctx = mp.get_context("spawn")
        host = socket.gethostname()
        results: list[TaskResult | None] = [None] * len(tasks)
        queue = list(range(len(tasks)))      # task indices not yet started (retries go first)
        deaths: dict[int, list[str]] = {i: [] for i in range(len(tasks))}
        workers: dict[int, tuple] = {}       # slot -> (process, connection)
        busy: dict[int, int] = {}            # slot -> index of the task it runs
        idle_deaths: list[str] = []

        def start(slot):
            conn, child = ctx.Pipe()
            p = ctx.Process(target=_pool_worker, args=(child, f"{host}:pool-{slot}", self.preload), daemon=True)
            p.start()
            child.close()
            workers[slot] = (p, conn)

        def done(i, r):
            results[i] = r
            if on_result:
                on_result(i, r)

        try:
            for slot in range(min(self.workers, len(tasks))):
                start(slot)
            while queue or busy:
                for slot in workers:
                    if queue and slot not in busy:
                        busy[slot] = queue.pop(0)
                        workers[slot][1].send(tasks[busy[slot]])
                ready = wait([c for p, c in workers.values()] + [p.sentinel for p, c in workers.values()])
                for slot, (p, conn) in list(workers.items()):
                    if conn not in ready and p.sentinel not in ready:
                        continue
                    try:
                        outcome = conn.recv() if conn.poll() else None
                    except (EOFError, OSError):
                        outcome = None
                    if outcome is not None:
                        i = busy.pop(slot)
                        done(i, _finished(tasks[i], outcome, len(deaths[i]) + 1, deaths[i]))
                        continue
                    p.join()    # no result and the pipe closed or the process ended: it died
                    conn.close()
                    died = f"on {host}:pool-{slot} (pid {p.pid}): {_death(p.exitcode)}"
                    if slot not in busy:        # died between tasks: while warming up
                        idle_deaths.append(died)
                        if len(idle_deaths) > 2 * self.workers:
                            raise RuntimeError("pool workers die before any task: " + "; ".join(idle_deaths[:3]))
                        start(slot)
                        continue
                    start(slot)
                    i = busy.pop(slot)
                    deaths[i].append(f"attempt {len(deaths[i]) + 1} {died}")
                    if len(deaths[i]) > RETRIES:
                        done(i, _gave_up(tasks[i], deaths[i], f"{host}:pool-{slot}"))
                    else:
                        queue.insert(0, i)
        finally:
            for p, conn in workers.values():
                try:
                    conn.send(None)
                except OSError:
                    pass
            for p, conn in workers.values():
                p.join(timeout=5)
                if p.is_alive():    # interrupted mid-task: leave no orphan behind
                    p.kill()
                    p.join()
                conn.close()
        return results


def _ray_task(task: Task) -> tuple:
    import ray
    ctx = ray.get_runtime_context()
    return _run_here(task, f"ray:{ctx.get_node_id()[:8]}/{os.getpid()}")


class RayExecutor:
    """Tasks on a Ray cluster: a local one started here (``address=None``: ``workers`` CPUs), or an
    existing one joined (``address``).  Ray's own retry is off; a system error under a task (its
    worker crashed or was killed, its node died) resubmits it once, as the pool does."""
    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None,
                 object_store_memory: int = 200 << 20):
        import importlib.util
        try:
            found = importlib.util.find_spec("ray") is not None
        except (ImportError, ValueError):     # ValueError: sys.modules["ray"] is None
            found = False
        if not found:
            raise InputError("--ray needs Ray, which is not installed: pip install 'entangle-py[ray]' "
                             "(in a checkout: pip install -e '.[ray]')") from None
        self.address = address
        self.workers = max(1, workers or default_workers())
        self.object_store_memory = object_store_memory

    def run(self, tasks: list[Task], on_result: Callable[[int, TaskResult], None] | None = None) -> list[TaskResult]:
        if not self.address:
            # a cluster of this machine only: Ray then takes the loopback for the node's address
            # (by default it resolves even 127.0.0.1 to a network address and talks over it)
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        import ray
        started = False
        if not ray.is_initialized():
            if self.address:
                ray.init(address=self.address, log_to_driver=False)
            else:
                ray.init(num_cpus=self.workers, object_store_memory=self.object_store_memory,
                         include_dashboard=False, log_to_driver=False)
            started = True
        try:
            return self._run(ray, tasks, on_result)
        finally:
            if started:
                ray.shutdown()

    def _run(self, ray, tasks, on_result):
        remote = ray.remote(num_cpus=1, max_retries=0)(_ray_task)
        results: list[TaskResult | None] = [None] * len(tasks)
        deaths: dict[int, list[str]] = {i: [] for i in range(len(tasks))}
        pending = {remote.remote(t): i for i, t in enumerate(tasks)}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            ref = ready[0]
            i = pending.pop(ref)
            try:
                r = _finished(tasks[i], ray.get(ref), len(deaths[i]) + 1, deaths[i])
            except ray.exceptions.RayError as e:   # the task's own exceptions are caught in _run_here
                deaths[i].append(f"attempt {len(deaths[i]) + 1}: {type(e).__name__}: {str(e).splitlines()[0]}")
                if len(deaths[i]) <= RETRIES:
                    pending[remote.remote(tasks[i])] = i
                    continue
                r = _gave_up(tasks[i], deaths[i], "ray")
            results[i] = r
            if on_result:
                on_result(i, r)
        return results


def default_workers() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def make_executor(workers: int | None = None, ray: bool = False, ray_address: str | None = None,
                  preload: Callable[[], None] | None = None):
    """The executor the command line asks for: Ray with ``--ray`` or ``--ray-address``, else the
    local pool with ``workers`` processes (default: the cores), in this process when that is 1."""
    if workers is not None and workers < 1:
        raise InputError(f"--workers must be at least 1, got {workers}")
    if ray or ray_address:
        return RayExecutor(workers, ray_address)
    n = workers or default_workers()
    return InProcessExecutor() if n == 1 else ProcessPoolExecutor(n, preload)
