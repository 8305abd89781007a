"""The adversary on the checker's own spec features, assumptions and flags (tests/corpus/soundness/
adversary.py, docs/adversary.md): every label confirmed on real gloo ranks, and `entangle check`
must give each attempt its right verdict -- a wrong program exit 1 (or 2 where the table allows a
refusal), a correct one exit 0; a wrong program that refines only on a false fact the user wrote
(kind "trusted") must print that fact with the verdict.

Tests of attempts that found a hole FAIL on purpose until the checker is fixed: never xfail them.
A correct program the checker cannot prove yet (``found`` starts "false alarm") is a strict xfail
naming the missing lemma: it must start to pass when the lemma lands.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
from pathlib import Path

import pytest

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"
if str(CORPUS_DIR) not in sys.path:
    sys.path.insert(0, str(CORPUS_DIR))

from soundness.adversary import ATTEMPTS, DIR, plain, random_draws  # noqa: E402

from entangle_py.check import spec as S  # noqa: E402
from entangle_py.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def gloo_report():
    from soundness import run_gloo_adv, run_gloo_random
    report = run_gloo_adv.run(plain(ATTEMPTS), verbose=False)
    report.update(run_gloo_random.run(random_draws(ATTEMPTS), verbose=False))
    return report


@pytest.mark.gloo   # every label re-run on real gloo ranks: opt-in (pytest -m gloo)
def test_labels_confirmed_on_gloo(gloo_report):
    assert set(gloo_report) == {a.name for a in ATTEMPTS}
    wrong = {n: r for n, r in gloo_report.items() if r["gloo"] != r["label"]}
    assert not wrong, wrong


def test_every_feature_has_a_wrong_program():
    features = {a.feature.split(" / ")[0] for a in ATTEMPTS}
    for f in features:
        assert any(a.label == "wrong" and a.feature.split(" / ")[0] == f for a in ATTEMPTS), f


def _cli(*argv) -> tuple[int, str]:
    """`entangle ...` in this process: (exit, output); an exception escaping the CLI is a crash
    (the contract: exit 2 with one line, never a traceback), reported as exit -1."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            rc = main([str(a) for a in argv])
        except Exception as ex:  # noqa: BLE001 - the test names it
            return -1, out.getvalue() + f"\nCRASH: {type(ex).__name__}: {ex}"
    return rc, out.getvalue()


def _fx_dumps(script: str, world_size: int, tmp: Path) -> tuple[Path, Path]:
    """print_readable() text of every program (make_fx of the model's forward): FX text dumps, as a
    user would give them to import-fx."""
    from torch.fx.experimental.proxy_tensor import make_fx
    spec = importlib.util.spec_from_file_location("adv_fx_script", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = {}
    for kind, ws in (("seq", 1), ("dist", world_size)):
        d = tmp / kind
        d.mkdir()
        for r in range(ws):
            model, inputs = mod.build(r, ws)
            assert list(inputs) == ["x"], "the FX attempts take one input x (traced as x_1)"
            gm = make_fx(lambda x: model(x=x))(inputs["x"])
            (d / f"forward.g0.r{r}.py").write_text(gm.print_readable(print_output=False))
        out[kind] = d
    return out["seq"] / "forward.g0.r0.py", out["dist"]


def _verdict_params():
    from soundness.adversary import FALSE_ALARM
    return [pytest.param(a, id=a.name, marks=[pytest.mark.xfail(strict=True, reason=a.found)]
                         if a.found.startswith(FALSE_ALARM) and a.expected_exits == (0,) else [])
            for a in ATTEMPTS]


@pytest.mark.parametrize("attempt", _verdict_params())
def test_checker_verdict(attempt, tmp_path):
    if attempt.fx:
        seq, dist = _fx_dumps(attempt.script_path, attempt.world_size, tmp_path)
    else:
        seq, dist = tmp_path / "seq.pt", tmp_path / "dist.pt"
        for ws, path in ((1, seq), (attempt.world_size, dist)):
            rc, text = _cli("capture", attempt.script_path, "--world-size", ws, *attempt.capture, "-o", path)
            if rc != 0:       # refused at capture: the verdict is that exit
                assert rc in attempt.expected_exits, f"{attempt.name}: capture exits {rc}:\n{text}"
                return
    flags = [str(DIR / f[1:]) if f.startswith("@") else f for f in attempt.check]
    rc, text = _cli("check", seq, dist, "--spec", attempt.spec_path, *flags)
    if attempt.kind == "trusted":
        # wrong, and refines only on a false fact the user wrote: the verdict must say so
        assert rc == 0 and attempt.discloses in text, (
            f"{attempt.name} refines on a user-written fact; the report must print "
            f"{attempt.discloses!r} with the verdict (exit {rc}):\n{text}")
        return
    assert rc in attempt.expected_exits, (
        f"{attempt.name} is {attempt.label} (confirmed on gloo) but `entangle check` exits {rc}, expected "
        f"{attempt.expected_exits} ({attempt.tries}):\n{text}")


def test_written_spec_round_trips_quoted_names():
    """--write-spec writes what it read: a relation naming a quoted tensor (r0."a b") stays TOML."""
    import tomllib
    spec = S.parse_spec({"inputs": {"cut:logits": 'concat(r0."cut:logits", r1."a b", dim=1)'},
                         "mesh": {"shape": [2], "names": ["tp"]}, "constants": {'const:"q"': 1.5}})
    again = S.parse_spec(tomllib.loads(spec.to_toml()))
    assert again.inputs == spec.inputs and again.constants == spec.constants and again.mesh == spec.mesh
