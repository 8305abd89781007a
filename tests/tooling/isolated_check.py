"""A check run in a child process whose address space is capped (the mutation harness checks
mutants that may make the checker grow without bound)."""
from __future__ import annotations

from entangle_py.check.checker import Checker
from entangle_py.config import Limits
from entangle_py.errors import InputError


def _check_child(conn, seq, dist, spec, limits, mem_bytes):
    import resource
    import time
    try:
        if mem_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
        t0 = time.perf_counter()
        try:
            res = Checker(seq, dist, spec, limits=limits).run()
            out = {"exit": res.exit_code, "status": res.status, "certificates": dict(res.certificates),
                   "reason": res.failure.reason if res.failure else "",
                   "node": res.failure.node if res.failure else ""}
        except InputError as e:
            out = {"exit": 2, "status": "bad-input", "reason": str(e).splitlines()[0][:300] if str(e) else ""}
        except MemoryError:
            out = {"exit": None, "status": "oom", "reason": "MemoryError"}
        except Exception as e:
            import traceback
            out = {"exit": None, "status": "crash", "reason": f"{type(e).__name__}: {str(e)[:300]}",
                   "traceback": traceback.format_exc()[-2000:]}
        out["seconds"] = time.perf_counter() - t0
        out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        conn.send(out)
    except BaseException as e:   # noqa: BLE001 - anything, reported to the parent
        try:
            conn.send({"exit": None, "status": "crash", "reason": f"{type(e).__name__}: {e}"})
        except BaseException:
            pass
    finally:
        conn.close()


def _vm_size() -> int:
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def start_check(seq, dist, spec, limits=None, mem_budget: int = 3 << 30):
    """Start a check in a child process whose address space is capped at the parent's plus
    ``mem_budget`` bytes.  Returns a handle for ``finish_check``."""
    import multiprocessing as mp
    import time

    limits = limits or Limits(seconds=20, nodes=200_000)
    # forkserver, not fork: a fork of a process whose egglog / torch threads hold a lock can hang
    # (seen when the test suite had run checks before).  The server preloads nothing: a child
    # forked from a process that has loaded egglog's core hangs in its first (pop) (egglog 13.2)
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload([])
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_check_child, args=(child, seq, dist, spec, limits,
                                               _vm_size() + mem_budget if mem_budget else 0), daemon=True)
    p.start()
    child.close()
    return {"proc": p, "conn": parent, "t0": time.perf_counter()}


def poll_check(h, timeout: float) -> dict | None:
    """The child's result if it ended (or was killed for overrunning ``timeout`` wall seconds),
    else None."""
    import time
    p, conn = h["proc"], h["conn"]
    elapsed = time.perf_counter() - h["t0"]
    if conn.poll(0):
        try:
            out = conn.recv()
        except EOFError:
            out = None
        p.join(5)
        if out is not None:
            return out
    if not p.is_alive():
        code = p.exitcode
        # an allocation failing under RLIMIT_AS aborts Rust code (SIGABRT) or kills the process
        return {"exit": None, "status": "oom" if code in (-6, -9) else "crash",
                "reason": f"child died (exit code {code})", "seconds": elapsed}
    if elapsed > timeout:
        p.kill()
        p.join(5)
        return {"exit": None, "status": "timeout", "reason": f"no verdict after {timeout:.0f} s wall", "seconds": elapsed}
    return None


def check_isolated(seq, dist, spec, limits=None, mem_budget: int = 3 << 30, timeout: float = 300) -> dict:
    """Check in a memory-capped child process: {'exit': 0..4 or None, 'status', 'reason', ...};
    status 'oom' / 'crash' / 'timeout' when the check did not end with a verdict."""
    import time
    h = start_check(seq, dist, spec, limits, mem_budget)
    while True:
        out = poll_check(h, timeout)
        if out is not None:
            return out
        time.sleep(0.05)
