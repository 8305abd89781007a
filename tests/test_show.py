"""``entangle show``: summary and single-node views."""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from entangle_py.ir import graph
from entangle_py.ir import symbolic
from entangle_py.errors import InputError
from entangle_py.frontend.fx_import import import_fx
from entangle_py.ir.graph import Bundle, Node, Port, RankGraph, Ref, Source, SymIntMeta, TensorMeta, TorchConst
from entangle_py.frontend.show import cli_show, fmt_arg, fmt_val

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parents[2] / "shared" / "external" / "entangle-data"
needs_data = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"third-party FX dumps not found at {DATA} (../shared/external/entangle-data)")


@pytest.fixture(autouse=True)
def _fixed_width(monkeypatch):
    """Piped output is 140 columns unless COLUMNS says otherwise; make the layout deterministic."""
    monkeypatch.delenv("COLUMNS", raising=False)


def hand_bundle() -> Bundle:
    s0 = symbolic.make_symbol("s0")
    ranks = []
    for r in range(2):
        nodes = [
            Node("x", "placeholder", val=TensorMeta((s0, 8), "float32")),
            Node("w", "placeholder", val=TensorMeta((8, 4 * (r + 1)), "bfloat16")),
            Node("mm", "aten.mm.default", args=(Ref("x"), Ref("w")), val=TensorMeta((s0, 4 * (r + 1)), "float32"),
                 source=Source("model.py", 42, "forward", "y = x @ self.w[idx]"), module="layers.0.fc1"),
            Node("relu", "aten.relu.default", args=(Ref("mm"),), val=TensorMeta((s0, 4 * (r + 1)), "float32")),
            Node("relu_1", "aten.relu.default", args=(Ref("relu"),), val=TensorMeta((s0, 4 * (r + 1)), "float32")),
            Node("ar", "_c10d_functional.all_reduce.default", args=(Ref("relu_1"), "sum", "g0"),
                 val=TensorMeta((s0, 4 * (r + 1)), "float32")),
            Node("wait", "_c10d_functional.wait_tensor.default", args=(Ref("ar"),),
                 val=TensorMeta((s0, 4 * (r + 1)), "float32")),
            Node("z", "aten.zeros.default", args=([2, 3],),
                 kwargs={"dtype": TorchConst("dtype", "int32"), "device": TorchConst("device", "cuda:0")},
                 val=TensorMeta((2, 3), "int32")),
            Node("fill", "aten.masked_fill.Scalar", args=(Ref("wait"), Ref("wait"), float("-inf")),
                 val=TensorMeta((s0, 4 * (r + 1)), "float32")),
        ]
        if r == 1:
            nodes.append(Node("extra", "aten.neg.default", args=(Ref("fill"),), val=TensorMeta((s0, 8), "float32")))
        ranks.append(RankGraph(rank=r, nodes=nodes, inputs=[Port("x", "x"), Port("weight", "w")],
                               outputs=[Port("out", "fill"), Port("z", "z")], groups={"g0": [0, 1]},
                               symbols={"s0": (1, None)}, guards=[symbolic.parse("Ge(s0, 2)", {"s0": s0})]))
    return Bundle(ranks=ranks, kind="forward")


def run_show(capsys, path, node=None, rank=None) -> str:
    rc = cli_show(argparse.Namespace(file=str(path), node=node, rank=rank))
    assert rc == 0
    return capsys.readouterr().out


