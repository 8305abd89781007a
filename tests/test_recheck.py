"""The interpreter's second opinion (entangle_py/oracle/recheck.py): every proof re-checked numerically,
a witness for every failure."""
import json
from pathlib import Path

import pytest
import torch

from entangle_py.ir import graph as G
from entangle_py.oracle import recheck
from entangle_py.oracle import numeric_runs
from entangle_py.cli import main
from entangle_py.pipeline import check_files

ROOT = Path(__file__).resolve().parents[1]
GRAPHS = ROOT / "graphs"
EXAMPLES = sorted(d.name for d in GRAPHS.iterdir() if (d / "seq.pt").is_file() and (d / "dist.pt").is_file())
WRONG_SUM = '''from entangle_py.engine.lemma import Lemma
# WRONG on purpose: a sum over two ranks is rank 0's tensor
LEMMAS = [Lemma("wrong_rsum_is_rank0", "(rsum (Cons x (Cons y (Nil))))", "x")]
'''


def _paths(name):
    d = GRAPHS / name
    return str(d / "seq.pt"), str(d / "dist.pt"), str(d / "spec.toml")


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_gets_a_second_opinion(example):
    res, checker = check_files(*_paths(example), numeric=False)
    before = res.status
    num = recheck.attach(res, checker)
    if before == "refines":
        assert num["kind"] == "recheck" and num["status"] == "agrees" and num["draws"] == 2, num
        assert res.exit_code == 0
    else:
        assert before == "fails" and "missing" in example
        assert num["kind"] == "witness" and num["status"] == "confirmed", num
        assert num["verdict"].startswith("confirmed: the distributed program computes something else here")
        assert num["diff"]["examples"] and res.exit_code == 1


def test_a_wrong_lemma_makes_a_false_proof_an_internal_soundness_error(tmp_path):
    """Without the all-reduce and with a lemma that says sum(x, y) = x, the checker 'proves' the
    broken MLP; the re-check catches it: exit 4 at the bias add, whose relation r0.out is false."""
    lem = tmp_path / "wrong_sum.py"
    lem.write_text(WRONG_SUM)
    seq, dist, _ = _paths("mlp_tp2_missing_allreduce")
    spec = tmp_path / "spec.toml"       # no [expect]: only the certificate stands in the way
    spec.write_text((GRAPHS / "mlp_tp2_missing_allreduce" / "spec.toml").read_text().split("[expect]")[0])
    res, checker = check_files(seq, dist, str(spec), lemma_files=[str(lem)], numeric=False)
    assert res.status == "refines" and res.certificates == {"out": '(Gd "r0.add")'}   # the false proof
    recheck.attach(res, checker)
    assert res.status == "internal-error" and res.exit_code == 4
    # the pipeline (numeric on, as every entry point runs it) gives the same verdict by itself
    assert check_files(seq, dist, str(spec), lemma_files=[str(lem)])[0].exit_code == 4
    assert res.failure.node == "add" and "internal soundness error" in res.failure.reason
    assert res.numeric["status"] == "disagrees" and res.numeric["operator"]["node"] == "add"
    # the command line says so too
    out = tmp_path / "r.json"
    assert main(["check", seq, dist, "--spec", str(spec), "--lemmas", str(lem), "--json", str(out)]) == 4
    assert json.loads(out.read_text())["numeric"]["operator"]["node"] == "add"
    # and without the numeric check the false proof stands (what --no-numeric gives up)
    assert main(["check", seq, dist, "--spec", str(spec), "--lemmas", str(lem), "--no-numeric"]) == 0


