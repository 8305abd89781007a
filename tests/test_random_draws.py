"""Random draws (issue 23): a draw is a tensor of its own, coupled with the ranks' draws from where
capture records they come from (check/random.py), never a function of the values it is applied to.

The corpus (tests/corpus/soundness/random_corpus.py): wrong programs and their correct twins, labels
confirmed on 2 gloo processes by tests/corpus/soundness/run_gloo_random.py (equal in distribution,
by a coupling of what the ranks really draw); ``entangle check`` must reject every wrong one,
naming the draw or the line that misuses it, and refine every correct one from evidence.
"""
from __future__ import annotations

import contextlib
import io
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"
if str(CORPUS_DIR) not in sys.path:
    sys.path.insert(0, str(CORPUS_DIR))

from soundness.random_corpus import CORPUS, HERE  # noqa: E402

from entangle_py.check import random as R  # noqa: E402
from entangle_py.check import spec as S  # noqa: E402
from entangle_py.check.checker import Checker  # noqa: E402
from entangle_py.cli import main  # noqa: E402
from entangle_py.frontend.capture import capture  # noqa: E402
from entangle_py.ir import graph as G  # noqa: E402
from entangle_py.ir import bundle_meta
from entangle_py.oracle import recheck  # noqa: E402


def _captured(script, tmp_path, joint=False):
    seq, dist = tmp_path / "seq.pt", tmp_path / "dist.pt"
    G.save(capture(script, 1, joint=joint), seq)
    G.save(capture(script, 2, joint=joint), dist)
    return str(seq), str(dist)


