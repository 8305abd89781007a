"""Run jobs (one per rank) each in a fresh process, in parallel where cores allow.

Why: tracing leaves state in torch that ``torch._dynamo.reset()`` does not clear.  With the ranks
of a capture traced one after another in one process, rank 1 of a DTensor
``ColwiseParallel(output_layouts=Replicate())`` layer recorded ``getitem(split, 0)`` -- rank 0's
half of the gradient -- in its backward, while rank 1 traced alone (and run on gloo) takes its
own.  A process per rank carries nothing from another rank's trace.

How: a *server* process (started once per calling process, on first use) imports torch and the
modules it is told to, and then only forks: each job runs in a child forked from it, so the child
starts in milliseconds with torch imported, and nothing traced before.  The server never runs a
job itself.  The caller sends ``(key, "module:function", job)`` to the server and reads back, per
job, what the function returned or raised, what it warned, and what it wrote to stdout/stderr
(relayed to this process's ``sys.stdout`` / ``sys.stderr``).  A child that dies without a result
(a signal, ``os._exit``) is reported as :class:`RankProcessDied`, never waited for forever.

``fork_here=True`` forks the children from the calling process instead: for a job whose inputs
only this process has (a ``build`` function defined in a closure), and for a caller that has
traced nothing (``entangle capture``: no server to start, torch imported once).  The children
carry this process's state, but still nothing from each other.

The server ignores SIGINT (Ctrl-C interrupts the caller, which closes the connection); when the
caller goes away the server kills its children and exits.  Frames on the pipes are an 8-byte
length and a pickle; both ends are this module, in processes of the same Python.
"""
from __future__ import annotations

import atexit
import dataclasses
import gc
import importlib
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from typing import Any, Callable

from entangle_py.errors import InputError


class RankProcessDied(InputError):
    """A job's process ended without a result (killed by a signal, or exited early)."""


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a job's process (the ``__cause__`` of the
    re-raised exception, so that an internal error shows where it happened)."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return "\n" + self.text


@dataclasses.dataclass
class Outcome:
    """What a job's process gave back."""
    key: Any
    seconds: float              # wall time from start to result, seen by the caller
    value: Any = None
    error: BaseException | None = None


def cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:      # not Linux
        return max(1, os.cpu_count() or 1)


def run(target: str, jobs: list[tuple[Any, Any]], preload: tuple[str, ...] = (), fork_here: bool = False,
        on_done: Callable[[Outcome], None] | None = None, parallel: int | None = None) -> list[Outcome]:
    """Run ``target(job)`` (``"module:function"``) for each ``(key, job)`` in a process of its own,
    at most ``parallel`` (default: the usable cores) at once, started in order.  Returns the
    outcomes in job order; ``on_done`` sees each as it arrives.  After a failed job no further job
    starts (the ones running finish), so the first failure in job order is among the outcomes,
    as if the jobs had run one after another."""
    parallel = max(1, min(len(jobs), parallel or cores()))
    pool: _Pool = _LocalPool() if fork_here else _server(preload)
    pending = list(enumerate(jobs))
    started: dict[int, float] = {}      # job index -> when it started
    done: dict[int, Outcome] = {}
    failed = False
    try:
        while pending or started:
            while pending and len(started) < parallel and not failed:
                i, (_, job) = pending.pop(0)
                started[i] = time.perf_counter()
                pool.start(i, target, job)
            if not started:
                break
            i, reply = pool.next_reply()
            out = _outcome(jobs[i][0], reply, time.perf_counter() - started.pop(i))
            done[i] = out
            failed = failed or out.error is not None
            if on_done is not None:
                on_done(out)
    except BaseException:
        pool.abandon()
        raise
    return [done[i] for i in sorted(done)]


# ----------------------------------------------------------------------------- the child

