"""For users' own test suites: ``assert_refines(build, world_size=2, spec=...)``.

    from entangle_py.testing import assert_refines

    def test_my_tensor_parallel_mlp():
        assert_refines(build, world_size=2, spec="specs/mlp.toml", joint=True)

``build(rank, world_size) -> (model, inputs)`` is the capture contract (README, *Capturing your
program*).  Both programs are captured (world size 1 and ``world_size``), checked, and a verdict
other than "refines" fails the test with the checker's report as the assertion message.
"""
from __future__ import annotations

import inspect
import io
import tomllib
import types
from pathlib import Path


def assert_refines(build, world_size: int = 2, spec=None, joint: bool = False, dynamic: bool = False,
                   limits=None):
    """Capture ``build`` sequentially and on ``world_size`` ranks, check, and return the result.

    ``spec`` is a path to a spec TOML, its text, a dict (parsed TOML) or None (inputs inferred).
    Raises AssertionError carrying the report unless the distributed program refines."""
    from rich.console import Console

    from entangle_py.frontend.capture import capture
    from entangle_py.check.checker import Checker
    from entangle_py.report.text import print_result

    module = types.ModuleType(f"entangle_build_{getattr(build, '__name__', 'build')}")
    module.build = build
    try:
        module.__file__ = inspect.getsourcefile(build)   # source lines point at the user's file
    except TypeError:
        pass
    seq = capture(module, 1, joint=joint, dynamic=dynamic)
    dist = capture(module, world_size, joint=joint, dynamic=dynamic)
    res = Checker(seq, dist, _spec(spec), limits=limits).run()
    if res.status != "refines":
        out = io.StringIO()
        print_result(res, Console(file=out, width=120, highlight=False, emoji=False, soft_wrap=True))
        raise AssertionError(f"the {world_size}-rank program does not refine its sequential version "
                             f"(exit {res.exit_code}):\n{out.getvalue()}")
    return res


def _spec(spec):
    from entangle_py.check import spec as S
    if spec is None:
        return S.Spec()
    if isinstance(spec, dict):
        return S.parse_spec(spec)
    if isinstance(spec, Path) or (isinstance(spec, str) and "\n" not in spec and spec.endswith(".toml")):
        return S.load_spec(spec)
    return S.parse_spec(tomllib.loads(spec), "spec text")
