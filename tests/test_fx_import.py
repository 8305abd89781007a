"""Importing GraphModule.print_readable() text: real third-party dumps and real torch output."""
from __future__ import annotations

import math
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import sympy
import torch

from entangle_py.ir import graph
from entangle_py.ir import symbolic
from entangle_py.errors import InputError
from entangle_py.frontend.fx_import import DTYPE_ABBRS, import_fx, infer_groups
from entangle_py.ir.graph import Ref, SymIntMeta, TensorMeta, TorchConst

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parents[2] / "shared" / "external" / "entangle-data"
needs_data = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"third-party FX dumps not found at {DATA} (../shared/external/entangle-data)")

GRAPH_DIRS = ["gpt/paral1_layer1", "gpt/paral2_layer1", "bug_missing_allreduce_under_wrong_config/tp1",
              "bug_missing_allreduce_under_wrong_config/tp2.bug", "bug_grad_accumulation/1step",
              "bug_grad_accumulation/2step.bug"]


def rank_files(d: str) -> list[Path]:
    files = sorted((DATA / d).glob("*.g0.r*.py"), key=lambda p: int(re.search(r"\.r(\d+)\.py$", p.name)[1]))
    assert files, f"no graph files in {d}"
    return files


# --------------------------------------------------------------------------- independent line counts

_NODE_LINE = re.compile(r'^\s+([A-Za-z_]\w*)(?:\s*:\s*"[^"]*")?\s*=\s*(.*)$')
_DECL = re.compile(r'([A-Za-z_]\w*)\s*:\s*"([^"]*)"\s*;')


def count_text(path: Path):
    """What a reader of the file sees: placeholders, node lines, op per node line, return names."""
    text = path.read_text()
    lines = text.splitlines()
    sig = next(l for l in lines if "def forward(" in l)
    params = re.findall(r'([A-Za-z_]\w*)\s*:\s*"([^"]*)"', sig)
    if not params:   # joint graph: forward(self, primals, tangents) + declarations on one line
        decl = next(l for l in lines if _DECL.search(l) and "=" not in l)
        params = _DECL.findall(decl)
    nodes, ops = {}, Counter()
    for l in lines[lines.index(sig) + 1:]:
        m = _NODE_LINE.match(l)
        if not m or "tree_flatten_spec" in l:
            continue
        name, rhs = m.groups()
        nodes[name] = rhs
        op = re.match(r"torch\.ops\.([\w.]+)\(", rhs)
        if op:
            ops[op[1]] += 1
        elif re.match(r"\w+\[\d+\]", rhs):
            ops["getitem"] += 1
    ret = next(l for l in lines if l.strip().startswith("return "))
    returned = re.findall(r"\b([A-Za-z_]\w*|None)\b", ret.split("return", 1)[1].replace("self._out_spec", "")
                          .replace("pytree.tree_unflatten", ""))
    return dict(params), nodes, ops, returned