def test_missing_allreduce_prints_a_confirmed_witness(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["check", *_paths("mlp_tp2_missing_allreduce")[:2], "--spec",
                 _paths("mlp_tp2_missing_allreduce")[2], "--json", str(out), "-v"]) == 1
    text = capsys.readouterr().out
    # the best term add(sum(r0.x, r1.x), bias) does equal G_s (it is not what any rank holds), so
    # what goes wrong is downstream of add: the output, computed by each rank without the all-reduce
    assert "numeric witness: confirmed: the distributed program computes something else here (at output out: r" \
        in text, text
    assert "expected" in text and "numeric check:" in text
    num = json.loads(out.read_text())["numeric"]
    assert num["status"] == "confirmed" and num["candidate"] in ("r0.out", "r1.out")
    assert num["best_term_equal"] is True and num["output_sources"]


def test_a_wrong_output_names_where_the_program_computes_it(tmp_path, capsys):
    """FSDP whose backward keeps the rank's own gradient rows (never reduce-scattered): the first
    operator without a clean term (the mean's backward) holds its value, the gradient output is
    what differs, so the witness names where each rank computes it -- the slice, with its code
    printed as it is (``grad[a:b]`` is not rich markup)."""
    from entangle_py.frontend.capture import capture
    programs = ROOT / "tests" / "corpus" / "programs"
    script = str(programs / "_fsdp.py:fsdp_no_reduce_scatter")
    seq, dist, out = tmp_path / "s.pt", tmp_path / "d.pt", tmp_path / "r.json"
    G.save(capture(script, 1, joint=True), seq)
    G.save(capture(script, 2, joint=True), dist)
    assert main(["check", str(seq), str(dist), "--spec", str(programs / "fsdp_joint.toml"), "--json", str(out)]) == 1
    text = capsys.readouterr().out
    num = json.loads(out.read_text())["numeric"]
    assert num["status"] == "confirmed" and num["at"] == "at output grad:weight" and num["best_term_equal"]
    bug = next(i for i, ln in enumerate((programs / "_fsdp.py").read_text().splitlines(), 1) if "# BUG" in ln)
    assert any(loc["file"].endswith("_fsdp.py") and loc["line"] == bug for loc in num["output_sources"])
    assert "g = grad[ctx.rank * ctx.n:(ctx.rank + 1) * ctx.n]" in text


def _bias_twice_minus_once(src, dst):
    """A correct MLP the checker cannot prove: each rank computes y + b as (y + 2 b) - b."""
    b = G.load(src)
    for g in b.ranks:
        i = [n.name for n in g.nodes].index("add")
        add = g.nodes[i]
        y, bias = add.args
        bval = g.node(bias.name).val
        g.nodes[i:i + 1] = [
            G.Node("b2", "aten.mul.Tensor", (bias, 2), {}, bval),
            G.Node("tmp", "aten.add.Tensor", (y, G.Ref("b2")), {}, add.val),
            G.Node("add", "aten.sub.Tensor", (G.Ref("tmp"), bias), {}, add.val, add.source, add.module)]
        g.__post_init__()
    G.save(b, dst)


def test_a_correct_program_without_a_lemma_is_numerically_equal(tmp_path, capsys):
    dist = tmp_path / "dist.pt"
    _bias_twice_minus_once(GRAPHS / "mlp_tp2" / "dist.pt", dist)
    seq, _, spec = _paths("mlp_tp2")
    assert main(["check", seq, str(dist), "--spec", spec]) == 1        # exit stays 1
    text = capsys.readouterr().out
    assert "refinement fails" in text
    assert ("numeric witness: numerically equal on 2 draws: r0.out holds add's value; the proof lacks a lemma "
            "for add; probably not a bug") in text, text


