"""Graphs nobody here wrote: entangle-data (Megatron-LM, Hugging Face), imported from their text
dumps, checked with the specs in graphs/.  Fixed twins are built by editing a copy of the text:
a checker that rejects everything is no checker.
"""
import re
from pathlib import Path

import pytest
from conftest import run_entangle

from entangle_py.ir import graph as G
from entangle_py.config import Policy
from entangle_py.frontend.fx_import import import_fx
from entangle_py.pipeline import check_files

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "external" / "entangle-data"
pytestmark = pytest.mark.skipif(not DATA.exists(), reason=f"third-party graphs (entangle-data) not present at {DATA}")


def _bundle(tmp_path, name, files, edit=None):
    paths = []
    for i, f in enumerate(files):
        text = Path(f).read_text()
        if edit:
            edited = edit(text)
            assert edited != text, "the edit did not apply"
            text = edited
        p = tmp_path / f"{name}.{i}.py"
        p.write_text(text)
        paths.append(str(p))
    out = tmp_path / f"{name}.pt"
    G.save(import_fx(paths), out)
    return str(out)


# ----------------------------------------------------------------------------- gradient accumulation

GA = DATA / "bug_grad_accumulation"
GA_SPEC = str(ROOT / "graphs" / "grad_accumulation" / "spec.toml")


def _sum_over_full_batch(text):
    """The fix: each micro-batch loss is its sum divided by the full batch (8), not its mean."""
    out = text
    for k, src in (("", "pow_1"), ("_1", "pow_2")):
        out = re.sub(rf'mean{k}: "f32\[\]" = torch\.ops\.aten\.mean\.default\({src}\)(;[^\n]*)?\n',
                     f'sum{k}: "f32[]" = torch.ops.aten.sum.default({src})\n'
                     f'        mean{k}: "f32[]" = torch.ops.aten.div.Tensor(sum{k}, 8)\n', out)
    return out


def test_grad_accumulation_bug_violates_expectation_at_loss_normalisation(tmp_path):
    seq = _bundle(tmp_path, "seq", [GA / "1step" / "fw.g0.r0.py"])
    dist = _bundle(tmp_path, "dist", [GA / "2step.bug" / "fw.g0.r0.py"])
    res, _ = check_files(seq, dist, GA_SPEC)
    assert res.status == "fails"
    # each micro-batch's loss is its own mean (sum_k / 4); the sequential loss over the whole
    # batch (sum / 8) is the mean of the two -- a clean term, the mean over the micro-batches' parts
    # -- but the trainer adds them (tr_loss + tr_loss_step) without averaging: the first operator
    # without a clean mapping is that accumulation (the fixed twin divides each sum by 8 instead)
    assert res.failure.node == "add_1" and res.failure.target == "aten.add.Tensor", res.failure
    assert "trace_trainer.py" in res.failure.source
    [(out, req, found, ok)] = res.expectations
    assert (out, req, ok) == ("add_1", "r0.add_3", False)


def test_grad_accumulation_fixed_twin_meets_expectation(tmp_path):
    seq = _bundle(tmp_path, "seq", [GA / "1step" / "fw.g0.r0.py"])
    dist = _bundle(tmp_path, "dist", [GA / "2step.bug" / "fw.g0.r0.py"], edit=_sum_over_full_batch)
    res, _ = check_files(seq, dist, GA_SPEC)
    assert res.status == "refines", res.failure
    assert res.relations["add_1"] == "r0.add_3"
    assert [e[3] for e in res.expectations] == [True]


# ----------------------------------------------------------------------------- missing all-reduce (Megatron)

MAR = DATA / "bug_missing_allreduce_under_wrong_config"
MAR_SPEC = str(ROOT / "graphs" / "megatron_missing_allreduce" / "spec.toml")