def _child(target: str, job, result_fd: int, out_fd: int, err_fd: int, close_fds) -> None:
    """Run one job in a freshly forked process; write its result; never return."""
    try:
        for fd in close_fds:
            os.close(fd)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                module, _, fn = target.partition(":")
                result = ("ok", getattr(importlib.import_module(module), fn)(job))
            except BaseException as e:       # noqa: BLE001 - every failure goes to the caller
                result = ("error", _picklable(e), traceback.format_exc())
        shown = [(w.category, str(w.message), w.filename, w.lineno) for w in caught]
        try:
            data = pickle.dumps((result, shown))
        except Exception as e:             # noqa: BLE001 - a result that cannot travel
            data = pickle.dumps((("error", RuntimeError(f"the job's result cannot be sent back: {e}"),
                                  traceback.format_exc()), []))
        with os.fdopen(result_fd, "wb") as f:
            f.write(data)
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(0)


def _picklable(e: BaseException) -> BaseException:
    """``e`` if it survives a round trip through pickle, else a RuntimeError saying what it was."""
    try:
        back = pickle.loads(pickle.dumps(e))
        if type(back) is type(e) and str(back) == str(e):
            return e
    except Exception:    # noqa: BLE001
        pass
    return RuntimeError(f"{type(e).__name__}: {e}")


def _outcome(key, reply, seconds) -> Outcome:
    status, data, out, err = reply
    if out:
        sys.stdout.write(out.decode(errors="replace"))
        sys.stdout.flush()
    if err:
        sys.stderr.write(err.decode(errors="replace"))
        sys.stderr.flush()
    try:
        result, shown = pickle.loads(data)
    except Exception:    # noqa: BLE001 - no (complete) result: the process died
        why = (f"was killed by signal {signal.Signals(-status).name}" if status < 0
               else f"exited with code {status}")
        last = err.decode(errors="replace").strip().splitlines()[-1:] if err else []
        tail = f" (its last words: {last[0][:200]})" if last else ""
        return Outcome(key, seconds, error=RankProcessDied(f"the process running {key} {why} before "
                                                           f"giving a result{tail}"))
    registry: dict = {}
    for category, text, filename, lineno in shown:
        warnings.warn_explicit(text, category, filename, lineno, registry=registry)
    if result[0] == "ok":
        return Outcome(key, seconds, value=result[1])
    error, tb = result[1], result[2]
    if not isinstance(error, InputError):
        error.__cause__ = RemoteTraceback(tb)
    return Outcome(key, seconds, error=error)


# ----------------------------------------------------------------------------- forking

class _Children:
    """Jobs running in children forked from this process; ``ready(fd)`` collects their replies."""

    def __init__(self, close_in_child=()):
        self.close_in_child = tuple(close_in_child)
        self.live: dict[int, list] = {}       # result fd -> [key, pid, bytes so far, stdout file, stderr file]

    def start(self, key, target: str, job) -> None:
        out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            _child(target, job, w, out.fileno(), err.fileno(), self.close_in_child + tuple(self.live) + (r,))
        os.close(w)
        self.live[r] = [key, pid, bytearray(), out, err]

    def ready(self, fd: int):
        """Read what child ``fd`` sent; its (key, (exit status, result, stdout, stderr)) once it is done."""
        child = self.live[fd]
        data = os.read(fd, 1 << 20)
        if data:
            child[2] += data
            return None
        os.close(fd)
        del self.live[fd]
        key, pid, result, out, err = child
        _, status = os.waitpid(pid, 0)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        texts = []
        for f in (out, err):
            f.seek(0)
            texts.append(f.read())
            f.close()
        return key, (code, bytes(result), texts[0], texts[1])

    def kill_all(self) -> None:
        for fd, (_, pid, *_rest) in list(self.live.items()):
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            os.close(fd)
        self.live.clear()


class _Pool:
    def start(self, key, target: str, job) -> None:
        raise NotImplementedError

    def next_reply(self):
        raise NotImplementedError

    def abandon(self) -> None:
        raise NotImplementedError


