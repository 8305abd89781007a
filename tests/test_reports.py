"""Reports that point at the culprit (issue 14): the distributed program's operators and lines in a
failure, terms in the user's vocabulary, the versioned JSON report, `entangle explain`, `--html`
(opened in headless Chromium) and `--sarif`.

The motivating case is examples/programs/tp_mlp2d_funcol_all_reduce (joint): the row-parallel
all-reduce written as a bare funcol.all_reduce, whose backward all-reduces the gradient again.  The
check fails at an `mm` of the *sequential* backward; the report must also name the backward
all-reduce's line in the distributed program.
"""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_entangle

from entangle_py.check import readable as R
from entangle_py.config import Limits
from entangle_py.ir import graph as G

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "examples" / "programs"
GRAPHS = ROOT / "graphs"
if str(PROGRAMS) not in sys.path:
    sys.path.insert(0, str(PROGRAMS))

from corpus import BY_ID, bug_line  # noqa: E402

HELPER_NAMES = re.compile(r"\b(map_\w+|zip_\w+|lappend|lsum|dset\w*|Cons|Nil)\b")


_entangle = run_entangle


@pytest.fixture(scope="module")
def funcol(tmp_path_factory):
    """The funcol.all_reduce program captured (joint) and checked with --json/--html/--sarif."""
    from entangle_py.frontend.capture import capture
    entry = BY_ID["tp_mlp2d_funcol_all_reduce[joint]"]
    d = tmp_path_factory.mktemp("funcol")
    G.save(capture(entry.script, 1, joint=True), d / "seq.pt")
    G.save(capture(entry.script, 2, joint=True), d / "dist.pt")
    r = _entangle("check", d / "seq.pt", d / "dist.pt", "--spec", entry.spec, "--json", d / "r.json",
                  "--html", d / "r.html", "--sarif", d / "r.sarif")
    return {"dir": d, "run": r, "entry": entry, "json": json.loads((d / "r.json").read_text())}


@pytest.fixture(scope="module")
def missing_allreduce(tmp_path_factory):
    """The README's failing example (forward): the row-parallel all-reduce is missing."""
    d = tmp_path_factory.mktemp("missing")
    g = GRAPHS / "mlp_tp2_missing_allreduce"
    r = _entangle("check", g / "seq.pt", g / "dist.pt", "--spec", g / "spec.toml", "--no-numeric",
                  "--json", d / "r.json", "--sarif", d / "r.sarif", "--html", d / "r.html")
    return {"dir": d, "run": r, "json": json.loads((d / "r.json").read_text())}


def _bug(entry):
    file, line = bug_line(entry).rsplit(":", 1)
    return file, int(line)


# ----------------------------------------------------------------------------- the culprit

def test_joint_failure_names_the_backward_all_reduce_line(funcol):
    r, entry = funcol["run"], funcol["entry"]
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    bug_file, bug_no = _bug(entry)
    # the sequential operator: an mm of the backward, at its line in the sequential file
    assert re.search(r"first operator without a clean mapping: mm\S* = aten\.mm\.default \(backward\)", out), out
    # ... and the distributed program's backward all-reduce, with its line, on both ranks
    assert "in the distributed program (ranks 0, 1, backward):" in out, out
    assert f"all_reduce_1 = _c10d_functional.all_reduce.default at examples/programs/{bug_file}:{bug_no}" in out, out
    assert "computes sum over ranks of tangent:out" in out
    assert re.search(r"read by mm_\d+ = aten\.mm\.default \(backward\) at examples/programs/_tp_mlp\.py:\d+", out)
    assert "where the sequential mm needs r0.tangent:out" in out
    # terms in the user's vocabulary, never helper constructors
    assert "best term found: concat(mm(r0.tangent:out, param:fc2.weight) over ranks, dim=1)" in out
    assert not HELPER_NAMES.search(out), HELPER_NAMES.search(out)