@needs_data
@pytest.mark.parametrize("d", GRAPH_DIRS)
def test_real_graphs_import(d, tmp_path):
    files = rank_files(d)
    bundle = import_fx([str(f) for f in files])
    assert bundle.world_size == len(files)
    assert bundle.kind == ("joint" if "allreduce" in d else "forward")
    for f, g in zip(files, bundle.ranks):
        params, node_lines, ops, returned = count_text(f)
        constants = [n for n, rhs in node_lines.items() if rhs.startswith("self.")]
        # one node per placeholder and per node line
        assert len(g.nodes) == len(params) + len(node_lines)
        assert [p.name for p in g.inputs] == list(params) + ["const:" + c for c in constants]
        assert all(g.node(p.node).is_placeholder for p in g.inputs)
        # ops per line, counted with a regex, equal the imported histogram
        hist = g.op_histogram()
        for op, n in ops.items():
            assert hist[op] == n, op
        assert sum(hist.values()) == len(node_lines) - len(constants)
        # input shapes/dtypes
        for name, ann in params.items():
            dt, shape = re.match(r"(\w+)\[(.*)\]", ann).groups()
            want = tuple(int(x) for x in shape.split(",") if x.strip())
            assert g.node(name).val == TensorMeta(want, DTYPE_ABBRS[dt])
        # outputs: the returned names, in order, without None and repeats
        want_out = list(dict.fromkeys(x for x in returned if x != "None"))
        assert [p.name for p in g.outputs] == want_out
        assert all(p.name == p.node for p in g.outputs)
        # every annotated node line has a value; sources attached where the file gives them
        text = f.read_text()
        for name, rhs in node_lines.items():
            if re.search(rf'^\s+{re.escape(name)}\s*:\s*"', text, re.M):
                assert g.node(name).val is not None, name
        with_source = [n for n in g.nodes if n.source is not None]
        assert len(with_source) > len(g.nodes) // 2
        for n in with_source:
            assert n.source.file.endswith(".py") and n.source.line > 0 and n.source.fn
    # round trip through every on-disk form
    for suffix in (".pt", ".json", ".json.gz"):
        out = tmp_path / f"b{suffix}"
        graph.save(bundle, out)
        assert graph.load(out) == bundle


@needs_data
def test_gpt_details():
    seq = import_fx([str(f) for f in rank_files("gpt/paral1_layer1")])
    dist = import_fx([str(f) for f in rank_files("gpt/paral2_layer1")])
    g = dist.ranks[0]
    assert g.groups == {"12": [0, 1]}
    assert seq.ranks[0].groups == {"7": [0]}
    assert g.node("primals_1").val == TensorMeta((49152, 768), "float32")
    assert seq.ranks[0].node("primals_1").val == TensorMeta((98304, 768), "float32")
    assert g.outputs[0].name == "div_2" and seq.ranks[0].outputs[0].name == "div_2"
    # keyword constants
    z = g.node("zeros")
    assert z.target == "aten.zeros.default" and z.args == ([],)
    assert z.kwargs == {"dtype": TorchConst("dtype", "int32"), "device": TorchConst("device", "cuda"),
                        "pin_memory": False}
    c = g.node("_to_copy")
    assert c.kwargs["layout"] == TorchConst("layout", "strided")
    assert c.kwargs["device"] == TorchConst("device", "cuda:0")
    assert g.node("clone_1").kwargs == {"memory_format": TorchConst("memory_format", "contiguous_format")}
    # multi-output ops: getitem nodes, tuple value from the getitems (and the schema's arity)
    d = g.node("native_dropout")
    assert d.val == (TensorMeta((768, 8, 768), "float32"), TensorMeta((768, 8, 768), "bool"))
    assert g.node("getitem_1").target == "getitem" and g.node("getitem_1").args == (Ref("native_dropout"), 1)
    assert g.node("max_1").val == (TensorMeta((1536, 8), "float32"), None)
    assert len(g.node("fused_layer_norm_affine_fwd").val) == 3
    # collectives
    ar = g.node("all_reduce")
    assert ar.target == "_c10d_functional.all_reduce.default"
    assert ar.args == (Ref("slice_scatter"), "sum", "12")
    assert g.node("reduce_scatter_tensor").args[1:] == ("sum", 2, "12")
    # tensor constants: placeholder + const: input port; lift_fresh_copy kept
    k = g.node("_tensor_constant0")
    assert k.is_placeholder and k.val == TensorMeta((), "int64")
    assert g.input_node("const:_tensor_constant0") is k
    assert g.node("lift_fresh_copy").args == (Ref("_tensor_constant0"),)
    # sources
    src = g.node("index").source
    assert src.file.endswith("megatron/core/tensor_parallel/layers.py") and src.line == 260
    assert src.fn == "forward" and src.code == "output_parallel = self.weight[masked_input]"
    assert g.node("baddbmm").kwargs == {"beta": 0.0, "alpha": 0.17677669529663687}
    assert g.node("slice_1").args == (Ref("index"), 1, 0, 9223372036854775807)


