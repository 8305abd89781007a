"""The bundle file format: exact round trips, and hostile files rejected without executing anything."""
from __future__ import annotations

import gzip
import json
import math
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import sympy
import torch

from entangle_py.ir import graph
from entangle_py.ir import symbolic
from entangle_py.ir.graph import (Bundle, GraphFormatError, Node, Port, RankGraph, Ref, ScalarMeta, Source,
                               SymIntMeta, TensorMeta, TorchConst)

REPO = Path(__file__).resolve().parents[1]
SUFFIXES = (".pt", ".json", ".json.gz")


def make_bundle() -> Bundle:
    s0, s1 = symbolic.make_symbol("s0"), symbolic.make_symbol("s1")
    ranks = []
    for r in range(2):
        nodes = [
            Node("x", "placeholder", val=TensorMeta((s0, 768), "float32")),
            Node("n", "placeholder", val=SymIntMeta(s0)),
            Node("w", "placeholder", val=TensorMeta((768, 2 * s1 + 1), "bfloat16")),
            Node("k", "placeholder", val=TensorMeta((), "int64")),
            Node("mm", "aten.mm.default", args=(Ref("x"), Ref("w")),
                 val=TensorMeta((s0, 2 * s1 + 1), "float32"),
                 source=Source("model.py", 12, "forward", "y = x @ w  # [s0, h]"), module="layers.0.mlp"),
            Node("fill", "aten.masked_fill.Scalar", args=(Ref("mm"), Ref("k"), -math.inf),
                 val=TensorMeta((s0, 2 * s1 + 1), "float32")),
            Node("clamp", "aten.clamp.default", args=(Ref("fill"), None, math.inf),
                 val=TensorMeta((s0, 2 * s1 + 1), "float32")),
            Node("z", "aten.zeros.default", args=([symbolic.FloorDiv(s0, 2), 4],),
                 kwargs={"dtype": TorchConst("dtype", "float16"), "layout": TorchConst("layout", "strided"),
                         "device": TorchConst("device", "cuda:0"), "pin_memory": False},
                 val=TensorMeta((symbolic.FloorDiv(s0, 2), 4), "float16")),
            Node("c", "aten.clone.default", args=(Ref("z"),),
                 kwargs={"memory_format": TorchConst("memory_format", "contiguous_format")},
                 val=TensorMeta((symbolic.FloorDiv(s0, 2), 4), "float16")),
            Node("idx", "aten.index.Tensor", args=(Ref("x"), [None, [Ref("k"), [1, -2, 2**63 - 1]]]),
                 val=TensorMeta((s0,), "float32")),
            Node("sz", "aten.sym_size.int", args=(Ref("x"), 0), val=SymIntMeta(s0)),
            Node("item", "aten._local_scalar_dense.default", args=(Ref("k"),), val=ScalarMeta("int")),
            Node("split", "aten.split.Tensor", args=(Ref("x"), 384, 1),
                 val=(TensorMeta((s0, 384), "float32"), TensorMeta((s0, 384), "float32"), None, SymIntMeta(s1))),
            Node("g1", "getitem", args=(Ref("split"), 1), val=TensorMeta((s0, 384), "float32")),
            Node("ar", "_c10d_functional.all_reduce.default", args=(Ref("g1"), "sum", "12"),
                 val=TensorMeta((s0, 384), "float32")),
            Node("wt", "_c10d_functional.wait_tensor.default", args=(Ref("ar"),),
                 val=TensorMeta((s0, 384), "float32")),
            Node("v", "aten.view.default", args=(Ref("wt"), [Ref("sz"), sympy.Mod(s0, 3) + s1, -1]),
                 kwargs={"scale": 0.5, "flag": True, "tag": "caf\u00e9 \"quoted\"", "nested": [[], [[2.5]]]},
                 val=TensorMeta((s0, 384), "float32")),
        ]
        ranks.append(RankGraph(
            rank=r, nodes=nodes,
            inputs=[Port("x", "x"), Port("n", "n"), Port("w", "w"), Port("const:_tensor_constant0", "k")],
            outputs=[Port("out", "v"), Port("mm", "mm")],
            groups={"12": [0, 1], f"solo{r}": [r]},
            symbols={"s0": (2, None), "s1": (1, 1024)},
            guards=[sympy.Eq(sympy.Mod(s0, 2), 0), sympy.Ge(s0, 2), sympy.Lt(s1 * s0, 10**6),
                    sympy.And(sympy.Ne(s1, 3), sympy.Le(symbolic.FloorDiv(s0, 2), s1 + 7))],
        ))
    return Bundle(ranks=ranks, kind="joint", meta={"note": "hand built", "files": "a.py\nb.py"})


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_round_trip_identical(tmp_path, suffix):
    b = make_bundle()
    path = tmp_path / f"bundle{suffix}"
    graph.save(b, path)
    back = graph.load(path)
    assert back == b
    # the sympy objects come back equal and with the same assumptions
    x = back.ranks[0].node("x").val.shape[0]
    assert x.is_positive and x.is_integer
    assert back.ranks[1].guards == b.ranks[1].guards
    assert back.ranks[0].node("fill").args[2] == -math.inf
    # saving what we loaded gives the same bytes (JSON) / the same data (.pt)
    path2 = tmp_path / f"again{suffix}"
    graph.save(back, path2)
    assert graph.load(path2) == b
    if suffix == ".json":
        assert path.read_text() == path2.read_text()