def test_no_numeric_and_the_budget(tmp_path, capsys):
    seq, dist, spec = _paths("mlp_tp2")
    out = tmp_path / "r.json"
    assert main(["check", seq, dist, "--spec", spec, "--no-numeric", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["numeric"] is None
    assert "re-check" not in capsys.readouterr().out
    assert main(["check", seq, dist, "--spec", spec, "--recheck-budget", "1000", "--json", str(out)]) == 0
    num = json.loads(out.read_text())["numeric"]
    assert num["status"] == "skipped" and "over the budget" in num["reason"]
    assert "re-check skipped: the programs' values would take about" in capsys.readouterr().out


def test_dropout_draws_come_from_their_stream_never_from_the_values():
    """A training-mode native_dropout runs with the mask the draw model samples for its stream
    position (oracle/draws.py), whatever x holds; its value is x * mask / (1 - p)."""
    from entangle_py.oracle import draws as D
    x = G.Node("x", "placeholder", (), {}, G.TensorMeta((40, 5), "float32"))
    d = G.Node("d", "aten.native_dropout.default", (G.Ref("x"), 0.5, True), {},
               (G.TensorMeta((40, 5), "float32"), G.TensorMeta((40, 5), "bool")))
    g = G.RankGraph(0, [x, d], [G.Port("input:x", "x")], [G.Port("out", "d")])

    def run(xv, key):
        runner = numeric_runs.OverridingRunner(G.Bundle([g]), [{"input:x": xv}], [{}],
                                          lambda r, node, like: D.sample(node, like, key, 0))
        return runner.run()[0]["d"]
    xv = torch.randn(40, 5, dtype=torch.float64)
    value, mask = run(xv, "stream A")
    assert mask.dtype == torch.bool and 0 < int(mask.sum()) < mask.numel()
    assert torch.equal(value, xv * mask * 2.0)
    assert torch.equal(run(torch.randn(40, 5, dtype=torch.float64), "stream A")[1], mask)   # not from x's values
    assert not torch.equal(run(xv, "stream B")[1], mask)       # another position: another mask


def test_compare_reports_the_entries_that_differ():
    a = torch.zeros(3, 4, dtype=torch.float64)
    b = a.clone()
    b[1, 2] = 0.5
    c = numeric_runs.compare(a, b)
    assert not c["equal"] and c["max_abs"] == 0.5
    assert c["examples"][0] == {"index": [1, 2], "expected": 0.0, "got": 0.5}
    assert numeric_runs.compare(a, a + 1e-14)["equal"]
    assert not numeric_runs.compare(torch.tensor([1, 2]), torch.tensor([1, 3]))["equal"]
    assert not numeric_runs.compare(a, a[:2])["equal"]


def test_compare_equal_infinities_agree():
    """-inf = -inf (a causal mask's filled scores); inf against -inf or a number does not."""
    a = torch.tensor([float("-inf"), 1.0, float("inf"), float("nan")], dtype=torch.float64)
    assert numeric_runs.compare(a, a.clone())["equal"]
    assert not numeric_runs.compare(a, torch.tensor([float("inf"), 1.0, float("inf"), float("nan")]))["equal"]
    assert not numeric_runs.compare(a, torch.tensor([-1e300, 1.0, float("inf"), float("nan")], dtype=torch.float64))["equal"]


def test_loss_targets_are_drawn_with_padding_unless_assumed_absent(tmp_path):
    """A data-parallel mean cross-entropy divided by the batch size instead of the number of real
    targets is only wrong where labels are padded with the ignore index (-100): the witness draws
    such labels (a quarter of them) unless the spec assumes no_ignored_targets, so it confirms the
    bug instead of calling it a missing lemma."""
    from entangle_py.frontend.capture import capture
    from entangle_py.oracle.numeric_runs import _ignore_some
    import torch
    programs = ROOT / "tests" / "corpus" / "programs"
    seq, dist, out = tmp_path / "s.pt", tmp_path / "d.pt", tmp_path / "r.json"
    G.save(capture(str(programs / "_adv4.py:adv4_xpad_batch"), 1), seq)
    G.save(capture(str(programs / "_adv4.py:adv4_xpad_batch"), 2), dist)
    assert main(["check", str(seq), str(dist), "--spec", str(programs / "adv4_xpad.toml"), "--json", str(out)]) == 1
    num = json.loads(out.read_text())["numeric"]
    assert num["status"] == "confirmed"
    # drawn again without padding the programs agree: the verdict names the assumption
    assert num["padded_targets"] == {"inputs": ["input:target"], "equal_without": True}, num
    assert "only where labels are padding" in num["verdict"] and "no_ignored_targets" in num["verdict"]
    t = {"t": torch.arange(8), "one": torch.tensor([3])}
    _ignore_some(t, {"t": -100, "one": -100}, torch.Generator().manual_seed(0))
    assert int((t["t"] == -100).sum()) == 2 and t["one"].tolist() == [3]


def test_a_wrong_program_whose_output_relation_is_guessed_says_so(tmp_path, capsys):
    """Without [expect] the witness guesses the output's relation from the ranks' outputs: it says
    so and lists every clean relation it tried (none holds: fc2's all-reduce is missing)."""
    seq, dist, spec = _paths("mlp_tp2_missing_allreduce")
    text = Path(spec).read_text()
    assert '[expect]\n"out" = "replicate"' in text
    (tmp_path / "spec.toml").write_text(text.replace('[expect]\n"out" = "replicate"', ""))
    out = tmp_path / "r.json"
    assert main(["check", seq, dist, "--spec", str(tmp_path / "spec.toml"), "--json", str(out)]) == 1
    num = json.loads(out.read_text())["numeric"]
    assert num["status"] == "confirmed" and num["guessed"]["output"] == "out", num
    assert {"r0.out", "sum over ranks of out", "mean over ranks of out", "max over ranks of out"} <= \
        set(num["guessed"]["tried"])
    assert "out has no [expect], so its relation was guessed: none of r0.out, sum over ranks of out" in num["verdict"]
    # with [expect] the relation is the user's: nothing was guessed
    assert main(["check", seq, dist, "--spec", spec, "--json", str(out)]) == 1
    assert "guessed" not in json.loads(out.read_text())["numeric"]


def test_a_violated_expectation_refuted_on_values_ends_its_search():
    """An [expect] equality the window's lemmas do not prove is asked of the interpreter before
    widening: refuted on values, it is violated at once -- no widening, no second pass keeping
    every fact -- with the status, relations and expectations of the full search."""
    from entangle_py.check import spec as S
    from entangle_py.check.checker import Checker
    seq, dist, _ = _paths("mlp_tp2")
    spec = S.parse_spec({"expect": {"out": "partial"}})      # twice the output: violated
    full = Checker(G.load(seq), G.load(dist), spec).run()
    ck = Checker(G.load(seq), G.load(dist), spec, refute=recheck.refuter())
    res = ck.run()
    assert set(ck.refuted) == {"out"} and ck.refuted["out"].startswith("differs on 2 random draws")
    assert not ck.window.complete and not res.rechecked
    assert (res.status, res.relations, res.expectations) == (full.status, full.relations, full.expectations)
    assert res.expectations == [("out", "partial", res.relations["out"], False)]
    # the pipeline gives the checker its refuter unless the numeric check is off
    assert check_files(seq, dist, None, numeric=False)[1].refute is None


def test_the_refuter_refutes_only_a_real_finite_difference():
    res, ck = check_files(*_paths("mlp_tp2"))
    cert = res.certificates["out"]                       # the output's proven relation
    node = ck._expect_target("out")[1]
    refute = recheck.refuter()
    assert refute(ck, node, cert) is None                # true: equal on the draws
    twice = f"(rsum (Cons {cert} (Cons {cert} (Nil))))"
    assert refute(ck, node, twice).startswith("differs on 2 random draws: max abs diff")
    # where a value is not finite, IEEE and exact arithmetic part: never a refutation
    assert refute(ck, node, f'(scalar "div" {cert} "0.0")') is None
    assert refute(ck, node, '(Gd "r0.no such tensor")') is None          # cannot be computed
