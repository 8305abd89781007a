"""The command line itself: --version, exit codes in --help, and help that does not load torch."""
import os
import subprocess
import sys

from conftest import run_entangle
from entangle_py import __version__


def _run(*args, env=None):
    return run_entangle(*args, env=None if env is None else {**os.environ, **env})


def test_version():
    out = _run("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"entangle-py {__version__}"


def test_check_help_lists_every_exit_code():
    out = _run("check", "--help")
    assert out.returncode == 0
    for code in "01234":
        assert f"\n  {code}  " in out.stdout, code


def test_help_does_not_import_torch_or_egglog():
    """--help answers at once: building the parser loads neither torch nor egglog."""
    code = ("import sys, contextlib, io, entangle_py.cli as c\n"
            "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
            "    c.main(['check', '--help'])\n"
            "print(sorted(m for m in ('torch', 'egglog', 'z3', 'sympy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_piped_report_lines_are_not_wrapped():
    """A failure's source line and terms stay on one line when the output is a pipe (CI logs)."""
    out = _run("check", "graphs/mlp_tp2_missing_allreduce/seq.pt", "graphs/mlp_tp2_missing_allreduce/dist.pt",
               "--spec", "graphs/mlp_tp2_missing_allreduce/spec.toml", "-v", env={"COLUMNS": "40"})
    assert out.returncode == 1
    best = [ln for ln in out.stdout.splitlines() if "best term found:" in ln]
    assert best and best[0].endswith("r0.param:fc2.bias)"), out.stdout
    assert "total" in out.stdout.splitlines()[-1]     # -v timings on stdout with the rest