def test_json_report_is_versioned_with_structured_locations(funcol):
    data, entry = funcol["json"], funcol["entry"]
    bug_file, bug_no = _bug(entry)
    assert data["schema_version"] == 1 and data["tool"]["name"] == "entangle-py"
    assert data["status"] == "fails" and data["exit_code"] == 1 and data["world_size"] == 2 and data["joint"]
    d = Limits()
    assert data["limits"] == {"iterations": d.iterations, "enodes": d.nodes, "matches": d.matches,
                              "seconds": d.seconds, "memory_bytes": d.memory_bytes()}
    assert data["spec"] == entry.spec
    f = data["failure"]
    loc = f["location"]
    assert (loc["program"], loc["rank"], loc["node"], loc["phase"]) == ("seq", None, f["node"], "backward")
    assert loc["file"].endswith("_tp_mlp.py") and isinstance(loc["line"], int)
    # the raw s-expression stays, with its helper; the printed term has none
    assert "map_mm_r" in f["best_term"] and not HELPER_NAMES.search(f["best"])
    cu = f["culprits"][0]
    assert cu["location"]["file"].endswith(bug_file) and cu["location"]["line"] == bug_no
    assert cu["location"]["target"] == "_c10d_functional.all_reduce.default"
    assert cu["location"]["phase"] == "backward" and cu["location"]["program"] == "dist"
    assert sorted(cu["ranks"]) == [0, 1] and cu["location"]["rank"] in (0, 1)
    assert cu["found_definition"] == "sum over ranks of tangent:out"
    assert cu["reader"]["target"] == "aten.mm.default" and cu["reader"]["phase"] == "backward"
    # candidates cheapest first with egglog's costs, lemma matches, and every output's verdict
    costs = [c["cost"] for c in f["candidates"]]
    assert costs == sorted(costs) and all(isinstance(c, int) and c >= 100_000 for c in costs)
    assert f["lemmas"] and all(isinstance(n, int) and n > 0 for n in f["lemmas"].values())
    assert {o: v["verdict"] for o, v in data["outputs"].items()}["out"] == "not reached"
    assert all(v["location"]["program"] == "seq" for v in data["outputs"].values())
    ops = {o["name"]: o for o in data["operators"]}
    assert ops[f["node"]]["status"] == "failed"
    assert any(o["status"] == "related" and o.get("relation") for o in ops.values())
    # every G_d tensor a relation or the failure names has its location
    for key in R.leaves(R.parse(f["best_term"])):
        assert data["gd_nodes"][key]["rank"] == int(key[1])


def test_forward_failure_names_the_reader_and_the_producer(missing_allreduce):
    r, data = missing_allreduce["run"], missing_allreduce["json"]
    assert r.returncode == 1
    assert "best term found: add(sum over ranks of _unsafe_view, r0.param:fc2.bias)" in r.stdout
    cu = data["failure"]["culprits"][0]
    # the add on rank 0 reads fc2's partial product where the sum over ranks is needed
    assert (cu["reader"]["node"], cu["reader"]["file"], cu["reader"]["line"]) == ("add", "examples/mlp.py", 142)
    assert (cu["location"]["node"], cu["location"]["line"]) == ("_unsafe_view", 136)
    assert cu["needed"] == "sum over ranks of _unsafe_view" and cu["found"] == "r0._unsafe_view"
    assert data["failure"]["location"]["phase"] is None     # not a joint graph: no phase
    assert "where the sequential add needs sum over ranks of _unsafe_view" in r.stdout


def test_the_best_term_costs_are_egglogs():
    from entangle_py.pipeline import check_files
    g = GRAPHS / "mlp_tp2_missing_allreduce"
    res, checker = check_files(str(g / "seq.pt"), str(g / "dist.pt"), str(g / "spec.toml"))
    cost, _ = checker.engine.extract(checker.svar[res.failure.node])
    assert res.failure.candidates[0]["cost"] == cost
    assert set(res.failure.lemmas) <= {lem.name for lem in checker.lib.lemmas}


