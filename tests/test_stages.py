"""Checking by pipeline stages (entangle_py/stages.py, docs/scale-out.md): each stage is checked
under the relations at the boundaries before it and must prove the one after it; the last stage
proves the spec's outputs.  Programs: tests/corpus/programs/_pp.py's three-stage ``skip`` (one
stage per rank, a skip connection from stage 0 to stage 2), correct and with swapped peers
(labels confirmed on gloo with the program corpus)."""
import json
from pathlib import Path

import pytest

from entangle_py.check import spec as S
from entangle_py.cli import main
from entangle_py.ir import graph as G
from entangle_py.stages import split

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "corpus" / "programs"
BASE = (PROGRAMS / "pp_skip.toml").read_text().split("[expect]")[0]
STAGES = '[stages]\n"relu" = "r0.relu"\n"relu_1" = "r1.relu"\n'      # h1 on rank 0, h2 on rank 1
EXPECT = '[expect]\n"out" = "r2.out"\n'


@pytest.fixture(scope="module")
def skip(tmp_path_factory):
    return capture_skip(tmp_path_factory.mktemp("skip"))


def capture_skip(d: Path) -> dict:
    """The sequential skip program and its correct and swapped-peers three-stage twins, captured."""
    from entangle_py.frontend.capture import capture
    paths = {}
    for key, name, ws in (("seq", "pp_skip_correct", 1), ("dist", "pp_skip_correct", 3),
                          ("swapped", "pp_skip_swapped_peers", 3)):
        paths[key] = d / f"{key}.pt"
        G.save(capture(str(PROGRAMS / f"_pp.py:{name}"), ws), paths[key])
    return {k: str(v) for k, v in paths.items()}


def _spec(tmp_path, text, name="spec.toml"):
    (tmp_path / name).write_text(text)
    return str(tmp_path / name)


def test_each_stage_assumes_the_boundaries_before_it_and_proves_the_next():
    spec = S.parse_spec(__import__("tomllib").loads(BASE + STAGES + EXPECT))
    stages = split(spec)
    assert [s.assumes for s in stages] == [(), (("relu", "r0.relu"),), (("relu", "r0.relu"), ("relu_1", "r1.relu"))]
    assert [s.proves for s in stages] == [(("relu", "r0.relu"),), (("relu_1", "r1.relu"),), ()]
    assert [s.spec.check for s in stages] == [["relu"], ["relu_1"], None]       # the last checks every output
    assert [list(s.spec.cut) for s in stages] == [[], ["relu"], ["relu", "relu_1"]]
    assert stages[2].spec.expect == spec.expect and all(not s.spec.stages for s in stages)
    for s in stages:        # each stage's spec is written and read back as it is
        assert S.parse_spec(__import__("tomllib").loads(s.spec.to_toml())).cut == s.spec.cut


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_correct_pipeline_refines_by_stages(skip, tmp_path, workers, capsys):
    out = tmp_path / "r.json"
    assert main(["check", skip["seq"], skip["dist"], "--spec", _spec(tmp_path, BASE + STAGES + EXPECT),
                 "--workers", workers, "--json", str(out), "--no-numeric"]) == 0
    text = capsys.readouterr().out
    assert "refines: by 3 stages" in text
    rep = json.loads(out.read_text())
    assert rep["status"] == "refines" and rep["workers"] == int(workers)
    assert [(s["index"], s["status"], s["assumes"], s["proves"]) for s in rep["stages"]] == [
        (0, "refines", {}, {"relu": "r0.relu"}),
        (1, "refines", {"relu": "r0.relu"}, {"relu_1": "r1.relu"}),
        (2, "refines", {"relu": "r0.relu", "relu_1": "r1.relu"}, "the spec's outputs")]
    # each stage relates only its own operators (and what it reads that no boundary gives)
    assert all(s["report"]["ops_checked"] <= 4 for s in rep["stages"]), [s["report"]["ops_checked"] for s in rep["stages"]]


def test_swapped_peers_fail_in_the_last_stage_at_the_bug(skip, tmp_path):
    out = tmp_path / "r.json"
    assert main(["check", skip["seq"], skip["swapped"], "--spec", _spec(tmp_path, BASE + STAGES + EXPECT),
                 "--workers", "1", "--json", str(out)]) == 1
    rep = json.loads(out.read_text())
    assert [s["status"] for s in rep["stages"]] == ["refines", "refines", "fails"]
    # the numeric second opinion runs in a stage too: its given boundaries are drawn on the ranks
    # the relations name (rank 1's relu holds h2), the refining stages re-check, the last confirms
    assert [s["report"]["numeric"]["status"] for s in rep["stages"]] == ["agrees", "agrees", "confirmed"], \
        [s["report"]["numeric"] for s in rep["stages"]]
    src = (PROGRAMS / "_pp.py").read_text().splitlines()
    bug = next(i for i, line in enumerate(src, 1) if "h2 taken from rank 0" in line)
    lines = [n for f, n in _locations(rep["stages"][2]["report"]) if f.endswith("_pp.py")]
    assert any(abs(n - bug) <= 5 for n in lines), (bug, lines)


def _locations(x):
    """(file, line) of every source location in a JSON report (the failure, its culprits)."""
    if isinstance(x, dict):
        if isinstance(x.get("file"), str) and isinstance(x.get("line"), int):
            yield x["file"], x["line"]
        for v in x.values():
            yield from _locations(v)
    elif isinstance(x, list):
        for v in x:
            yield from _locations(v)


def test_a_wrong_boundary_relation_is_caught_where_it_is_discharged(skip, tmp_path, capsys):
    """Rank 1's relu is h2, not h1: the stage that assumes it may go through, the stage that must
    prove it fails on it."""
    wrong = STAGES.replace('"relu" = "r0.relu"', '"relu" = "r1.relu"')
    out = tmp_path / "r.json"
    assert main(["check", skip["seq"], skip["dist"], "--spec", _spec(tmp_path, BASE + wrong + EXPECT),
                 "--workers", "1", "--json", str(out), "--no-numeric"]) == 1
    rep = json.loads(out.read_text())
    assert rep["stages"][0]["status"] == "fails"
    assert "expect relu = r1.relu: violated" in capsys.readouterr().out


def test_a_boundary_written_twice_and_workers_without_stages_are_refused(skip, tmp_path, capsys):
    twice = BASE + STAGES + '[cut]\n"relu" = "r0.relu"\n' + EXPECT
    assert main(["check", skip["seq"], skip["dist"], "--spec", _spec(tmp_path, twice)]) == 2
    assert "a stage boundary's relation is written once" in capsys.readouterr().err
    whole = _spec(tmp_path, BASE + EXPECT, "whole.toml")
    assert main(["check", skip["seq"], skip["dist"], "--spec", whole, "--workers", "2"]) == 2
    assert "only a check by stages runs on workers" in capsys.readouterr().err
    staged = _spec(tmp_path, BASE + STAGES + EXPECT, "staged.toml")
    assert main(["check", skip["seq"], skip["dist"], "--spec", staged, "--html", str(tmp_path / "r.html")]) == 2
    assert "--html is not supported for a check by [stages]" in capsys.readouterr().err
    # an entry point that checks a pair whole refuses [stages] rather than ignore them
    from entangle_py.pipeline import check_files
    with pytest.raises(S.SpecError, match=r"\[stages\] splits a check"):
        check_files(skip["seq"], skip["dist"], staged)
