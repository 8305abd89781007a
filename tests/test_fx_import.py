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
from entangle_py.frontend.functionalize import functional_variant
from entangle_py.frontend.fx_import import import_fx, infer_groups
from entangle_py.frontend.fx_text import DTYPE_ABBRS
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
        else:     # an in-place op is imported as its functional variant (frontend/functionalize.py)
            assert n.target in (str(fn.target), functional_variant(str(fn.target))), fn
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
    """The import reads the number of an op's results from ops.RESULT_COUNTS (the generated
    table, ir/op_classes.py), not torch: every op the checker lowers with more than one result is
    there, and every entry has torch's count."""
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
    for target, n in ops.RESULT_COUNTS.items():
        ns, name, overload = target.split(".")
        assert len(getattr(getattr(getattr(torch.ops, ns), name), overload)._schema.returns) == n > 1, target


def test_lowered_writes_match_the_schemas_of_every_lowered_op():
    """Functionalizing an import reads whether a lowered op writes an argument from
    ops.LOWERED_WRITES, not torch: exactly the lowered ops whose schema (torch's registry or the
    plugin's) writes one are there."""
    from entangle_py.frontend.functionalize import schema
    from entangle_py.ir import ops
    from entangle_py.semantics.lower import LOWERINGS
    writing, read = set(), 0
    for target in LOWERINGS:
        s = schema(target)
        if s is None:
            continue        # a builtin target (getitem): no arguments written
        read += 1
        if any(a.alias_info is not None and a.alias_info.is_write for a in s.arguments):
            writing.add(target)
    assert read > 150 and writing == set(ops.LOWERED_WRITES)


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


# --------------------------------------------------------------------------- in-place ops (issue 23 item 4)
#
# A dump's in-place op writes its argument: a later read of that tensor -- by its own name or through
# a view of its storage -- sees the write.  Each wrong program below "refined" when copy_ was read as
# the functional copy (the write dropped); each correct twin was a false alarm.  Labels: the programs
# are the rank graphs' own semantics (FX runs nodes in order, writes included), checked here with torch.

ROW_SPEC = '''
[inputs]
arg0_1 = "replicate"
arg1_1 = "shard(0)"
[expect]
add = "replicate"
'''


def _tp_residual(rank: int, buffer: str) -> str:
    """Rank ``rank`` of y = x @ w + x with w's rows sharded (x's matching columns sliced): the
    partial products all-reduced, the residual x added from a buffer filled by ``buffer``."""
    return f'''class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[4, 8]", arg1_1: "f32[4, 8]"):
        slice_1: "f32[4, 4]" = torch.ops.aten.slice.Tensor(arg0_1, 1, {4 * rank}, {4 * rank + 4})
        mm: "f32[4, 8]" = torch.ops.aten.mm.default(slice_1, arg1_1)
        all_reduce: "f32[4, 8]" = torch.ops._c10d_functional.all_reduce.default(mm, 'sum', '0')
        wait_tensor: "f32[4, 8]" = torch.ops._c10d_functional.wait_tensor.default(all_reduce)
{buffer}
        add: "f32[4, 8]" = torch.ops.aten.add.Tensor(wait_tensor, res);  wait_tensor = res = None
        return (add,)
'''


SEQ_RESIDUAL = '''class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[4, 8]", arg1_1: "f32[8, 8]"):
        mm: "f32[4, 8]" = torch.ops.aten.mm.default(arg0_1, arg1_1)
        add: "f32[4, 8]" = torch.ops.aten.add.Tensor(mm, arg0_1)
        return (add,)
'''

# the residual buffer allocated, then filled with x
FILLED = '''        res: "f32[4, 8]" = torch.ops.aten.empty.memory_format([4, 8], dtype = torch.float32, device = device(type='cpu'), pin_memory = False)
        copy_: "f32[4, 8]" = torch.ops.aten.copy_.default(res, arg0_1);  copy_ = None'''
# BUG: the residual buffer (a copy of x) reused for the partial product
REUSED = '''        res: "f32[4, 8]" = torch.ops.aten.clone.default(arg0_1)
        copy_: "f32[4, 8]" = torch.ops.aten.copy_.default(res, mm);  copy_ = None'''
# the same bug, the buffer written through a view of it taken before
REUSED_VIEW = '''        res: "f32[4, 8]" = torch.ops.aten.clone.default(arg0_1)
        view: "f32[32]" = torch.ops.aten.view.default(res, [32])
        view_1: "f32[32]" = torch.ops.aten.view.default(mm, [32])
        copy_: "f32[32]" = torch.ops.aten.copy_.default(view, view_1);  copy_ = None'''