@needs_data
def test_joint_graph_details():
    b = import_fx([str(f) for f in rank_files("bug_missing_allreduce_under_wrong_config/tp2.bug")])
    assert b.kind == "joint"
    g0, g1 = b.ranks
    # per-rank data-parallel groups of size one: '1' only on rank 0, '3' only on rank 1
    assert g0.groups == {"12": [0, 1], "1": [0], "3": [1]}
    assert g0.node("primals_1").val == TensorMeta((32, 1024), "int64")
    assert g0.node("tangents_21").val == TensorMeta((1,), "float32")
    names = [p.name for p in g0.inputs]
    assert names[:2] == ["primals_1", "primals_2"] and "tangents_21" in names
    assert g0.node("clone").source is None          # "# No stacktrace found for following nodes"
    log = g0.node("log_tensor")
    assert log.target == "tg.log_tensor.default" and log.args == (Ref("_to_copy"), "tokens")
    af = g0.node("auto_functionalized_v2")
    assert af.target == "higher_order.auto_functionalized_v2"
    assert af.args == ("tg.inplace_log_tensor.default",)
    assert af.kwargs == {"s": "module.module.embedding.word_embeddings.weight", "_t_base_index": 0,
                         "_all_bases": [Ref("clone")]}
    assert af.val == (None, TensorMeta((49152, 1536), "float16"))
    assert g0.node("getitem_1").args == (Ref("auto_functionalized_v2"), 1)
    assert "None" not in [p.name for p in g0.outputs]
    assert g0.has("mm_7") and g0.has("mul_4")
    assert g0.node("_tensor_constant1").val == TensorMeta((), "float16")


# --------------------------------------------------------------------------- real torch output

def _dim(d, g):
    """A torch size (int or SymInt) as our IR writes it."""
    if isinstance(d, int):
        return d
    e = symbolic.from_torch(d.node.expr, g.sympy_symbols())
    return int(e) if e.is_Integer else e


def _assert_matches_fx(gm: torch.fx.GraphModule, g: graph.RankGraph):
    """Every FX node is imported with its target, arguments and value."""
    fx_nodes = [n for n in gm.graph.nodes if n.op != "output"]
    assert [n.name for n in fx_nodes] == [n.name for n in g.nodes]

    def conv(a):
        if isinstance(a, torch.fx.Node):
            return Ref(a.name)
        if isinstance(a, (list, tuple)):
            return [conv(x) for x in a]
        if isinstance(a, torch.dtype):
            return TorchConst("dtype", str(a).removeprefix("torch."))
        if isinstance(a, torch.device):
            return TorchConst("device", str(a))
        if isinstance(a, torch.layout):
            return TorchConst("layout", str(a).removeprefix("torch."))
        return a

    for fn in fx_nodes:
        n = g.node(fn.name)
        if fn.op == "placeholder":
            assert n.is_placeholder
        elif fn.op == "get_attr":
            assert n.is_placeholder and g.input_node("const:" + fn.target) is n
        elif getattr(fn.target, "__module__", None) == "_operator":
            assert n.target in ("getitem", f"operator.{fn.target.__name__}"), fn
            assert n.args == tuple(conv(a) for a in fn.args)
        elif fn.target.__name__ == "getitem":
            assert n.target == "getitem" and n.args == tuple(conv(a) for a in fn.args)
        else:
            assert n.target == str(fn.target), fn
            assert n.args == tuple(conv(a) for a in fn.args), fn
            assert n.kwargs == {k: conv(v) for k, v in fn.kwargs.items()}, fn
        v = fn.meta.get("val")
        if isinstance(v, torch.Tensor):
            assert isinstance(n.val, TensorMeta)
            assert n.val.dtype == str(v.dtype).removeprefix("torch.")
            assert list(n.val.shape) == [_dim(d, g) for d in v.shape]
        elif isinstance(v, (tuple, list)):
            assert isinstance(n.val, tuple) and len(n.val) == len(v)
            for mine, t in zip(n.val, v):
                assert mine is None or list(mine.shape) == [_dim(d, g) for d in t.shape]
    out = next(n for n in gm.graph.nodes if n.op == "output")
    returned = [a.name for a in torch.utils._pytree.tree_leaves(out.args[0]) if a is not None]
    assert [p.name for p in g.outputs] == list(dict.fromkeys(returned))