def _all_reduce_input_grad(text):
    """The fix: all-reduce the output layer's input gradient (mm_5) over the TP group '12'."""
    line = re.search(r'\n(\s*)_unsafe_view_11: "f16\[1024, 32, 1536\]" = torch\.ops\.aten\._unsafe_view\.default\(mm_5, ', text)
    ind = line.group(1)
    fix = (f'\n{ind}all_reduce_fix: "f16[32768, 1536]" = torch.ops._c10d_functional.all_reduce.default(mm_5, \'sum\', \'12\')'
           f'\n{ind}wait_fix: "f16[32768, 1536]" = torch.ops._c10d_functional.wait_tensor.default(all_reduce_fix)')
    return text[:line.start()] + fix + line.group(0).replace("(mm_5, ", "(wait_fix, ") + text[line.end():]


def _mar(tmp_path, edit=None):
    seq = _bundle(tmp_path, "seq", [MAR / "tp1" / "both.g0.r0.py"])
    dist = _bundle(tmp_path, "dist", [MAR / "tp2.bug" / f"both.g0.r{r}.py" for r in (0, 1)], edit=edit)
    return check_files(seq, dist, MAR_SPEC)[0]


def test_megatron_missing_allreduce_fails_at_mm_7(tmp_path):
    res = _mar(tmp_path)
    assert res.status == "fails"
    assert res.failure.node == "mm_7" and res.failure.target == "aten.mm.default"
    assert "tensor_parallel/layers.py" in res.failure.source
    # the evidence: the input gradient is a sum of per-rank partials that was never all-reduced
    assert re.fullmatch(r"sum\(r0\.(\w+), r1\.\1\)", res.failure.inputs["view_46"]), res.failure.inputs


def test_megatron_missing_allreduce_fixed_twin_refines(tmp_path):
    res = _mar(tmp_path, edit=_all_reduce_input_grad)
    assert res.status == "refines", res.failure
    assert res.relations["mm_7"] == "concat(r0.mm_7, r1.mm_7, dim=1)"


# ----------------------------------------------------------------------------- Megatron GPT layer

GPT = DATA / "gpt"
GPT_SPEC = str(ROOT / "graphs" / "gpt_tp2" / "spec.toml")


def _gpt(tmp_path, edit=None, ranks_edited=(0, 1), policy=None):
    seq = _bundle(tmp_path, "seq", [GPT / "paral1_layer1" / "fw.g0.r0.py"])
    files = []
    for r in (0, 1):
        f = GPT / "paral2_layer1" / f"fw.g0.r{r}.py"
        if edit is not None and r in ranks_edited:
            text = edit(f.read_text())
            assert text != f.read_text(), "the edit did not apply"
            (tmp_path / f"r{r}.py").write_text(text)
            f = tmp_path / f"r{r}.py"
        files.append(f)
    dist = _bundle(tmp_path, "dist", files)
    return check_files(seq, dist, GPT_SPEC, policy=policy)[0]


def test_gpt_tp2_loss_equals_on_every_rank(tmp_path):
    res = _gpt(tmp_path)
    assert res.status == "refines", res.failure
    assert res.relations["div_2"] == "r0.div_2"
    assert [e[3] for e in res.expectations] == [True]
    # dropout in training mode: the text dumps record no RNG evidence, so each draw is coupled
    # under same_rng, which the spec writes and the report prints with the draws it coupled
    assert [name for name, _ in res.assumptions] == ["same_rng", "valid_indices"]
    assert [d["coupling"] for d in res.random_draws] == [
        "concat(r0.native_dropout[1], r1.native_dropout[1], dim=0)",        # embeddings, sequence-sharded
        "concat(r0.native_dropout_1[1], r1.native_dropout_1[1], dim=1)",    # attention probabilities, by head
        "concat(r0.native_dropout_2[1], r1.native_dropout_2[1], dim=0)",
        "concat(r0.native_dropout_3[1], r1.native_dropout_3[1], dim=0)"]
    assert {d["basis"] for d in res.random_draws} == {"same_rng"}
    assert len(res.assumption_uses["same_rng"]) == 4