def _check_fx(tmp_path, name, seq_text, rank_texts, spec_text):
    d = tmp_path / name
    (d / "dist").mkdir(parents=True)
    (d / "seq.py").write_text(seq_text)
    for r, t in enumerate(rank_texts):
        (d / "dist" / f"fw.g0.r{r}.py").write_text(t)
    (d / "spec.toml").write_text(spec_text)
    from conftest import run_entangle
    return run_entangle("check", d / "seq.py", d / "dist", "--spec", d / "spec.toml", "--no-numeric")


def _run_fx(texts, inputs_per_rank, tmp_path):
    """The imported bundle of ``texts`` (one per rank), run by the interpreter: outputs per rank."""
    from entangle_py.oracle import interp
    paths = []
    for r, t in enumerate(texts):
        p = tmp_path / f"run.r{r}.py"
        p.write_text(t)
        paths.append(str(p))
    b = import_fx(paths)
    return interp.output_values(b, interp.run_bundle(b, inputs_per_rank))


def test_the_residual_programs_mean_what_their_labels_say(tmp_path):
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    want = x @ w + x
    ins = [{"arg0_1": x, "arg1_1": w[4 * r:4 * r + 4]} for r in range(2)]
    for buffer, right in ((FILLED, True), (REUSED, False), (REUSED_VIEW, False)):
        outs = _run_fx([_tp_residual(r, buffer) for r in range(2)], ins, tmp_path)
        assert all(torch.allclose(o["add"], want, atol=1e-5) == right for o in outs)


@pytest.mark.parametrize("buffer,code", [(FILLED, 0), (REUSED, 1), (REUSED_VIEW, 1)],
                         ids=["filled_correct", "reused_wrong", "reused_through_a_view_wrong"])
def test_a_write_into_a_buffer_is_read_back(tmp_path, buffer, code):
    r = _check_fx(tmp_path, "res", SEQ_RESIDUAL, [_tp_residual(k, buffer) for k in range(2)], ROW_SPEC)
    assert r.returncode == code, r.stdout + r.stderr


# a running sum kept in an input (state): acc <- acc + y
SEQ_STATE = '''class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[4, 8]", arg1_1: "f32[8, 8]", arg2_1: "f32[4, 8]"):
        mm: "f32[4, 8]" = torch.ops.aten.mm.default(arg0_1, arg1_1)
        add: "f32[4, 8]" = torch.ops.aten.add.Tensor(arg2_1, mm)
        copy_: "f32[4, 8]" = torch.ops.aten.copy_.default(arg2_1, add);  arg2_1 = add = copy_ = None
        return (mm,)
'''


def _tp_state(rank: int, update: str) -> str:
    return f'''class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[4, 8]", arg1_1: "f32[4, 8]", arg2_1: "f32[4, 8]"):
        slice_1: "f32[4, 4]" = torch.ops.aten.slice.Tensor(arg0_1, 1, {4 * rank}, {4 * rank + 4})
        mm: "f32[4, 8]" = torch.ops.aten.mm.default(slice_1, arg1_1)
        all_reduce: "f32[4, 8]" = torch.ops._c10d_functional.all_reduce.default(mm, 'sum', '0')
        wait_tensor: "f32[4, 8]" = torch.ops._c10d_functional.wait_tensor.default(all_reduce)
        add: "f32[4, 8]" = torch.ops.aten.add.Tensor(arg2_1, {update})
        copy_: "f32[4, 8]" = torch.ops.aten.copy_.default(arg2_1, add);  arg2_1 = add = copy_ = None
        return (wait_tensor,)
'''


STATE_SPEC = '''
[inputs]
arg0_1 = "replicate"
arg1_1 = "shard(0)"
arg2_1 = "replicate"
[outputs]
check = ["mm", "mutated:arg2_1"]
[expect]
mm = "r0.wait_tensor"
"mutated:arg2_1" = "replicate"
'''


def test_the_state_programs_mean_what_their_labels_say(tmp_path):
    x, w, acc = torch.randn(4, 8), torch.randn(8, 8), torch.randn(4, 8)
    ins = [{"arg0_1": x, "arg1_1": w[4 * r:4 * r + 4], "arg2_1": acc} for r in range(2)]
    for update, right in (("wait_tensor", True), ("mm", False)):
        outs = _run_fx([_tp_state(r, update) for r in range(2)], ins, tmp_path)
        assert all(torch.allclose(o["mutated:arg2_1"], acc + x @ w, atol=1e-5) == right for o in outs)