def _tiny(x, w, y):
    a = torch.nn.functional.dropout(x, 0.1, True)
    m, i = torch.max(a, dim=-1)
    b = torch.where(x > 0, x, torch.tensor(float("-inf")))
    z = torch.zeros(3, dtype=torch.int32, device="cpu")
    s = torch.ops.aten.var_mean.correction(x, [1], correction=0)[0]
    return (m @ w).clamp(min=-math.inf), i, b, s, x.to(torch.float16), z, y.sum(), m


@pytest.mark.parametrize("stride_device", [False, True])
def test_make_fx_print_readable_roundtrip(stride_device, tmp_path):
    from torch.fx.experimental.proxy_tensor import make_fx
    torch.manual_seed(0)
    gm = make_fx(_tiny)(torch.randn(4, 5), torch.randn(4, 3), torch.randn(2))
    text = gm.print_readable(print_output=False, include_stride=stride_device, include_device=stride_device)
    path = tmp_path / "fw.py"
    path.write_text(text)
    b = import_fx([str(path)])
    assert b.kind == "forward" and b.world_size == 1
    g = b.ranks[0]
    _assert_matches_fx(gm, g)
    assert g.node("x_1").val == TensorMeta((4, 5), "float32")
    graph.save(b, tmp_path / "b.pt")
    assert graph.load(tmp_path / "b.pt") == b


def test_make_fx_symbolic_sizes(tmp_path):
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x, w):
        return torch.softmax(x @ w, -1).view(-1) * float("-inf"), (x @ w).max(0)

    gm = make_fx(f, tracing_mode="symbolic")(torch.randn(6, 4), torch.randn(4, 3))
    text = gm.print_readable(print_output=False, include_stride=True, include_device=True)
    path = tmp_path / "dyn.py"
    path.write_text(text)
    b = import_fx([str(path)])
    g = b.ranks[0]
    assert g.symbols and all(rng == (1, None) for rng in g.symbols.values())
    assert all(isinstance(d, sympy.Symbol) for d in g.node("x_1").val.shape)
    _assert_matches_fx(gm, g)
    graph.save(b, tmp_path / "d.json")
    assert graph.load(tmp_path / "d.json") == b