def test_file_is_plain_data(tmp_path):
    b = make_bundle()
    graph.save(b, tmp_path / "b.json")
    graph.save(b, tmp_path / "b.pt")
    data = json.loads((tmp_path / "b.json").read_text())
    assert data["format"] == graph.FORMAT_NAME and data["version"] == graph.FORMAT_VERSION
    assert torch.load(tmp_path / "b.pt", weights_only=True) == data


# ----------------------------------------------------------------------------- hostile files

def sentinel_cmd(tmp_path) -> tuple[Path, str]:
    s = tmp_path / "SENTINEL"
    return s, f"touch {s}"


def _valid_data() -> dict:
    return graph.encode_bundle(make_bundle())


def _write(path: Path, data):
    if path.suffix == ".pt":
        torch.save(data, path)
    elif path.name.endswith(".json.gz"):
        path.write_bytes(gzip.compress(json.dumps(data).encode()))
    else:
        path.write_text(json.dumps(data))


def _assert_rejected(path: Path, *patterns: str) -> str:
    with pytest.raises(GraphFormatError) as e:
        graph.load(path)
    msg = str(e.value)
    assert str(path) in msg
    for p in patterns:
        assert p in msg, msg
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_unknown_namespace_target(tmp_path, suffix):
    sentinel, cmd = sentinel_cmd(tmp_path)
    data = _valid_data()
    node = data["ranks"][0]["nodes"][4]
    node["target"] = "os.system"
    node["args"] = [cmd]
    path = tmp_path / f"bad{suffix}"
    _write(path, data)
    _assert_rejected(path, "'os.system'", "namespace 'os'", "not one of the allowed namespaces")
    for target in ("builtins.eval.default", "subprocess.run", "__import__", "aten.mm.default;os.system",
                   "torch.ops.aten.mm", "aten..mm"):
        node["target"] = target
        _write(path, data)
        _assert_rejected(path, repr(target))
    assert not sentinel.exists()


@pytest.mark.parametrize("where", ["shape", "symint", "guard", "arg", "symbol"])
def test_code_in_size_strings(tmp_path, where):
    sentinel, cmd = sentinel_cmd(tmp_path)
    payload = f"__import__('os').system('{cmd}')"
    data = _valid_data()
    g = data["ranks"][1]
    if where == "shape":
        g["nodes"][0]["val"]["shape"][0] = payload
    elif where == "symint":
        g["nodes"][1]["val"]["symint"] = payload
    elif where == "guard":
        g["guards"].append(payload)
    elif where == "arg":
        g["nodes"][4]["args"].append({"sym": payload})
    else:
        g["symbols"][payload] = [1, None]
    for suffix in SUFFIXES:
        path = tmp_path / f"bad{suffix}"
        _write(path, data)
        msg = _assert_rejected(path, "rank 1")
        assert "size expression" in msg or "invalid symbol name" in msg, msg
    # the same through sympy-looking but non-whitelisted constructs
    for text in ("s0.__class__", "Symbol('s9')", "exec('1')", "lambda: 1", "s0 if s0 else s1", "s0 / 2",
                 "s0 ** 1000", "s9 + 1"):
        g = _valid_data()
        g["ranks"][0]["guards"].append(text)
        path = tmp_path / "bad.json"
        _write(path, g)
        _assert_rejected(path, "rank 0")
    assert not sentinel.exists()