@pytest.mark.parametrize("update,code", [("wait_tensor", 0), ("mm", 1)],
                         ids=["state_from_the_sum_correct", "state_from_the_partial_product_wrong"])
def test_a_write_into_an_input_is_a_mutated_output(tmp_path, update, code):
    seq = _imp(tmp_path, "", header=SEQ_STATE, name="s.py").ranks[0]
    assert [p.name for p in seq.outputs] == ["mm", "mutated:arg2_1"]
    assert not any(n.target == "aten.copy_.default" for n in seq.nodes)
    r = _check_fx(tmp_path, "state", SEQ_STATE, [_tp_state(k, update) for k in range(2)], STATE_SPEC)
    assert r.returncode == code, r.stdout + r.stderr


def test_batch_norm_in_training_writes_its_running_statistics(tmp_path):
    text = '''class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[4, 3]", arg1_1: "f32[3]", arg2_1: "f32[3]", arg3_1: "f32[3]", arg4_1: "f32[3]"):
        native_batch_norm = torch.ops.aten.native_batch_norm.default(arg0_1, arg1_1, arg2_1, arg3_1, arg4_1, True, 0.1, 1e-05)
        getitem: "f32[4, 3]" = native_batch_norm[0];  native_batch_norm = None
        mul: "f32[3]" = torch.ops.aten.mul.Tensor(arg3_1, 1)
        return (getitem, mul)
'''
    x, w, b, rm, rv = torch.randn(4, 3), torch.randn(3), torch.randn(3), torch.randn(3), torch.rand(3) + 1
    rm2, rv2 = rm.clone(), rv.clone()
    want = torch.ops.aten.native_batch_norm.default(x, w, b, rm2, rv2, True, 0.1, 1e-5)[0]
    (out,) = _run_fx([text], [{"arg0_1": x, "arg1_1": w, "arg2_1": b, "arg3_1": rm, "arg4_1": rv}], tmp_path)
    assert torch.allclose(out["getitem"], want, atol=1e-6)
    assert torch.allclose(out["mul"], rm2) and not torch.allclose(rm2, rm)     # read after the update
    assert torch.allclose(out["mutated:arg3_1"], rm2) and torch.allclose(out["mutated:arg4_1"], rv2)


def test_a_direct_call_of_an_out_style_custom_op_writes_its_output(tmp_path):
    """vLLM's rms_norm(result, input, weight, eps) writes ``result``: read afterwards it holds the norm."""
    from entangle_py.frontend.decompose import decompose
    from entangle_py.oracle import interp
    from entangle_py.plugins.vllm import _rms
    text = '''class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[2, 8]", arg1_1: "f32[8]"):
        empty: "f32[2, 8]" = torch.ops.aten.empty.memory_format([2, 8], dtype = torch.float32, device = device(type='cpu'), pin_memory = False)
        rms_norm = torch.ops._C.rms_norm.default(empty, arg0_1, arg1_1, 1e-06);  rms_norm = None
        mul: "f32[2, 8]" = torch.ops.aten.mul.Tensor(empty, 2);  empty = None
        return (mul,)
'''
    p = tmp_path / "rms.py"
    p.write_text(text)
    b = import_fx([str(p)])
    g = b.ranks[0]
    assert g.node("auto_functionalized_rms_norm").target == "higher_order.auto_functionalized"
    assert g.node("mul").args[0] == Ref("rms_norm_new_empty")
    b = decompose(b)
    x, w = torch.randn(2, 8), torch.randn(8)
    (out,) = interp.output_values(b, interp.run_bundle(b, [{"arg0_1": x, "arg1_1": w}]))
    assert torch.allclose(out["mul"], 2 * _rms(x, w, 1e-6), atol=1e-6)


@pytest.mark.parametrize("line,words", [
    ('        t_: "f32[4]" = torch.ops.aten.t_.default(arg0_1)', "an in-place view"),
    ('        normal_: "f32[4]" = torch.ops.aten.normal_.default(arg0_1)', "has no functional variant"),
    ('        x: "f32[4]" = torch.ops._c10d_functional.all_reduce_.default(arg0_1, "sum", "0")', "collective's in-place form"),
    ('        x: "f32[4]" = torch.ops.aten.add.out(arg0_1, arg0_1, out = arg0_1)', "writes out"),
])
def test_writes_that_cannot_be_said_are_input_errors_at_their_line(tmp_path, line, words):
    with pytest.raises(InputError, match=words) as e:
        _imp(tmp_path, line + "\n        return (arg1_1,)\n")
    assert re.search(r"g\.py:3: ", str(e.value)), str(e.value)