def test_symint_arithmetic(tmp_path, monkeypatch):
    """``floordiv: "Sym((s75//2))" = sym_size_int // 2`` needs an 'operator' namespace in the format."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x):
        return x.new_zeros(x.shape[0] // 2) + 1

    gm = make_fx(f, tracing_mode="symbolic")(torch.randn(6, 4))
    text = gm.print_readable(print_output=False)
    assert re.search(r"= sym_size_int\w* // 2", text)
    path = tmp_path / "dyn.py"
    path.write_text(text)
    from entangle_py.ir import ops
    if "operator" not in ops.NAMESPACES:
        with pytest.raises(InputError, match=r"dyn\.py:\d+: Python arithmetic on symbolic sizes"):
            import_fx([str(path)])
        monkeypatch.setattr(ops, "NAMESPACES", ops.NAMESPACES | {"operator"})
    b = import_fx([str(path)])
    g = b.ranks[0]
    fd = next(n for n in g.nodes if n.target == "operator.floordiv")
    assert fd.args[1] == 2 and isinstance(fd.val, SymIntMeta)
    _assert_matches_fx(gm, g)


def test_aot_dynamic_sym_placeholders(tmp_path):
    """AOTAutograd forward with SymInt placeholders, FloorDiv sizes and -inf arguments."""
    text = '''
class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "Sym(s77)", primals_2: "Sym(s27)", primals_3: "f32[s77, s27][s27, 1]cpu", primals_4: "f32[s27, s27][s27, 1]cpu"):
        # File: /tmp/exp2.py:8 in f, code: y = torch.nn.functional.softmax(x @ w, -1)
        mm: "f32[s77, s27][s27, 1]cpu" = torch.ops.aten.mm.default(primals_3, primals_4)
        view: "f32[((s27*s77)//2), ((s27*s77)//(((s27*s77)//2)))][((s27*s77)//(((s27*s77)//2))), 1]cpu" = torch.ops.aten.view.default(mm, [-1, 2]);  mm = None
        sym_size_int_2: "Sym(((s27*s77)//2))" = torch.ops.aten.sym_size.int(view, 0)
        mul_8: "f32[((s27*s77)//2), 2][Max(1, ((s27*s77)//(((s27*s77)//2)))), 1]cpu" = torch.ops.aten.mul.Tensor(view, -inf);  view = None
        sum_1: "f32[][]cpu" = torch.ops.aten.sum.default(mul_8);  mul_8 = None
        add_15: "f32[][]cpu" = torch.ops.aten.add.Tensor(sum_1, primals_1);  sum_1 = None
        return (add_15, primals_3, primals_1, sym_size_int_2)
'''
    p = tmp_path / "g.py"
    p.write_text(text)
    b = import_fx([str(p)])
    g = b.ranks[0]
    s77, s27 = sympy.symbols("s77 s27", integer=True, positive=True)
    assert g.symbols == {"s77": (1, None), "s27": (1, None)}
    assert g.node("primals_1").val == SymIntMeta(s77)
    assert g.node("primals_3").val == TensorMeta((s77, s27), "float32")
    half = g.node("view").val.shape[0]
    assert half.func.__name__ == "FloorDiv"
    assert g.node("sym_size_int_2").val.expr == half
    assert g.node("mul_8").args == (Ref("view"), -math.inf)
    assert g.node("mm").source.line == 8
    for suffix in (".pt", ".json", ".json.gz"):
        graph.save(b, tmp_path / f"x{suffix}")
        assert graph.load(tmp_path / f"x{suffix}") == b


def test_dtype_table_matches_torch():
    from torch.fx.graph import dtype_abbrs
    for dt, abbr in dtype_abbrs.items():
        assert abbr in DTYPE_ABBRS, abbr
        assert DTYPE_ABBRS[abbr] == str(dt).removeprefix("torch."), abbr


def test_result_counts_match_torch_for_every_lowered_op():
    """The import reads the number of an op's results from ops.RESULT_COUNTS, not torch: every op
    the checker lowers with more than one result is there, with torch's count."""
    from entangle_py.ir import ops
    from entangle_py.semantics.lower import LOWERINGS
    for target in LOWERINGS:
        if target.count(".") != 2:
            continue        # a builtin target (getitem)
        ns, name, overload = target.split(".")
        try:
            n = len(getattr(getattr(getattr(torch.ops, ns), name), overload)._schema.returns)
        except (AttributeError, RuntimeError):
            continue        # a plugin op or a collective of another namespace: not an ATen schema
        assert ops.RESULT_COUNTS.get(target, 1) == max(n, 1), target
    assert all(target in LOWERINGS for target in ops.RESULT_COUNTS)


# --------------------------------------------------------------------------- synthetic corner cases

HEADER = '''class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[4]", arg1_1: "bf16[2, 3]"):
'''


def _imp(tmp_path, body: str, name="g.py", header=HEADER):
    p = tmp_path / name
    p.write_text(header + body)
    return import_fx([str(p)])