class _LocalPool(_Pool):
    """Children forked from the calling process."""

    def __init__(self):
        self.children = _Children()

    def start(self, key, target, job):
        self.children.start(key, target, job)

    def next_reply(self):
        while True:
            ready, _, _ = select.select(list(self.children.live), [], [])
            for fd in ready:
                got = self.children.ready(fd)
                if got is not None:
                    return got

    def abandon(self):
        self.children.kill_all()


# ----------------------------------------------------------------------------- the server

def _write_frame(fd: int, obj) -> None:
    data = pickle.dumps(obj)
    view = memoryview(struct.pack("<Q", len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _read_exact(fd: int, n: int) -> bytes | None:
    parts, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _read_frame(fd: int):
    head = _read_exact(fd, 8)
    if head is None:
        return None
    body = _read_exact(fd, struct.unpack("<Q", head)[0])
    return None if body is None else pickle.loads(body)


class _Server(_Pool):
    """The connection to a server process (see the module docstring)."""

    def __init__(self, preload: tuple[str, ...]):
        req_r, self.req_w = os.pipe()
        self.resp_r, resp_w = os.pipe()
        path = [os.path.abspath(p) for p in sys.path]
        boot = ("import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
                "from entangle_py.frontend.rank_processes import _serve; "
                "_serve(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])")
        import json
        self.proc = subprocess.Popen([sys.executable, "-c", boot, json.dumps(path), str(req_r), str(resp_w), *preload],
                                     pass_fds=(req_r, resp_w), stdin=subprocess.DEVNULL, cwd="/")
        os.close(req_r)
        os.close(resp_w)
        self.owner = os.getpid()
        self.preload = preload
        self.broken = False

    def start(self, key, target, job):
        try:
            _write_frame(self.req_w, (key, target, job))
        except OSError:
            self.broken = True
            raise RankProcessDied("the capture server process has exited") from None

    def next_reply(self):
        reply = _read_frame(self.resp_r)
        if reply is None:
            self.broken = True
            code = self.proc.wait()
            raise RankProcessDied(f"the capture server process has exited (code {code})")
        return reply

    def abandon(self):
        self.close()

    def close(self):
        global _SERVER
        self.broken = True
        for fd in (self.req_w, self.resp_r):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if _SERVER is self:
            _SERVER = None


_SERVER: _Server | None = None


def _server(preload: tuple[str, ...]) -> _Server:
    global _SERVER
    if _SERVER is not None and (_SERVER.owner != os.getpid() or _SERVER.broken or _SERVER.proc.poll() is not None
                                or not set(preload) <= set(_SERVER.preload)):
        if _SERVER.owner == os.getpid():
            _SERVER.close()
        _SERVER = None
    if _SERVER is None:
        _SERVER = _Server(tuple(preload))
    return _SERVER


@atexit.register
def _close_server() -> None:
    if _SERVER is not None and _SERVER.owner == os.getpid():
        _SERVER.close()


def preload_here(preload) -> None:
    """Import ``preload`` into this process, to fork children from it (the server does this; so
    may a caller that has traced nothing, ``entangle capture``, and then runs with ``fork_here``)."""
    for name in preload:
        try:
            importlib.import_module(name)
        except ImportError:
            pass          # an optimisation only: the child imports what it needs
    # what is held now is never freed: kept out of the collector's sight, a child's garbage
    # collections do not walk (and copy, page by page) all of torch
    gc.freeze()


def _serve(req_fd: int, resp_fd: int, preload: list[str]) -> None:
    """The server's main loop: import ``preload``, then fork a child per request and send back
    each child's reply; exit (killing the children) when the caller closes the connection."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    preload_here(preload)
    children = _Children(close_in_child=(req_fd, resp_fd))
    while True:
        ready, _, _ = select.select([req_fd] + list(children.live), [], [])
        for fd in ready:
            if fd == req_fd:
                request = _read_frame(req_fd)
                if request is None:
                    children.kill_all()
                    os._exit(0)
                key, target, job = request
                children.start(key, target, job)
            elif fd in children.live:
                got = children.ready(fd)
                if got is not None:
                    _write_frame(resp_fd, got)