# ----------------------------------------------------------------------------- readable terms

def test_every_list_helper_of_the_term_language_reads_as_what_it_means():
    """Each constructor that walks a list of parts has an expansion, over a known list and over
    one the e-graph has not spelt out; none prints its own name."""
    from entangle_py.semantics import terms as T
    helpers = {c.name for c in T.CONSTRUCTORS if c.sort == "TList" and c.name not in ("Cons", "Nil")}
    missing = helpers - set(R._HELPERS) - {"lappend", "repl"}     # these two: cases of their own in expand
    assert not missing, f"add a readable expansion to check/readable.py for {sorted(missing)}"
    two = '(Cons (Gd "r0.a") (Cons (Gd "r1.a") (Nil)))'
    dims = "(DCons (DLit 4) (DCons (DLit 8) (DNil)))"
    args = {"String": '"add"', "TList": two, "T": '(Gd "r0.w")', "i64": "1", "DList": dims, "Dim": "(DLit 2)",
            "IList": "(ICons 1 (INil))"}
    for name in sorted(helpers):
        c = T.BY_NAME[name]
        sig = c.signature.split()
        free = '(Gs "l")'
        known = f"(concat ({name} {' '.join(args[s] for s in sig)}) 0)"
        unknown = f"(concat ({name} {' '.join(args[s] if s != 'TList' else free for s in sig)}) 0)"
        for text in (known, unknown):
            shown = R.show(text, world=2)
            assert not HELPER_NAMES.search(shown), (name, shown)


def test_reductions_over_ranks_read_in_words():
    two = '(Cons (Gd "r0.x") (Cons (Gd "r1.x") (Nil)))'
    assert R.show(f"(rsum {two})", world=2) == "sum over ranks of x"
    assert R.show(f"(rmax {two})", world=4) == "max over ranks 0, 1 of x"
    assert R.show('(rsum (Cons (Gd "r0.x") (Cons (Gd "r0.y") (Nil))))') == "sum of (r0.x, r0.y)"
    assert R.show(f'(concat (map_mm_r (Gd "r0.t") {two}) 1)', world=2) == "concat(mm(r0.t, x) over ranks, dim=1)"
    assert R.show('(scalar "div" (Gd "r0.a") "2.0")') == "div(r0.a, 2.0)"
    text = '(binary "add" (Gd "r0.a") (Gs "b"))'
    assert R.to_text(R.parse(text)) == text


# ----------------------------------------------------------------------------- explain

def test_explain_prints_what_decides_bug_or_missing_lemma(funcol):
    rep = funcol["dir"] / "r.json"
    bug_file, bug_no = _bug(funcol["entry"])
    r = _entangle("explain", rep)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    f = funcol["json"]["failure"]
    assert out.startswith(f"operator {f['node']} = aten.mm.default (backward): failed (no clean term)")
    assert "  at examples/programs/_tp_mlp.py:" in out and "definition: " in out
    assert "    tangent:out = r0.tangent:out" in out                  # an input's relation
    assert re.search(r"G_d neighbourhood considered \(rank [01]; \d+ operators\)", out)
    assert f"[culprit] (backward) at examples/programs/{bug_file}:{bug_no}" in out
    assert re.search(r"best \d candidate terms", out) and re.search(r"1\.\s+1000\d\d  concat\(mm\(", out)
    assert re.search(r"lemma matches while relating it \(\d+ lemma steps", out)
    top = max(f["lemmas"].items(), key=lambda kv: kv[1])
    assert re.search(rf"\n    {re.escape(top[0])}\s+{top[1]}\n", out)
    assert "bug: the numeric witness confirms it" in out
    assert not HELPER_NAMES.search(out)
    # another operator, by its output name: related, with its relation and its G_d lines
    r = _entangle("explain", rep, "--op", "out")
    assert r.returncode == 0 and ": related" in r.stdout and "relation: " in r.stdout, r.stdout + r.stderr
    assert "G_d tensors of its relation:" in r.stdout
    r = _entangle("explain", rep, "--op", "nope")
    assert r.returncode == 2 and r.stderr.startswith("entangle explain: error: no operator 'nope'")