def test_multi_output_annotations_and_getitem_forms(tmp_path):
    body = '''        var_mean: "f32[]", "f32[]" = torch.ops.aten.var_mean.correction(arg0_1, [0], correction = 0)
        getitem: "f32[]" = var_mean[0]
        getitem_1: "f32[]" = operator.getitem(var_mean, 1)
        split: ("f32[2]", "f32[2]") = torch.ops.aten.split.Tensor(arg0_1, 2)
        getitem_2: "f32[2]" = split[1];  split = None
        return [getitem, getitem_1, getitem_2]
'''
    g = _imp(tmp_path, body).ranks[0]
    assert g.node("var_mean").val == (TensorMeta((), "float32"), TensorMeta((), "float32"))
    assert g.node("split").val == (TensorMeta((2,), "float32"), TensorMeta((2,), "float32"))
    assert g.node("getitem_1").target == "getitem" and g.node("getitem_1").args == (Ref("var_mean"), 1)
    assert g.node("arg1_1").val == TensorMeta((2, 3), "bfloat16")
    assert [p.name for p in g.outputs] == ["getitem", "getitem_1", "getitem_2"]


def test_groups_and_kind_override(tmp_path):
    body = '''        all_reduce: "f32[4]" = torch.ops._c10d_functional.all_reduce.default(arg0_1, 'sum', '5')
        wait_tensor: "f32[4]" = torch.ops._c10d_functional.wait_tensor.default(all_reduce)
        return (wait_tensor,)
'''
    for r in range(3):
        (tmp_path / f"r{r}.py").write_text(HEADER + body)
    b = import_fx([str(tmp_path / f"r{r}.py") for r in range(3)], kind="imported")
    assert b.kind == "imported" and b.world_size == 3
    assert all(g.groups == {"5": [0, 1, 2]} for g in b.ranks)
    assert infer_groups([["a"], ["a", "b"]]) == {"a": [0, 1], "b": [1]}
    with pytest.raises(InputError, match="--kind"):
        import_fx([str(tmp_path / "r0.py")], kind="backward")


@pytest.mark.parametrize("line, msg", [
    ('        x: "f32[4]" = torch.ops.os.system.default("touch SENTINEL")', r"namespace 'os'"),
    ('        x: "f32[4]" = __import__("os").system("touch SENTINEL")', "not an op of torch.ops"),
    ('        x: "f32[4]" = torch.ops.aten.add.Tensor(arg0_1, __import__("os"))', "unsupported argument"),
    ('        x: "f32[4]" = torch.ops.aten.add.Tensor(arg0_1, undefined_9)', "not a node defined"),
    ('        x: "q7[4]" = torch.ops.aten.add.Tensor(arg0_1, 1)', "unknown dtype 'q7'"),
    ('        x: "f32[__import__(\'os\')]" = torch.ops.aten.add.Tensor(arg0_1, 1)', "unsupported size"),
    ('        x: "f32[4]" = torch.ops.aten.add.Tensor(arg0_1, 1', "cannot parse"),
    ('        x: "f32[4]" = torch.relu(arg0_1)', "not an op of torch.ops"),
    ('        x = self.l(arg0_1)', "not an op of torch.ops"),
    ('        x: "f32[4]" = torch.ops.aten.add.Tensor(arg0_1, 1);  import os', "unexpected statement"),
    ('        for i in range(3): pass', "not a graph node line"),
    ('        x: "f32[4]" = torch.ops.aten.add.Tensor(arg0_1, torch.evil)', "unknown torch constant"),
])
def test_bad_lines_are_input_errors(tmp_path, monkeypatch, line, msg):
    monkeypatch.chdir(tmp_path)
    body = line + "\n        return (x,)\n"
    with pytest.raises(InputError, match=msg) as e:
        _imp(tmp_path, body)
    assert re.search(r"g\.py:3: ", str(e.value)), str(e.value)
    assert not (tmp_path / "SENTINEL").exists()


