"""For users' own test suites: ``assert_refines(build, world_size=2, spec=...)``.

    from entangle_py.testing import assert_refines

    def test_my_tensor_parallel_mlp():
        assert_refines(build, world_size=2, spec="specs/mlp.toml", joint=True)

``build(rank, world_size) -> (model, inputs)`` is the capture contract (docs/capture.md).  Both
programs are captured (world size 1 and ``world_size``) and checked by the same pipeline as
``entangle check``; a verdict other than "refines" fails the test with the checker's report.
"""
from __future__ import annotations

import contextlib
import inspect
import io
import logging
import tomllib
import types
from pathlib import Path


def assert_refines(build=None, world_size: int = 2, spec=None, joint: bool = False, dynamic: bool = False,
                   limits=None, *, seq_build=None, dist_build=None, numeric: bool = True, assume=()):
    """Capture sequentially and on ``world_size`` ranks, check, and return the result.

    ``build`` builds both programs (called with world size 1 and ``world_size``; a function, a
    module or script path defining ``build``, or a capture target ``prog.py:NAME`` / ``module:NAME``); or give
    ``seq_build`` and ``dist_build`` for a sequential program written apart from the distributed
    one.  ``spec`` is a path to a spec TOML, its text, a dict (parsed TOML) or None (inputs
    inferred).  The check is ``entangle check``'s own (``pipeline.check_graphs``: plugin ops
    decomposed, the numeric re-check unless ``numeric=False``).  Raises AssertionError carrying
    the report -- the failing operator, its line and the witness -- unless the program refines."""
    __tracebackhide__ = True       # pytest shows the user's call, not this helper's frames
    from entangle_py.frontend.capture import capture
    from entangle_py.pipeline import check_graphs

    if (build is None) == (seq_build is None and dist_build is None) or \
            (build is None and (seq_build is None or dist_build is None)):
        raise TypeError("assert_refines takes build, or both seq_build and dist_build")
    with _quiet_trace_log():
        seq = capture(_as_module(seq_build or build), 1, joint=joint, dynamic=dynamic)
        dist = capture(_as_module(dist_build or build), world_size, joint=joint, dynamic=dynamic)
    res, _ = check_graphs(seq, dist, _spec(spec), limits=limits, numeric=numeric, assume=assume)
    if res.status != "refines" or res.exit_code != 0:
        raise AssertionError(f"the {world_size}-rank program does not refine its sequential version "
                             f"(exit {res.exit_code}):\n{_report(res)}")
    return res


def _as_module(build):
    """The capture contract's module: ``build(rank, world_size) -> (model, inputs)``.  A module, a
    script path or a module-level function is imported by name in the ranks' processes; a closure
    only this process has is forked from it (after this process has run torch or a check, a fork
    may hang on a lock a thread held: prefer a module-level build)."""
    if isinstance(build, (types.ModuleType, str, Path)):
        return build
    module = types.ModuleType(f"entangle_build_{getattr(build, '__name__', 'build')}")
    module.build = build
    try:
        module.__file__ = inspect.getsourcefile(build)   # source lines point at the user's file
    except TypeError:
        pass
    return module


def _report(res) -> str:
    from rich.console import Console

    from entangle_py.report.text import print_result
    out = io.StringIO()
    print_result(res, Console(file=out, width=120, highlight=False, emoji=False, soft_wrap=True))
    return out.getvalue()


@contextlib.contextmanager
def _quiet_trace_log():
    """torch's structured trace logger (``torch.__trace``) writes an empty DEBUG record per traced
    artifact; under pytest they flood the captured log of the user's test."""
    log = logging.getLogger("torch.__trace")
    was = log.propagate
    log.propagate = False
    try:
        yield
    finally:
        log.propagate = was


def _spec(spec):
    from entangle_py.check import spec as S
    if spec is None:
        return S.Spec()
    if isinstance(spec, dict):
        return S.parse_spec(spec)
    if isinstance(spec, Path) or (isinstance(spec, str) and "\n" not in spec and spec.endswith(".toml")):
        return S.load_spec(spec)
    return S.parse_spec(tomllib.loads(spec), "spec text")
