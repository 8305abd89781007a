"""Framework models as their users run them (issue 26): Hugging Face transformers (``tp_plan``),
Megatron-core (``ColumnParallelLinear`` / ``RowParallelLinear``, ``TransformerLayer``, sequence
parallel) and torchtitan (its sharding entries), tiny configs built in code, captured and checked
at 2 ranks (4 where the heads allow) forward and joint, with injected misconfigurations whose
labels are confirmed on gloo (``examples/frameworks/confirm_gloo.py``).

Opt-in (``pytest -m frameworks``; CI installs the pinned frameworks first, see ``.ci/run``).  A
test skips only when its framework is not importable.  What `entangle check` must say: a correct
model refines (exit 0); a misconfiguration fails (exit 1) with the failure or a culprit located in
the framework's own source (a package-relative path, ``megatron/core/...``), and a numeric
witness that confirms it.  Where the checker has no semantics yet for an op the model runs, the
check must stop with exit 2 naming it (then the test is an xfail naming the op: it turns into
the full assertion when the op's semantics exist).
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS = ROOT / "examples" / "frameworks"
for p in (FRAMEWORKS, ROOT / "tests" / "corpus" / "programs", ROOT / "examples"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from framework_corpus import BY_ID, CORPUS, bug_line, framework  # noqa: E402

pytestmark = pytest.mark.frameworks

# Correct entries the checker cannot prove today, and why (strict: they fail loudly once it can).
XFAIL = {
    "torchtitan_llama3[joint]": "the vocab-parallel embedding's gradient: each rank scatters its gradient times the "
                                "owner mask at its clamped ids (embedding_dense_backward of torchtitan's clamp-and-mask "
                                "lookup); no lemma relates that to the whole table's scatter (exit 3: the e-node limit, "
                                "at the weight's embedding_dense_backward; the fused-QKV weight's gradient before it "
                                "is related)",
    "megatron_layer[forward@4]": "one head per rank: the attention scores' baddbmm reads the query and key views "
                                 "[s, b, 1, d] -> [b, s, d] of the ranks' heads "
                                 "(megatron/core/transformer/dot_product_attention.py:184-194); no lemma relates "
                                 "that view of a concat over ranks yet (at 2 heads per rank it is related)",
}

# Misconfigurations rejected (exit 1: asserted, never xfailed) but located in torchtitan's SPMD
# runtime wrapper (spmd_types/runtime.py), not in torchtitan's own code: an xfail until located.
_SPMD_WRAPPER = "located at spmd_types/runtime.py (the wrapper every torchtitan op runs through), not in torchtitan/"
LOCATION_XFAIL = {
    "torchtitan_llama3_no_context[forward]": _SPMD_WRAPPER,
    "torchtitan_llama3_embedding_unreduced[forward]": _SPMD_WRAPPER,
    "torchtitan_llama3_w2_unreduced[forward]": _SPMD_WRAPPER,
}

# The source files (package-relative, as the report shows them) where each misconfiguration's
# failure or culprit is located: the framework's own code that runs the misconfigured layer.
LOCATED_IN = {
    "hf_llama_down_unreduced[forward]": "transformers/",
    "hf_llama_head_colwise[forward]": "transformers/",
    "hf_llama_attention_unreduced[forward]": "transformers/",
    "megatron_mlp_no_grad_reduce[joint]": "megatron/core/tensor_parallel/layers.py",
    "megatron_mlp_sp_fc2_only[forward]": "megatron/core/tensor_parallel/mappings.py",
    # the user's own block misusing Megatron's mapping function: no operator runs on the bug's line
    # (copy_to is the identity forward); the partial product it returns is one line above
    "megatron_region_copy[forward]": "examples/frameworks/_megatron_region.py",
    "torchtitan_llama3_no_context[forward]": "torchtitan/",
    "torchtitan_llama3_w2_unreduced[forward]": "torchtitan/",
    "torchtitan_llama3_embedding_unreduced[forward]": "torchtitan/",
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _params(entries):
    out = []
    for e in entries:
        marks = []
        if not _installed(framework(e)):
            marks.append(pytest.mark.skip(reason=f"{framework(e)} is not installed (pip install it: see docs/frameworks.md)"))
        if e.id in XFAIL:
            marks.append(pytest.mark.xfail(strict=True, reason=XFAIL[e.id]))
        out.append(pytest.param(e, id=e.id, marks=marks))
    return out


_BUNDLES: dict = {}
_CHECKS: dict = {}


def _bundle(script: str, world_size: int, joint: bool, tmp: Path) -> Path:
    """The script captured at ``world_size`` (once per session: entries share their recipe's)."""
    from entangle_py.frontend.capture import capture
    from entangle_py.ir import graph
    key = (script, world_size, joint)
    if key not in _BUNDLES:
        path = tmp / f"{Path(script).stem}.{world_size}.{'joint' if joint else 'forward'}.pt"
        graph.save(capture(script, world_size, joint=joint), path)
        _BUNDLES[key] = path
    return _BUNDLES[key]


def _check(entry, tmp: Path) -> dict:
    """``entangle check`` on the entry: exit code, printed text and the JSON report."""
    if entry.id in _CHECKS:
        return _CHECKS[entry.id]
    from entangle_py.cli import main
    from entangle_py.semantics import lower
    joint = entry.mode == "joint"
    seq = _bundle(entry.script, 1, joint, tmp)
    dist = _bundle(entry.script, entry.world_size, joint, tmp)
    rep = tmp / f"{entry.name}.{entry.mode}.{entry.world_size}.json"
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(["check", str(seq), str(dist), "--spec", entry.spec, "--json", str(rep)])
    from entangle_py.ir import graph
    missing = sorted({n.target for p in (seq, dist) for g in graph.load(p).ranks for n in g.nodes
                      if not n.is_placeholder and n.target != "getitem" and not lower.supported(n.target)})
    _CHECKS[entry.id] = {"exit": rc, "text": out.getvalue(), "missing": missing,
                         "report": json.loads(rep.read_text()) if rep.exists() else None}
    return _CHECKS[entry.id]


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    return tmp_path_factory.mktemp("framework_bundles")


def _stopped_at_missing_ops(r) -> None:
    """The check stopped (exit 2) at the ops it has no semantics for, naming each: an xfail."""
    if not r["missing"]:
        return
    assert r["exit"] == 2, f"ops without semantics {r['missing']} but exit {r['exit']}:\n{r['text']}"
    for op in r["missing"]:
        assert op in r["text"], (op, r["text"])
    pytest.xfail(f"no semantics yet for {', '.join(r['missing'])}")


@pytest.mark.parametrize("entry", _params([e for e in CORPUS if e.label == "correct"]))
def test_correct_framework_model_refines(entry, bundles):
    r = _check(entry, bundles)
    _stopped_at_missing_ops(r)
    assert r["exit"] == 0, f"{entry.id} is correct (confirmed on gloo) but `entangle check` exits {r['exit']}:\n{r['text']}"


def _locations(report) -> list[str]:
    """``file:line`` of everything the report points at: the failing operator, the distributed
    program's culprits, where the numeric witness finds each rank computing a wrong output."""
    f = report.get("failure") or {}
    locs = [f.get("location") or {}] + list((report.get("numeric") or {}).get("output_sources") or ())
    for c in f.get("culprits") or ():
        locs += [c.get("location") or {}, c.get("reader") or {}]
    return [f"{loc['file']}:{loc['line']}" for loc in locs if loc.get("file") and loc.get("line")]


@pytest.mark.parametrize("entry", _params([e for e in CORPUS if e.label == "buggy"]))
def test_framework_misconfiguration_fails_in_framework_code(entry, bundles):
    r = _check(entry, bundles)
    assert r["exit"] != 0, f"SOUNDNESS: {entry.id} is buggy (confirmed on gloo) but refines:\n{r['text']}"
    _stopped_at_missing_ops(r)
    assert r["exit"] == 1, f"{entry.id}: exit {r['exit']}, expected 1 (fails):\n{r['text']}"
    where = _locations(r["report"])
    located = any(w.startswith(LOCATED_IN[entry.id]) for w in where)
    if entry.id in LOCATION_XFAIL:
        assert not located, f"{entry.id} is located now: remove it from LOCATION_XFAIL"
        pytest.xfail(LOCATION_XFAIL[entry.id])
    assert located, (entry.id, where)
    numeric = r["report"].get("numeric") or {}
    assert numeric.get("status") == "confirmed", (entry.id, numeric)


def test_framework_corpus_shape():
    """Every framework has its correct recipes forward and joint and at least three
    misconfigurations, each with its location and a # BUG line."""
    for fw in ("hf", "megatron", "torchtitan"):
        mine = [e for e in CORPUS if e.name.startswith(fw + "_")]
        assert {e.mode for e in mine if e.label == "correct"} == {"forward", "joint"}, fw
        assert len({e.name for e in mine if e.label == "buggy"}) >= 3, fw
    for e in CORPUS:
        assert Path(e.script).is_file() and Path(e.spec).is_file(), e.id
        assert (e.label == "buggy") == (bug_line(e) is not None), e.id
    assert set(LOCATED_IN) == {e.id for e in CORPUS if e.label == "buggy"}
    assert set(XFAIL) <= {e.id for e in CORPUS if e.label == "correct"}   # a buggy entry's verdict is never xfailed
    assert set(LOCATION_XFAIL) <= set(LOCATED_IN)


def test_framework_labels_confirmed_on_gloo():
    """Every label holds on real gloo ranks (only the entries whose framework is installed)."""
    entries = [e for e in CORPUS if _installed(framework(e))]
    if not entries:
        pytest.skip("no framework installed")
    import run_gloo
    report = run_gloo.run(entries, verbose=False)
    wrong = {n: r for n, r in report.items() if r["gloo"] != r["label"]}
    assert not wrong, wrong