def test_not_a_graph_and_subgraphs(tmp_path):
    p = tmp_path / "x.py"
    p.write_text("print('hello')\n")
    with pytest.raises(InputError, match="no 'def forward"):
        import_fx([str(p)])
    with pytest.raises(InputError, match="cannot read"):
        import_fx([str(tmp_path / "missing.py")])
    (tmp_path / "bin.py").write_bytes(b"\xff\xfe\x00def forward(")
    with pytest.raises(InputError, match="UTF-8"):
        import_fx([str(tmp_path / "bin.py")])

    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x):
        return torch.cond(x.sum() > 0, lambda x: x.sin(), lambda x: x.cos(), (x,))

    text = make_fx(f)(torch.randn(4)).print_readable(print_output=False)
    p.write_text(text)
    with pytest.raises(InputError, match="subgraph"):
        import_fx([str(p)])
    p.write_text(HEADER + "        return (arg0_1,)\n\n" + HEADER + "        return (arg0_1,)\n")
    with pytest.raises(InputError, match="holds 2 graphs"):
        import_fx([str(p)])


def test_symbolic_trace_graph_is_rejected_clearly(tmp_path):
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)

        def forward(self, x):
            return torch.relu(self.lin(x))

    p = tmp_path / "m.py"
    p.write_text(torch.fx.symbolic_trace(M()).print_readable(print_output=False))
    with pytest.raises(InputError, match=r"m\.py:\d+: call of 'self.lin'.*ATen-level"):
        import_fx([str(p)])


def test_cli_import_fx(tmp_path):
    p = tmp_path / "g.py"
    p.write_text(HEADER + '        add: "f32[4]" = torch.ops.aten.add.Tensor(arg0_1, 1)\n        return (add,)\n')
    out = tmp_path / "out.json"
    r = subprocess.run([sys.executable, "-m", "entangle_py", "import-fx", str(p), "-o", str(out)],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.strip().splitlines()) == 1 and "forward" in r.stdout and "3 nodes" in r.stdout
    assert graph.load(out).ranks[0].node("add").target == "aten.add.Tensor"
    p.write_text(HEADER + '        add: "zz[4]" = torch.ops.aten.add.Tensor(arg0_1, 1)\n        return (add,)\n')
    r = subprocess.run([sys.executable, "-m", "entangle_py", "import-fx", str(p), "-o", str(out)],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "g.py:3" in r.stderr


def test_mixed_kinds_and_log_header(tmp_path):
    joint = '''[__aot_joint_graph] TRACED GRAPH
 ===== Joint graph 0 =====
 /x/torch/fx/_lazy_graph_module.py class joint_fn(torch.nn.Module):
    def forward(self, primals, tangents):
        primals_1: "f32[4]"; tangents_1: "f32[4]";

        primals_1, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        #  File: /m.py:3 in f, code: return x.sin()
        sin: "f32[4]" = torch.ops.aten.sin.default(primals_1)
        cos: "f32[4]" = torch.ops.aten.cos.default(primals_1);  primals_1 = None
        mul: "f32[4]" = torch.ops.aten.mul.Tensor(tangents_1, cos);  tangents_1 = cos = None
        return pytree.tree_unflatten([sin, mul], self._out_spec)
'''
    (tmp_path / "j.py").write_text(joint)
    b = import_fx([str(tmp_path / "j.py")])
    g = b.ranks[0]
    assert b.kind == "joint" and [p.name for p in g.inputs] == ["primals_1", "tangents_1"]
    assert g.node("sin").source.file == "/m.py" and g.node("mul").source.code == "return x.sin()"
    assert [p.name for p in g.outputs] == ["sin", "mul"]
    (tmp_path / "f.py").write_text(HEADER + "        return (arg0_1,)\n")
    with pytest.raises(InputError, match="mix joint graphs"):
        import_fx([str(tmp_path / "j.py"), str(tmp_path / "f.py")])
    assert import_fx([str(tmp_path / "j.py"), str(tmp_path / "f.py")], kind="joint").kind == "joint"