class _Payload:
    """Pickling this stores a call of os.system -- what a malicious .pt file would carry."""

    def __init__(self, cmd):
        self.cmd = cmd

    def __reduce__(self):
        return (os.system, (self.cmd,))


@pytest.mark.parametrize("writer", ["pickle", "torch.save", "torch.save-in-bundle", "pickle-in-bundle"])
def test_pickle_payload_is_refused(tmp_path, writer):
    sentinel, cmd = sentinel_cmd(tmp_path)
    obj = _Payload(cmd)
    if writer.endswith("in-bundle"):
        data = _valid_data()
        data["meta"]["note"] = obj          # the payload hidden inside otherwise valid data
        obj = data
    path = tmp_path / "evil.pt"
    if writer.startswith("pickle"):
        path.write_bytes(pickle.dumps(obj, protocol=2))
    else:
        tmp = tmp_path / "evil.bin"
        torch.save(obj, tmp)                # an old-style writer: nothing restricts what it stores
        tmp.rename(path)
    msg = _assert_rejected(path)
    assert "refused to load" in msg or "not a graph file" in msg or "not a readable graph file" in msg, msg
    assert not sentinel.exists()


def test_truncated_files(tmp_path):
    b = make_bundle()
    for suffix in SUFFIXES:
        good = tmp_path / f"good{suffix}"
        graph.save(b, good)
        raw = good.read_bytes()
        for cut in (len(raw) // 2, 10, 1):
            bad = tmp_path / f"cut{cut}{suffix}"
            bad.write_bytes(raw[:cut])
            _assert_rejected(bad)
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    _assert_rejected(empty)
    _assert_rejected(tmp_path / "missing.pt", "cannot read")


@pytest.mark.parametrize("mutate, expect", [
    (lambda d: [d], "missing format marker"),
    (lambda d: {**d, "format": "something-else"}, "missing format marker"),
    (lambda d: {**d, "version": 99}, "unsupported format version 99"),
    (lambda d: {k: v for k, v in d.items() if k != "version"}, "unsupported format version None"),
    (lambda d: {**d, "ranks": "nope"}, "ranks must be list"),
    (lambda d: {**d, "world_size": 3}, "world_size 3 but 2 rank graphs"),
    (lambda d: {**d, "extra": 1}, "unknown fields ['extra']"),
    (lambda d: {**d, "meta": {"k": 1}}, "meta['k'] must be str"),
    (lambda d: _set(d, ["ranks", 0, "nodes", 4, "args", 0], {"ref": "later_node"}), "'later_node'"),
    (lambda d: _set(d, ["ranks", 0, "nodes", 4, "name"], "x"), "duplicate node name"),
    (lambda d: _set(d, ["ranks", 0, "nodes", 4, "args", 0], {"pickle": "x"}), "unsupported argument encoding"),
    (lambda d: _set(d, ["ranks", 0, "nodes", 4, "args", 0], {"dtype": "float32; rm -rf /"}), "bad dtype constant"),
    (lambda d: _set(d, ["ranks", 0, "nodes", 0, "val", "shape", 0], -1), "negative size"),
    (lambda d: _set(d, ["ranks", 0, "nodes", 0, "val", "dtype"], 7), "dtype must be str"),
    (lambda d: _set(d, ["ranks", 0, "groups", "12"], [0, 5]), "outside world size"),
    (lambda d: _set(d, ["ranks", 1, "rank"], 0), "rank field is 0, expected 1"),
    (lambda d: _set(d, ["ranks", 0, "outputs", 0, "node"], "ghost"), "unknown node 'ghost'"),
    (lambda d: _set(d, ["ranks", 0, "nodes", 0, "source"], {"file": "a", "line": "12"}), "source line must be int"),
])
def test_wrong_structure(tmp_path, mutate, expect):
    data = mutate(_valid_data())
    for suffix in SUFFIXES:
        path = tmp_path / f"bad{suffix}"
        _write(path, data)
        _assert_rejected(path, expect)


def _set(d, keys, value):
    cur = d
    for k in keys[:-1]:
        cur = cur[k]
    cur[keys[-1]] = value
    return d


def test_deeply_nested_json(tmp_path):
    data = _valid_data()
    deep = "x"
    for _ in range(100):
        deep = [deep]
    data["ranks"][0]["nodes"][4]["args"] = [deep]
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(data))
    _assert_rejected(path, "nested too deeply")


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_json_nesting_bomb(tmp_path, suffix):
    path = tmp_path / f"deep{suffix}"
    text = "[" * 100000 + "]" * 100000
    path.write_bytes(gzip.compress(text.encode()) if suffix == ".json.gz" else text.encode())
    _assert_rejected(path)