def test_explain_refuses_a_file_that_is_not_a_report(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"status": "fails"}')
    r = _entangle("explain", bad)
    assert r.returncode == 2 and "schema_version" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_explain_loads_neither_torch_nor_egglog(funcol):
    code = ("import sys, contextlib, io, entangle_py.cli as c\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = c.main(['explain', {str(funcol['dir'] / 'r.json')!r}])\n"
            "print(rc, sorted(m for m in ('torch', 'egglog', 'z3') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "0 []", out.stdout + out.stderr


# ----------------------------------------------------------------------------- SARIF

def _check_sarif(doc: dict):
    assert doc["version"] == "2.1.0" and "sarif-2.1.0" in doc["$schema"]
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "entangle-py" and driver["rules"]
    ids = [rule["id"] for rule in driver["rules"]]
    for res in run["results"]:
        assert res["ruleId"] in ids and ids[res["ruleIndex"]] == res["ruleId"]
        assert res["level"] in ("error", "warning", "note") and res["message"]["text"]
        assert res["locations"]
        for loc in res["locations"] + res.get("relatedLocations", []):
            phys = loc["physicalLocation"]
            assert phys["artifactLocation"]["uri"]
            if "region" in phys:
                assert isinstance(phys["region"]["startLine"], int) and phys["region"]["startLine"] >= 1
    return run


def test_sarif_points_at_the_failing_lines_of_both_programs(funcol, missing_allreduce):
    bug_file, bug_no = _bug(funcol["entry"])
    run = _check_sarif(json.loads((funcol["dir"] / "r.sarif").read_text()))
    first = run["results"][0]
    assert first["ruleId"] == "ENT001" and first["level"] == "error"
    lines = [(x["physicalLocation"]["artifactLocation"]["uri"], x["physicalLocation"]["region"]["startLine"])
             for x in first["locations"]]
    seq = funcol["json"]["failure"]["location"]
    assert lines[0] == ("examples/programs/_tp_mlp.py", seq["line"])           # the sequential operator
    assert (f"examples/programs/{bug_file}", bug_no) in lines                  # the backward all-reduce
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == ROOT.resolve().as_uri() + "/"
    assert run["invocations"][0]["exitCode"] == 1
    # the README's example: the sequential add and the distributed add reading fc2's partial sum
    run = _check_sarif(json.loads((missing_allreduce["dir"] / "r.sarif").read_text()))
    (res,) = run["results"]
    lines = {(x["physicalLocation"]["artifactLocation"]["uri"], x["physicalLocation"]["region"]["startLine"])
             for x in res["locations"]}
    assert lines == {("examples/mlp.py", 142), ("examples/mlp.py", 136)}
    assert any("rank 0" in x["message"]["text"] for x in res["locations"])


def test_sarif_of_a_refinement_has_no_results_and_a_limit_is_a_warning(tmp_path):
    g = GRAPHS / "mlp_tp4"
    r = _entangle("check", g / "seq.pt", g / "dist.pt", "--spec", g / "spec.toml", "--no-numeric",
                  "--sarif", tmp_path / "ok.sarif")
    assert r.returncode == 0
    assert _check_sarif(json.loads((tmp_path / "ok.sarif").read_text()))["results"] == []
    r = _entangle("check", g / "seq.pt", g / "dist.pt", "--spec", g / "spec.toml", "--no-numeric",
                  "--max-iterations", "0", "--sarif", tmp_path / "limit.sarif", "--json", tmp_path / "limit.json")
    assert r.returncode == 3
    (res, *_) = _check_sarif(json.loads((tmp_path / "limit.sarif").read_text()))["results"]
    assert res["ruleId"] == "ENT002" and res["level"] == "warning"
    data = json.loads((tmp_path / "limit.json").read_text())
    assert data["limits"]["iterations"] == 0 and data["operators"][-1]["status"] == "unknown"


# ----------------------------------------------------------------------------- HTML in a browser

def _chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    assert exe, "no chromium: `apt-get install -y chromium` (.ci/run installs it)"
    return exe


def _dump_dom(path: Path) -> str:
    r = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                        path.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "</html>" in r.stdout, r.stderr[-2000:]
    return r.stdout


def test_html_report_shows_verdict_table_and_neighbourhood_in_a_browser(funcol, tmp_path):
    page = funcol["dir"] / "r.html"
    raw = page.read_text()
    assert not re.search(r"(src|href)\s*=\s*['\"]?https?:", raw) and "<script" not in raw and "@import" not in raw
    dom = _dump_dom(page)
    text = re.sub(r"<[^>]+>", " ", dom)
    f = funcol["json"]["failure"]
    bug_file, bug_no = _bug(funcol["entry"])
    assert re.search(r"id=\"verdict\"[^>]*>refinement fails<", dom)
    # the per-operator table: every checked operator with both programs' source lines
    table = dom[dom.index('id="operators"'):]
    for op in funcol["json"]["operators"]:
        assert f">{op['name']}<" in table, op["name"]
    assert "_tp_mlp.py:27" in table and re.search(r"r0 relu: [\w/]*_tp_mlp\.py:27", table)
    # the drawing: G_s and G_d around the failure, the culprit box labelled and marked
    svgs = re.findall(r"<svg.*?</svg>", dom, flags=re.S)
    assert len(svgs) == 2 and "G_s (sequential)" in svgs[0] and "G_d (distributed" in svgs[1]
    assert re.search(rf"role-failing.*?>{f['node']}<", svgs[0], flags=re.S)
    assert re.search(r"role-culprit.*?>all_reduce_1<.*?line " + str(bug_no), svgs[1], flags=re.S)
    assert svgs[1].count("marker-end") >= 3          # edges drawn
    assert f"{bug_file}:{bug_no}" in text and "sum over ranks of tangent:out" in text
    # and it renders: a screenshot of the page is a real picture
    shot = tmp_path / "page.png"
    subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1280,1600", f"--screenshot={shot}", page.resolve().as_uri()],
                   capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 20_000
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == 1280


def test_html_report_of_a_refinement(tmp_path):
    g = GRAPHS / "mlp_tp2"
    r = _entangle("check", g / "seq.pt", g / "dist.pt", "--spec", g / "spec.toml", "--html", tmp_path / "ok.html")
    assert r.returncode == 0, r.stdout + r.stderr
    dom = _dump_dom(tmp_path / "ok.html")
    assert re.search(r"id=\"verdict\"[^>]*>refines<", dom)
    assert "r0.out" in dom and "re-check: agrees" in dom and "<svg" not in dom


def test_values_the_checker_does_not_know_are_listed(tmp_path):
    # index_copy at ids not shown distinct is a value the checker does not know (which duplicate
    # write wins is the device's): a failure lists it, with its line, in the text and the JSON
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from program_table import check_entry
    r = check_entry(BY_ID["adv5_isel_copy[joint]"], tmp_path)
    assert r["exit"] == 1
    assert re.search(r"r0\.index_copy: aten\.index_copy\.default \(ids not shown distinct.*_adv5\.py:\d+", r["text"])
    data = json.loads((tmp_path / "adv5_isel_copy.joint.json").read_text())
    assert set(data["unknown_values"]) == {"r0.index_copy", "r1.index_copy"}
    # a program without such values lists none
    ok = check_entry(BY_ID["adv5_isel_correct[joint]"], tmp_path)
    assert ok["exit"] == 0 and json.loads((tmp_path / "adv5_isel_correct.joint.json").read_text())["unknown_values"] == {}