def _check(seq, dist, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(["check", seq, dist, *args])
    return rc, out.getvalue()


# ----------------------------------------------------------------------------- the corpus

@pytest.fixture(scope="module")
def gloo_report():
    from soundness import run_gloo_random
    return run_gloo_random.run(CORPUS, verbose=False)


@pytest.mark.gloo   # every label re-run on real gloo ranks: opt-in (pytest -m gloo)
def test_corpus_labels_confirmed_on_gloo(gloo_report):
    assert set(gloo_report) == {e.id for e in CORPUS}
    wrong = {n: r for n, r in gloo_report.items() if r["gloo"] != r["label"]}
    assert not wrong, wrong


def test_corpus_has_wrong_and_correct_programs_of_each_kind():
    for family in ("sp", "reuse", "tp"):
        for mode in ("forward", "joint"):
            labels = {e.label for e in CORPUS if e.family == family and e.mode == mode}
            assert labels == {"wrong", "correct"}, (family, mode)


@pytest.mark.parametrize("entry", CORPUS, ids=lambda e: e.id)
def test_checker_verdict(entry, tmp_path):
    seq, dist = _captured(entry.script, tmp_path, entry.mode == "joint")
    report = tmp_path / "report.json"
    rc, text = _check(seq, dist, "--spec", entry.spec, "--json", str(report))
    data = json.loads(report.read_text())
    if entry.label == "correct":
        assert rc == 0, f"{entry.id} is correct (confirmed on gloo) but exits {rc}:\n{text}"
        assert data["random_draws"] and all(d["basis"] == "evidence" for d in data["random_draws"]), text
        assert data["assumptions"] == []
        return
    assert rc == 1, f"{entry.id} is wrong (confirmed on gloo) but exits {rc}:\n{text}"
    uncoupled = [d for d in data["random_draws"] if d["coupling"] is None]
    if uncoupled:      # the draw is named, with why it has no counterpart
        assert f"{uncoupled[0]['draw']} at " in text and uncoupled[0]["why"] in text
        assert data["numeric"]["status"] != "confirmed"      # independent draws confirm nothing
    else:              # the draws are coupled; the failure is where the program misuses them
        assert "# BUG" in data["failure"]["source"], text


# ----------------------------------------------------------------------------- positions

def _pos(seed=7, state="s", before=(), own=("drop",), unknown=""):
    return R.Position(seed, state, tuple(before), own, unknown)


@pytest.mark.parametrize("a,b,want", [
    (_pos(seed=1), _pos(seed=2), "independent"),                       # two seeds: two streams
    (_pos(), _pos(), "same"),                                          # replicas
    (_pos(), _pos(own=("rand",)), "unknown"),                          # one start, two draws: overlap
    (_pos(), _pos(before=(("drop",),)), "independent"),                # the second after the first
    (_pos(before=(("b",),)), _pos(before=(("drop",),)), "unknown"),   # other histories: may overlap
    (_pos(), _pos(before=(("b",),)), "unknown"),                       # starts apart, may overlap
    (_pos(), _pos(state="t"), "unknown"),                              # drawn or set before the forward
    (_pos(unknown="never seeds"), _pos(), "unknown"),                 # a process's own seed
])
def test_relation_of_two_positions(a, b, want):
    assert R.relation(a, b)[0] == want
    assert R.relation(b, a)[0] == want


# ----------------------------------------------------------------------------- evidence

def _script(tmp_path, body, name="prog.py"):
    p = tmp_path / name
    p.write_text("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n" + body)
    return str(p)


SP_TOML = '[inputs]\n"input:x" = "shard(0)"\n[expect]\nout = "shard(0)"\n'
TP_TOML = '[inputs]\n"input:x" = "replicate"\n[expect]\nout = "replicate"\n'
SP_BODY = """
class M(nn.Module):
    def forward(self, x):
        return F.dropout(x, 0.5, training=True)
def build(rank, world_size):
    {seed}
    return M(), {{"x": torch.randn(8 // world_size, 6)}}
"""


def _body(seed, tp=False):
    """Dropout on x sharded along rows (sequence parallel) or replicated (``tp``), seeded by ``seed``."""
    body = SP_BODY.format(seed=seed)
    return body.replace("8 // world_size", "8") if tp else body


def test_capture_records_each_rank_stream_and_leaves_the_callers_generator(tmp_path):
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    b = capture(_script(tmp_path, SP_BODY.format(seed="torch.manual_seed(1000 + rank)")), 2)
    assert torch.equal(torch.rand(3), expected)
    streams = bundle_meta.rng_streams(b)
    assert [(s.seeded, s.seed) for s in streams.values()] == [(True, 1000), (True, 1001)]
    assert streams[0].build[0][:2] == ("aten.randn.default", (4, 6))     # build's input, drawn on meta


def test_a_seed_set_at_import_is_every_ranks_and_build_starts_from_it(tmp_path):
    """Ranks captured in one process see the generator as their own process would: the script's
    import-time seed, not what rank 0's build drew from it on the CPU."""
    body = "torch.manual_seed(3)\n" + SP_BODY.format(seed="torch.rand(5, device='cpu')")
    b = capture(_script(tmp_path, body), 2)
    s0, s1 = bundle_meta.rng_streams(b).values()
    assert s0.seeded and s0.seed == 3 and s0 == s1


def test_a_rank_that_never_seeds_has_no_known_stream(tmp_path):
    seq, dist = _captured(_script(tmp_path, SP_BODY.format(seed="pass")), tmp_path)
    assert not any(s.seeded for s in bundle_meta.rng_streams(G.load(dist)).values())
    (tmp_path / "spec.toml").write_text(SP_TOML)
    rc, text = _check(seq, dist, "--spec", str(tmp_path / "spec.toml"))
    assert rc == 1 and "never seeds its generator" in text


def test_malformed_evidence_is_bad_input(tmp_path):
    seq, dist = _captured(_script(tmp_path, SP_BODY.format(seed="torch.manual_seed(1000 + rank)")), tmp_path)
    b = G.load(dist)
    b.meta[bundle_meta.RNG_STREAMS] = json.dumps({"0": {"seeded": True, "state": "x", "build": []}})
    G.save(b, dist)
    (tmp_path / "spec.toml").write_text(SP_TOML)
    rc, text = _check(seq, dist, "--spec", str(tmp_path / "spec.toml"))
    assert rc == 2 and "rng_streams" in text


@pytest.mark.parametrize("seed,tp,coupled", [
    ("torch.manual_seed(1000)", False, False),        # sequence shards, one stream: the same mask
    ("torch.manual_seed(1000 + rank)", False, True),
    ("torch.manual_seed(1000)", True, True),          # replicas, one stream
    ("torch.manual_seed(1000 + rank)", True, False),
])
def test_without_evidence_same_rng_must_be_written_and_evidence_outranks_it(tmp_path, seed, tp, coupled):
    """A bundle without evidence (an older capture) couples nothing unless same_rng is written
    ([assume] or --assume), which then couples by shape.  Where the bundle records the streams,
    they decide, and the assumption is not used."""
    seq, dist = _captured(_script(tmp_path, _body(seed, tp)), tmp_path)
    spec = tmp_path / "spec.toml"
    spec.write_text(TP_TOML if tp else SP_TOML)
    rc, text = _check(seq, dist, "--spec", str(spec), "--assume", "same_rng")
    assert rc == (0 if coupled else 1), text
    assert "not used by this check" in text               # evidence decided
    old = G.load(dist)
    del old.meta[bundle_meta.RNG_STREAMS]
    G.save(old, dist)
    rc, text = _check(seq, dist, "--spec", str(spec))
    assert rc == 1 and "does not record where its ranks' draws come from" in text
    rc, text = _check(seq, dist, "--spec", str(spec), "--assume", "same_rng")
    assert rc == 0, text
    assert "assuming same_rng" in text and "coupling the random draw native_dropout#1" in text


def test_a_coupling_the_evidence_contradicts_makes_the_recheck_disagree(tmp_path, monkeypatch):
    """The oracle samples each rank's draw from its recorded stream, not from the checker's
    couplings: replicas the checker wrongly claimed (per-rank seeds on a replicated activation)
    differ in the re-check, which turns the proof into an internal soundness error."""
    seq, dist = _captured(_script(tmp_path, _body("torch.manual_seed(1000 + rank)", tp=True)), tmp_path)
    spec = S.parse_spec({"inputs": {"input:x": "replicate"}, "expect": {"out": "replicate"}})
    honest = Checker(G.load(seq), G.load(dist), spec).run()
    assert honest.status == "fails"

    def wrong_replicas(s, theirs, positions, same):     # a checker bug: replicas claimed
        return R.Coupling(s, (tuple(theirs),), None, "evidence", "claimed replicas")
    monkeypatch.setattr(R, "_couple_by_evidence", wrong_replicas)
    ck = Checker(G.load(seq), G.load(dist), spec)
    res = ck.run()
    assert res.status == "refines"
    recheck.attach(res, ck)
    assert res.status == "internal-error" and res.numeric["status"] == "disagrees"


def test_draws_pair_by_op_and_parameters(tmp_path):
    """A rank whose k-th draw has another p (or op) is no counterpart of the sequential k-th draw."""
    body = SP_BODY.format(seed="torch.manual_seed(1000 + rank)").replace(
        "F.dropout(x, 0.5, training=True)", "F.dropout(x, 0.5 if self.ws == 1 else 0.25, training=True)").replace(
        "return M(), ", "m = M(); m.ws = world_size\n    return m, ")
    seq, dist = _captured(_script(tmp_path, body), tmp_path)
    (tmp_path / "spec.toml").write_text(SP_TOML)
    rc, text = _check(seq, dist, "--spec", str(tmp_path / "spec.toml"))
    assert rc == 1 and "native_dropout(p=0.5, train=True)" in text and "native_dropout(p=0.25, train=True)" in text


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_dropout_value_is_x_times_its_mask_as_torch_computes_it(dtype):
    """Lowered with the mask a draw of its own, native_dropout's value is x * mask * scale, the scale
    rounded to x's dtype as the CPU kernel does (checked against the op's real outputs)."""
    from torch.testing._internal.opinfo.core import SampleInput
    from tooling import conformance as C
    for p in (0.1, 0.3, 0.77, 0.9):
        for shape in [(4, 5), (0, 3), (), (7,)]:
            x = torch.randn(shape, dtype=dtype) * 100
            v = C.check_sample(lambda t: torch.ops.aten.native_dropout(t, p, True), SampleInput(x))
            assert v.kind == "agree", (p, shape, [(n.node, n.kind, n.why) for n in v.nodes])


def test_couplings_whose_draws_overlap_are_dropped():
    """Two couplings each valid alone, but rank 1's stream runs one draw ahead of rank 0's (same
    seed): rank 1's first draw IS rank 0's second, so the first sequential draw's second half
    would equal the second's first half.  Both couplings go, naming the overlap."""
    def site(graph, node, k):
        return R.Site(graph, node, f"{node}#1", k, "aten.native_dropout.default", (4, 6) if graph != "seq" else (8, 6),
                      "bool", (("p", 0.5), ("train", True)), None)
    sig = ("aten.native_dropout.default", ("4", "6"), "bool", ("0.5", "True"))
    seq = [site("seq", "d1", 0), site("seq", "d2", 1)]
    r0 = [site(0, "d1", 0), site(0, "d2", 1)]
    r1 = [site(1, "d1", 1), site(1, "d2", 2)]
    positions = {r0[0]: _pos(before=(), own=sig), r0[1]: _pos(before=(sig,), own=sig),
                 r1[0]: _pos(before=(sig,), own=sig), r1[1]: _pos(before=(sig, sig), own=sig)}
    assert R.relation(positions[r1[0]], positions[r0[1]])[0] == "same"
    plan = R.Plan(evidence=True)
    for s, theirs in zip(seq, zip(r0, r1)):
        decided = R._couple_by_evidence(s, list(theirs), positions, lambda a, b: a == b)
        assert isinstance(decided, R.Coupling) and decided.dim == 0      # each alone: independent parts
        plan.couplings.append(decided)
    R._drop_correlated(plan, positions)
    assert plan.couplings == [] and [u.seq.key for u in plan.uncoupled] == ["d1#1", "d2#1"]
    assert "are not independent" in plan.uncoupled[0].why