# ----------------------------------------------------------------------------- CLI on bad files

def _bad_files(tmp_path) -> dict[str, Path]:
    sentinel, cmd = sentinel_cmd(tmp_path)
    files = {}
    p = tmp_path / "payload.pt"
    p.write_bytes(pickle.dumps(_Payload(cmd)))
    files["payload"] = p
    p = tmp_path / "torchsaved.pt"
    torch.save({"format": graph.FORMAT_NAME, "x": _Payload(cmd)}, tmp_path / "t.bin")
    (tmp_path / "t.bin").rename(p)
    files["torch.save payload"] = p
    good = tmp_path / "good.pt"
    graph.save(make_bundle(), good)
    p = tmp_path / "trunc.pt"
    p.write_bytes(good.read_bytes()[:200])
    files["truncated"] = p
    data = _valid_data()
    data["version"] = 2
    p = tmp_path / "v2.json"
    p.write_text(json.dumps(data))
    files["version"] = p
    data = _valid_data()
    data["ranks"][0]["nodes"][4]["target"] = "os.system"
    p = tmp_path / "os.pt"
    torch.save(data, p)
    files["namespace"] = p
    data = _valid_data()
    data["ranks"][0]["guards"] = [f"__import__('os').system('{cmd}')"]
    p = tmp_path / "guard.json.gz"
    p.write_bytes(gzip.compress(json.dumps(data).encode()))
    files["guard"] = p
    p = tmp_path / "bad.pt"
    p.write_bytes(b"PK\x03\x04 not really a zip")
    files["fake zip"] = p
    return files


def _run_show_all(argvs: list[list[str]]) -> list[subprocess.CompletedProcess]:
    """Run the CLI processes in parallel (each pays torch's import time)."""
    procs = [subprocess.Popen([sys.executable, "-m", "entangle_py", *a], cwd=REPO, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for a in argvs]
    out = []
    for a, p in zip(argvs, procs):
        stdout, stderr = p.communicate(timeout=300)
        out.append(subprocess.CompletedProcess(a, p.returncode, stdout, stderr))
    return out


def _assert_one_line_error(r: subprocess.CompletedProcess, what: str, path: Path):
    assert r.returncode == 2, (what, r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, (what, r.stderr)
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert lines[0].startswith("entangle show: error: ") and str(path) in lines[0], (what, lines[0])


def test_cli_bad_file_one_line_exit_2(tmp_path):
    sentinel, _ = sentinel_cmd(tmp_path)
    files = _bad_files(tmp_path)
    argvs = [["show", str(p)] for p in files.values()]
    argvs += [["show", str(files["payload"]), "--node", "mm"], ["show", str(files["namespace"]), "--rank", "0"]]
    whats = list(files) + ["payload --node", "namespace --rank"]
    paths = list(files.values()) + [files["payload"], files["namespace"]]
    for r, what, path in zip(_run_show_all(argvs), whats, paths):
        _assert_one_line_error(r, what, path)
    assert not sentinel.exists()


@pytest.mark.parametrize("content", [b"this is not a graph\n", b"hello"])
def test_cli_garbage_pt(tmp_path, content):
    path = tmp_path / "garbage.pt"
    path.write_bytes(content)
    _assert_one_line_error(_run_show_all([["show", str(path)]])[0], "garbage", path)