def test_summary_hand_built(tmp_path, capsys):
    path = tmp_path / "b.json"
    graph.save(hand_bundle(), path)
    out = run_show(capsys, path)
    assert "forward bundle, world size 2" in out
    assert "rank 0: 9 nodes (2 placeholders, 7 ops, 6 distinct), 2 inputs, 2 outputs" in out
    assert "rank 1: 10 nodes (2 placeholders, 8 ops, 7 distinct)" in out
    assert "symbols: s0 in [1, inf]" in out and "guards: s0 >= 2" in out
    # histogram: per-rank columns since the ranks differ; sorted by count
    hist = out[out.index("Op histogram"):out.index("Collectives")]
    assert re.search(r"aten\.relu\.default\s+│\s+2\s+│\s+2", hist)
    assert re.search(r"aten\.neg\.default\s+│\s+-\s+│\s+1", hist)
    assert hist.index("aten.relu.default") < hist.index("aten.mm.default")
    # collectives: op, group, members, count per rank (wait_tensor is not a collective)
    coll = out[out.index("Collectives"):out.index("Inputs")]
    assert re.search(r"_c10d_functional\.all_reduce\s+│\s+'g0'\s+│\s+0-1\s+│\s+1\s+│\s+1", coll)
    assert "wait_tensor" not in coll
    # ports with shapes and dtypes, per rank where they differ
    ins = out[out.index("Inputs"):out.index("Outputs")]
    assert re.search(r"weight\s+│\s+bf16\[8, 4\]\s+\(w\)\s+│\s+bf16\[8, 8\]\s+\(w\)", ins)
    assert re.search(r"x\s+│\s+f32\[s0, 8\]", ins)
    outs = out[out.index("Outputs"):]
    assert "z" in outs and "i32[2, 3]" in outs


def test_summary_one_rank(tmp_path, capsys):
    path = tmp_path / "b.pt"
    graph.save(hand_bundle(), path)
    out = run_show(capsys, path, rank=1)
    assert "rank 1:" in out and "rank 0:" not in out
    assert re.search(r"aten\.neg\.default\s+│\s+1", out)
    with pytest.raises(InputError, match=r"--rank 2 is out of range: the bundle has ranks 0\.\.1"):
        cli_show(argparse.Namespace(file=str(path), node=None, rank=2))


def test_node_view(tmp_path, capsys):
    path = tmp_path / "b.json.gz"
    graph.save(hand_bundle(), path)
    out = run_show(capsys, path, node="mm")
    assert out.count("rank ") == 2 and "rank 0: mm" in out and "rank 1: mm" in out
    assert "aten.mm.default" in out and re.search(r"args\s+x, w\n", out)
    assert "model.py:42 in forward" in out
    assert "y = x @ self.w[idx]" in out          # printed literally, not eaten as rich markup
    assert "layers.0.fc1" in out and "f32[s0, 8]" in out and re.search(r"used by\s+relu\n", out)
    out = run_show(capsys, path, node="ar", rank=0)
    assert "rank 1" not in out and "'g0' (ranks 0-1)" in out
    out = run_show(capsys, path, node="z")
    assert re.search(r"kwargs\s+dtype=torch\.int32, device=device\('cuda:0'\)", out)
    assert re.search(r"output port\s+z\n", out)
    out = run_show(capsys, path, node="fill")
    assert "-inf" in out
    out = run_show(capsys, path, node="w")
    assert re.search(r"input port\s+weight\n", out)


def test_node_unknown(tmp_path):
    path = tmp_path / "b.json"
    graph.save(hand_bundle(), path)
    with pytest.raises(InputError, match=r"no node 'relu2'; close names: relu, relu_1"):
        cli_show(argparse.Namespace(file=str(path), node="relu2", rank=None))
    with pytest.raises(InputError, match=r"rank 0 has no node 'extra' \(rank 1 has it\)"):
        cli_show(argparse.Namespace(file=str(path), node="extra", rank=0))
    with pytest.raises(InputError, match=r"no node 'qqqq'$"):
        cli_show(argparse.Namespace(file=str(path), node="qqqq", rank=None))


def test_formatting():
    s0 = symbolic.make_symbol("s0")
    assert fmt_val(TensorMeta((s0, 3), "bfloat16")) == "bf16[s0, 3]"
    assert fmt_val((TensorMeta((), "bool"), None)) == "(b8[], -)"
    assert fmt_val(SymIntMeta(2 * s0)) == "Sym(2*s0)"
    assert fmt_arg([Ref("a"), -float("inf"), TorchConst("layout", "strided"), "s"]) == "[a, -inf, torch.strided, 's']"