@pytest.mark.parametrize("assume", [(), ("same_rng",)])
def test_gpt_tp2_dropout_needs_same_rng_written(tmp_path, assume):
    """The shared spec (read-only) does not write same_rng: the dumps' dropout draws have no
    counterpart, and the check fails at the first one, naming it; ``--assume same_rng`` (here
    check_files' ``assume``) says it as [assume] would."""
    seq = _bundle(tmp_path, "seq", [GPT / "paral1_layer1" / "fw.g0.r0.py"])
    dist = _bundle(tmp_path, "dist", [GPT / "paral2_layer1" / f"fw.g0.r{r}.py" for r in (0, 1)])
    res = check_files(seq, dist, str(GPT / "specs" / "layer1_tp2.toml"), assume=assume, numeric=False)[0]
    if assume:
        assert res.status == "refines", res.failure
        assert [name for name, _ in res.assumptions] == ["same_rng", "valid_indices"]
        return
    assert res.status == "fails"
    assert "self.embedding_dropout(embeddings)" in res.failure.source
    assert [d["coupling"] for d in res.random_draws] == [None] * 4
    assert "does not record where its ranks' draws come from" in res.random_draws[0]["why"]
    assert [name for name, _ in res.assumptions] == ["valid_indices"]


@pytest.mark.parametrize("edit", [None, "wrong offset"])
def test_gpt_tp2_verdict_holds_with_narrow_window_and_retiring(tmp_path, edit):
    """A window one operator deep and a fresh e-graph every few hundred e-nodes: same verdicts."""
    policy = Policy(window_depth=1, window_nodes=2000)
    if edit is None:
        res = _gpt(tmp_path, policy=policy)
        assert res.status == "refines" and res.relations["div_2"] == "r0.div_2", res.failure
    else:
        res = _gpt(tmp_path, _wrong_offset, ranks_edited=(1,), policy=policy)
        assert res.status == "fails" and res.failure.node == "index", res.failure


def _wrong_offset(text):
    return text.replace("torch.ops.aten.sub.Tensor(clone, 49152)", "torch.ops.aten.sub.Tensor(clone, 0)")


def test_gpt_tp2_wrong_vocab_offset_fails_at_embedding(tmp_path):
    """Rank 1 looks its ids up without subtracting its vocabulary offset."""
    res = _gpt(tmp_path, _wrong_offset, ranks_edited=(1,))
    assert res.status == "fails"
    assert res.failure.node == "index", res.failure     # the word-embedding lookup, self.weight[...]
    assert "self.weight[masked_input]" in res.failure.source


def test_gpt_tp2_missing_softmax_denominator_all_reduce_fails(tmp_path):
    """The ranks skip the all-reduce of their exp-sums (each log-sum-exp covers its vocab half only)."""
    res = _gpt(tmp_path, lambda t: t.replace(
        "torch.ops._c10d_functional.all_reduce.default(sum_1, 'sum', '12')",
        "torch.ops.aten.clone.default(sum_1)"))
    assert res.status == "fails"
    assert res.failure.node in ("log", "sum_1", "copy_3"), res.failure   # the softmax denominator


