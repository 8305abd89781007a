"""`entangle check` on bundles and FX dumps imports neither torch nor sympy nor Z3 (issue 24): a
check reads no tensor, and a program of static sizes has no symbolic one.  Only capture, plugin
decomposition, the numeric re-check and symbolic sizes import them, on first use."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import shipped_example

ROOT = Path(__file__).resolve().parents[1]
GPT = ROOT.parent / "shared" / "external" / "entangle-data" / "gpt"

PROBE = """
import json, sys
from entangle_py.cli import main
rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "imported": sorted(m for m in ("torch", "sympy", "z3") if m in sys.modules)}))
"""


def _check_imports(*args) -> dict:
    r = subprocess.run([sys.executable, "-c", PROBE, "check", *args], capture_output=True, text=True, cwd=ROOT)
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_bundle_check_imports_no_torch():
    seq, dist, spec = shipped_example("mlp_tp2_missing_allreduce")
    out = _check_imports(seq, dist, "--spec", spec, "--no-numeric")
    assert out == {"rc": 1, "imported": []}


@pytest.mark.skipif(not GPT.exists(), reason=f"third-party graphs not present at {GPT}")
def test_fx_dump_check_imports_no_torch():
    """The GPT pair from its FX dumps, the numeric re-check included (over its memory budget); the
    dumps carry no evidence of the ranks' generators: the dropouts are coupled by assumption."""
    out = _check_imports(str(GPT / "paral1_layer1"), str(GPT / "paral2_layer1"),
                         "--spec", str(GPT / "specs" / "layer1_tp2.toml"), "--assume", "same_rng")
    assert out == {"rc": 0, "imported": []}


def test_numeric_recheck_still_runs_torch_for_a_small_program():
    seq, dist, spec = shipped_example("mlp_tp2")
    out = _check_imports(seq, dist, "--spec", spec)
    assert out["rc"] == 0 and "torch" in out["imported"]