@needs_data
def test_show_real_graph(tmp_path, capsys):
    files = sorted((DATA / "gpt" / "paral2_layer1").glob("fw.g0.r*.py"))
    path = tmp_path / "tp2.pt"
    graph.save(import_fx([str(f) for f in files]), path)
    out = run_show(capsys, path)
    assert "forward bundle, world size 2 (imported from fx-text)" in out
    assert "rank 0: 194 nodes (26 placeholders, 168 ops, 43 distinct), 26 inputs, 44 outputs" in out
    assert "Op histogram (same on every rank)" in out
    assert re.search(r"aten\.view\.default\s+│\s+31", out)
    assert re.search(r"_c10d_functional\.all_reduce\s+│\s+'12'\s+│\s+0-1\s+│\s+4\s+│\s+4", out)
    assert re.search(r"_c10d_functional\.reduce_scatter_tensor\s+│\s+'12'\s+│\s+0-1\s+│\s+2\s+│\s+2", out)
    assert re.search(r"primals_1\s+│\s+f32\[49152, 768\]", out)
    assert re.search(r"const:_tensor_constant0\s+│\s+i64\[\]\s+\(_tensor_constant0\)", out)
    assert re.search(r"div_2\s+│\s+f32\[\]", out)
    # readable at this size: no line wider than the console and no cell truncated with an ellipsis
    assert max(len(line) for line in out.splitlines()) <= 140
    assert "…" not in out

    out = run_show(capsys, path, node="baddbmm", rank=1)
    assert "rank 1: baddbmm" in out and "rank 0" not in out
    assert "megatron/core/transformer/dot_product_attention.py:156 in forward" in out
    assert re.search(r"code\s+matmul_result = torch\.baddbmm\(\n", out)
    assert "beta=0.0, alpha=0.17677669529663687" in out


@needs_data
def test_show_real_joint_graph_cli(tmp_path):
    d = DATA / "bug_missing_allreduce_under_wrong_config" / "tp2.bug"
    path = tmp_path / "tp2.json.gz"
    graph.save(import_fx([str(d / "both.g0.r0.py"), str(d / "both.g0.r1.py")]), path)
    r = subprocess.run([sys.executable, "-m", "entangle_py", "show", str(path), "--node", "all_reduce_6"],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "'1' (ranks 0)" in r.stdout and "'3' (ranks 1)" in r.stdout
    assert "_functional_collectives.py:170 in all_reduce" in r.stdout
    r = subprocess.run([sys.executable, "-m", "entangle_py", "show", str(path), "--node", "mm_77"],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == ("entangle show: error: the bundle has no node 'mm_77'; "
                                "close names: mm_7, mm_9, mm_8, mm_6, mm_5")


def test_control_characters_are_escaped(tmp_path, capsys):
    """Names and code come from the file; a hostile bundle must not reach the terminal with escapes."""
    esc = "\x1b[2J\x1b]0;pwned\x07"
    b = Bundle(ranks=[RankGraph(
        rank=0,
        nodes=[Node("x" + esc, "placeholder", val=TensorMeta((2,), "float32")),
               Node("ar", "_c10d_functional.all_reduce.default", args=(Ref("x" + esc), "sum", "g" + esc),
                    val=TensorMeta((2,), "float32"), source=Source("f.py" + esc, 1, "fn", "code" + esc))],
        inputs=[Port("in" + esc, "x" + esc)], outputs=[Port("out", "ar")], groups={"g" + esc: [0]})],
        meta={"imported_from": esc})
    path = tmp_path / "evil.json"
    graph.save(b, path)
    for node in (None, "ar", "x" + esc):
        out = run_show(capsys, path, node=node)
        assert "\x1b" not in out and "\x07" not in out
        assert "\\x1b" in out
    with pytest.raises(InputError) as e:
        cli_show(argparse.Namespace(file=str(path), node="x\x1b[2J\x1b]0;pwne", rank=None))
    assert "close names: x\\x1b[2J" in str(e.value)
    assert "\x1b" not in str(e.value) and "\x07" not in str(e.value)