def test_check_reads_dump_directories_directly(tmp_path):
    """`entangle check DIR DIR`: per-rank FX dumps imported on the fly (no import-fx step)."""
    r = run_entangle("check", str(GA / "1step"), str(GA / "2step.bug"),
                        "--spec", GA_SPEC)
    assert r.returncode == 1 and "first operator without a clean mapping: add_1" in r.stdout, r.stdout + r.stderr
    assert "input detach_2 = mean of (r0.mean, r0.mean_1)" in r.stdout, r.stdout
    (tmp_path / "fw.g0.r0.py").write_text((GA / "1step" / "fw.g0.r0.py").read_text())
    (tmp_path / "fw.g1.r0.py").write_text((GA / "1step" / "fw.g0.r0.py").read_text())
    r = run_entangle("check", str(tmp_path), str(GA / "2step.bug"))
    assert r.returncode == 2 and "found 2 graphs" in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_gpt_tp2_without_valid_indices_fails_at_the_lookup_with_a_hint(tmp_path):
    """The ranks mask their ids; without `[assume] valid_indices` the lookup fails, and the report
    names the assumption that discharges it.  With it (and a wrong offset) no such hint."""
    from entangle_py.report.common import hints
    spec = tmp_path / "spec.toml"
    spec.write_text(Path(GPT_SPEC).read_text().replace("valid_indices = true", "valid_indices = false"))
    seq = _bundle(tmp_path, "seq", [GPT / "paral1_layer1" / "fw.g0.r0.py"])
    dist = _bundle(tmp_path, "dist", [GPT / "paral2_layer1" / f"fw.g0.r{r}.py" for r in (0, 1)])
    res = check_files(seq, dist, str(spec))[0]
    assert res.status == "fails" and res.failure.node == "index", res.failure
    assert any("[assume] valid_indices = true" in h for h in hints(res))
    wrong = _gpt(tmp_path, _wrong_offset, ranks_edited=(1,))
    assert wrong.status == "fails" and not hints(wrong)


def _grid_steps(layers: int, tp: int, policy=None) -> tuple[str, dict]:
    """(verdict, lemma steps per G_s operator) of the shared grid cell, as bench_grid.py checks it."""
    res, checker = check_files(str(GPT / f"paral1_layer{layers}"), str(GPT / f"paral{tp}_layer{layers}"),
                               str(GPT / "specs" / f"layer{layers}_tp{tp}.toml"), assume=("same_rng",),
                               policy=policy, numeric=False)
    return res.status, {k: s["iterations"] for k, s in checker.op_stats.items()}, res.blocks


def test_gpt_block_proof_steps_do_not_grow_with_the_degree():
    """Layer memoization proves one block in an e-graph of its own; each of its operators is
    explored from its inputs' relations as in the operator loop.  Exploring from the block's
    boundary instead (its operators' facts are defined before any is proved) left TP 8's
    attention to saturate a window without the ranks' own operators: 228 lemma steps at TP 8
    against 137 at TP 2."""
    v2, s2, b2 = _grid_steps(8, 2)
    v8, s8, b8 = _grid_steps(8, 8)
    assert v2 == v8 == "refines"
    # the 8 layers' dumps hold 7 alike blocks (the spec gives each layer's `empty` buffer: an input
    # of the block, related by its facts, not a tensor computed before it)
    assert b2 == b8 == {"proved": 1, "reused": 6, "count": 7, "period": 70}, (b2, b8)
    assert sum(s8.values()) <= 1.05 * sum(s2.values()), (sum(s8.values()), sum(s2.values()))


def test_gpt_a_block_whose_given_buffer_is_related_otherwise_is_not_reused(tmp_path):
    """The spec gives each layer's `empty` buffer, an input of its block: a block whose given
    relation is not block 0's renamed (rank 1's part first) is checked on its own, and the verdict
    and relations are those of the check without memoization."""
    from entangle_py.config import Policy
    text = (GPT / "specs" / "layer8_tp2.toml").read_text()
    edited = text.replace('empty_4 = "concat(r0.empty_12, r1.empty_12, dim=0)"',
                          'empty_4 = "concat(r1.empty_12, r0.empty_12, dim=0)"')
    assert edited != text
    (tmp_path / "spec.toml").write_text(edited)
    args = (str(GPT / "paral1_layer8"), str(GPT / "paral2_layer8"), str(tmp_path / "spec.toml"))
    memo, _ = check_files(*args, assume=("same_rng",), numeric=False)
    plain, _ = check_files(*args, assume=("same_rng",), numeric=False, policy=Policy(memoize=False))
    assert memo.blocks.get("reused", 0) < 6, memo.blocks
    assert (memo.status, memo.failure and memo.failure.node) == (plain.status, plain.failure and plain.failure.node)
