"""The numeric interpreter on hand-built bundles: ops, simulated collectives, errors, distribute."""
from __future__ import annotations

import pytest
import torch

from entangle_py.ir import graph as G
from entangle_py.oracle import interp
from entangle_py.oracle import graph_values
from entangle_py.oracle import placement
from entangle_py.check import spec as S
from entangle_py.ir.symbolic import make_symbol

R = G.Ref
F = "float64"


def T(*shape, dtype=F):
    return G.TensorMeta(tuple(shape), dtype)


def ph(name, meta):
    return G.Node(name, "placeholder", val=meta)


def op(name, target, *args, val=None, **kwargs):
    return G.Node(name, target, tuple(args), dict(kwargs), val)


def rank(r, nodes, inputs, outputs, groups=None, symbols=None):
    return G.RankGraph(rank=r, nodes=nodes, inputs=[G.Port(n, n) for n in inputs],
                       outputs=[G.Port(k, v) for k, v in outputs.items()],
                       groups=groups or {}, symbols=symbols or {})


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def rnd(*shape, g=None):
    return torch.randn(shape, generator=g, dtype=torch.float64)


# ----------------------------------------------------------------------------- plain ops

def test_mm_add_gelu_matches_torch():
    nodes = [ph("x", T(4, 8)), ph("w", T(8, 6)), ph("b", T(6)),
             op("mm", "aten.mm.default", R("x"), R("w"), val=T(4, 6)),
             op("add", "aten.add.Tensor", R("mm"), R("b"), val=T(4, 6)),
             op("gelu", "aten.gelu.default", R("add"), val=T(4, 6), approximate="tanh")]
    b = G.Bundle([rank(0, nodes, ["x", "w", "b"], {"out": "gelu"})])
    g = gen()
    x, w, bias = rnd(4, 8, g=g), rnd(8, 6, g=g), rnd(6, g=g)
    env = interp.run_bundle(b, [{"x": x, "w": w, "b": bias}])
    out = interp.output_values(b, env)[0]["out"]
    assert torch.allclose(out, torch.nn.functional.gelu(x @ w + bias, approximate="tanh"), rtol=1e-12, atol=1e-12)
    assert set(env[0]) == {"x", "w", "b", "mm", "add", "gelu"}


def test_getitem_tuple_and_device_constants_and_float_override():
    nodes = [ph("x", T(4, 6, dtype="float32")),
             op("split", "aten.split.Tensor", R("x"), 3, 1, val=(T(4, 3, dtype="float32"), T(4, 3, dtype="float32"))),
             op("a", "getitem", R("split"), 0, val=T(4, 3, dtype="float32")),
             op("c", "getitem", R("split"), 1, val=T(4, 3, dtype="float32")),
             op("z", "aten.zeros.default", [4, 3], dtype=G.TorchConst("dtype", "float32"),
                layout=G.TorchConst("layout", "strided"), device=G.TorchConst("device", "meta"), pin_memory=False,
                val=T(4, 3, dtype="float32")),
             op("s", "aten.add.Tensor", R("a"), R("z"), val=T(4, 3, dtype="float32")),
             op("o", "aten.mul.Tensor", R("s"), R("c"), val=T(4, 3, dtype="float32"))]
    b = G.Bundle([rank(0, nodes, ["x"], {"o": "o"})])
    x = rnd(4, 6, g=gen())
    env = interp.run_bundle(b, [{"x": x}], float_dtype=torch.float64)
    assert env[0]["z"].dtype == torch.float64 and env[0]["z"].device.type == "cpu"
    assert torch.equal(env[0]["o"], x[:, :3] * x[:, 3:])
    # without the override the float32 constant meets a float64 input: recorded dtype differs
    with pytest.raises(graph_values.ShapeMismatch, match="dtype"):
        interp.run_bundle(b, [{"x": x}])


def test_shape_check_names_the_node():
    nodes = [ph("x", T(4, 8)), op("t", "aten.t.default", R("x"), val=T(4, 8))]
    b = G.Bundle([rank(0, nodes, ["x"], {"t": "t"})])
    with pytest.raises(graph_values.ShapeMismatch, match="node 't'"):
        interp.run_bundle(b, [{"x": rnd(4, 8)}])
    env = interp.run_bundle(b, [{"x": rnd(4, 8)}], check_shapes=False)
    assert env[0]["t"].shape == (8, 4)


def test_symbolic_sizes_bound_from_input_shapes():
    s0 = make_symbol("s0")
    nodes = [ph("x", T(s0, 8)), ph("n", G.SymIntMeta(s0)),
             op("v", "aten.view.default", R("x"), [2 * s0, 4], val=T(2 * s0, 4)),
             op("f", "aten.full.default", [R("n"), 2], 1.5, dtype=G.TorchConst("dtype", "float64"),
                device=G.TorchConst("device", "cuda:0"), val=T(s0, 2))]
    b = G.Bundle([rank(0, nodes, ["x", "n"], {"v": "v", "f": "f"}, symbols={"s0": (2, None)})])
    x = rnd(5, 8)
    env = interp.run_bundle(b, [{"x": x}])
    assert env[0]["n"] == 5
    assert torch.equal(env[0]["v"], x.view(10, 4))
    assert env[0]["f"].shape == (5, 2)
    # a derived dimension binds its symbol too (2*s1 = 6 -> s1 = 3)
    s1 = make_symbol("s1")
    nodes2 = [ph("y", T(2 * s1, 3)), op("w", "aten.view.default", R("y"), [s1, 6], val=T(s1, 6))]
    b2 = G.Bundle([rank(0, nodes2, ["y"], {"w": "w"}, symbols={"s1": (2, None)})])
    assert interp.run_bundle(b2, [{"y": rnd(6, 3)}])[0]["w"].shape == (3, 6)
    with pytest.raises(graph_values.ShapeMismatch):
        interp.run_bundle(b2, [{"y": rnd(6, 4)}])


def test_missing_and_unknown_inputs():
    nodes = [ph("x", T(2)), op("n", "aten.neg.default", R("x"), val=T(2))]
    b = G.Bundle([rank(0, nodes, ["x"], {"n": "n"})])
    with pytest.raises(graph_values.InterpError, match="missing input"):
        interp.run_bundle(b, [{}])
    with pytest.raises(graph_values.InterpError, match="not inputs"):
        interp.run_bundle(b, [{"x": rnd(2), "y": rnd(2)}])


@pytest.mark.parametrize("target,msg", [
    ("aten.not_an_op_xyz.default", "unknown op 'aten.not_an_op_xyz.default'"),
    ("aten.mm.no_such_overload", "unknown op"),
    ("os.system.default", "not one of the allowed namespaces"),
    ("aten.__class__.default", "dunder"),
    ("builtins.eval", "not one of the allowed namespaces"),
    ("prims.__dict__", "dunder"),
])
def test_unknown_namespace_or_op_is_a_clear_error(target, msg):
    nodes = [ph("x", T(2)), op("bad", target, R("x"), val=T(2))]
    b = G.Bundle([rank(0, nodes, ["x"], {"bad": "bad"})])
    with pytest.raises(graph_values.UnsupportedOp, match=msg):
        interp.run_bundle(b, [{"x": rnd(2)}])


def test_torch_error_names_node():
    nodes = [ph("x", T(2, 3)), op("mm", "aten.mm.default", R("x"), R("x"), val=T(2, 3))]
    b = G.Bundle([rank(0, nodes, ["x"], {"mm": "mm"})])
    with pytest.raises(graph_values.InterpError, match=r"node 'mm' \(aten.mm.default\) failed"):
        interp.run_bundle(b, [{"x": rnd(2, 3)}])


def test_tg_log_and_auto_functionalized():
    nodes = [ph("x", T(3)), ph("y", T(3)),
             op("l", "tg.log_tensor.default", R("x"), "tag", val=T(3)),
             op("af", "higher_order.auto_functionalized", "aten.add_.Tensor", val=(T(3), T(3)),
                self=R("l"), other=R("y")),
             op("new_x", "getitem", R("af"), 1, val=T(3))]
    b = G.Bundle([rank(0, nodes, ["x", "y"], {"o": "new_x"})])
    x, y = rnd(3, g=gen(1)), rnd(3, g=gen(2))
    x0 = x.clone()
    env = interp.run_bundle(b, [{"x": x, "y": y}])
    assert torch.equal(env[0]["new_x"], x0 + y)
    assert torch.equal(x, x0)   # inputs are not mutated


# ----------------------------------------------------------------------------- MLP TP2

def _seq_mlp():
    nodes = [ph("input:x", T(4, 8)), ph("param:w1", T(8, 16)), ph("param:w2", T(16, 8)),
             op("mm1", "aten.mm.default", R("input:x"), R("param:w1"), val=T(4, 16)),
             op("act", "aten.gelu.default", R("mm1"), val=T(4, 16)),
             op("mm2", "aten.mm.default", R("act"), R("param:w2"), val=T(4, 8))]
    return G.Bundle([rank(0, nodes, ["input:x", "param:w1", "param:w2"], {"out": "mm2"})])


def _dist_mlp(world=2, with_allreduce=True):
    ranks = []
    h = 16 // world
    for r in range(world):
        nodes = [ph("input:x", T(4, 8)), ph("param:w1", T(8, h)), ph("param:w2", T(h, 8)),
                 op("mm1", "aten.mm.default", R("input:x"), R("param:w1"), val=T(4, h)),
                 op("act", "aten.gelu.default", R("mm1"), val=T(4, h)),
                 op("mm2", "aten.mm.default", R("act"), R("param:w2"), val=T(4, 8))]
        out = "mm2"
        if with_allreduce:
            nodes += [op("ar", "_c10d_functional.all_reduce.default", R("mm2"), "sum", f"tp_{r}", val=T(4, 8)),
                      op("wait", "_c10d_functional.wait_tensor.default", R("ar"), val=T(4, 8))]
            out = "wait"
        # group names differ per rank on purpose: matching is by member set
        ranks.append(rank(r, nodes, ["input:x", "param:w1", "param:w2"], {"out": out},
                          groups={f"tp_{r}": list(range(world))}))
    return G.Bundle(ranks)


MLP_SPEC = S.parse_spec({"inputs": {"input:x": "replicate", "param:w1": "shard(1)", "param:w2": "shard(0)"},
                         "expect": {"out": "replicate"}})


def _run_mlp(world, with_allreduce, seed=0):
    g = gen(seed)
    seq, dist = _seq_mlp(), _dist_mlp(world, with_allreduce)
    seq_in = placement.random_inputs(seq.rank(0), g)
    seq_out = interp.output_values(seq, interp.run_bundle(seq, [seq_in]))[0]["out"]
    dist_in = placement.distribute_inputs(seq_in, MLP_SPEC, dist, g)
    outs = interp.output_values(dist, interp.run_bundle(dist, dist_in))
    return seq_out, outs


@pytest.mark.parametrize("world", [2, 4])
def test_mlp_tensor_parallel_with_allreduce_reproduces_sequential(world):
    seq_out, outs = _run_mlp(world, True)
    for term in S.relation_terms(MLP_SPEC.expect["out"], "out", world):
        assert torch.allclose(placement.eval_term(term, outs), seq_out, rtol=1e-10, atol=1e-10)


def test_mlp_missing_allreduce_does_not():
    seq_out, outs = _run_mlp(2, False)
    for o in outs:
        assert (o["out"] - seq_out).abs().max() > 0.1
    # ... but the partial sum over ranks does equal it: the relation is partial, not replicate
    assert torch.allclose(outs[0]["out"] + outs[1]["out"], seq_out, rtol=1e-10, atol=1e-10)


def test_upto_stops_early_but_serves_collectives():
    dist = _dist_mlp(2, True)
    g = gen(3)
    ins = [placement.random_inputs(dist.rank(r), g) for r in range(2)]
    env = interp.run_bundle(dist, ins, upto={0: {"mm1"}})
    assert "mm1" in env[0] and "mm2" not in env[0]
    assert "mm1" not in env[1]
    env = interp.run_bundle(dist, ins, upto={0: {"wait"}})   # rank 1 must run on to the all_reduce
    assert "wait" in env[0] and "ar" in env[1] and "wait" not in env[1]
    assert torch.allclose(env[0]["wait"], env[1]["mm2"] + env[0]["mm2"])
    with pytest.raises(graph_values.InterpError, match="unknown node"):
        interp.run_bundle(dist, ins, upto={0: {"nope"}})


# ----------------------------------------------------------------------------- collective semantics

def _coll_bundle(world, make_node, in_shape, out_shape, groups=None, in_shapes=None):
    ranks = []
    for r in range(world):
        shp = in_shapes[r] if in_shapes else in_shape
        oshp = out_shape(r) if callable(out_shape) else out_shape
        nodes = [ph("x", T(*shp)), make_node(r), op("w", "_c10d_functional.wait_tensor.default", R("c"), val=T(*oshp))]
        ranks.append(rank(r, nodes, ["x"], {"y": "w"}, groups=groups(r) if groups else {"g": list(range(world))}))
    return G.Bundle(ranks)


def _run_coll(b, xs):
    envs = interp.run_bundle(b, [{"x": x} for x in xs])
    return [e["w"] for e in envs]


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("red", ["sum", "avg", "max", "min", "product"])
def test_all_reduce_ops(world, red):
    b = _coll_bundle(world, lambda r: op("c", "_c10d_functional.all_reduce.default", R("x"), red, "g", val=T(3, 2)),
                     (3, 2), (3, 2))
    g = gen(world)
    xs = [rnd(3, 2, g=g) for _ in range(world)]
    st = torch.stack(xs)
    want = {"sum": st.sum(0), "avg": st.mean(0), "max": st.amax(0), "min": st.amin(0), "product": st.prod(0)}[red]
    for y in _run_coll(b, xs):
        assert torch.allclose(y, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("world", [2, 4])
def test_all_gather_and_reduce_scatter(world):
    g = gen(10 + world)
    xs = [rnd(2, 3, g=g) for _ in range(world)]
    b = _coll_bundle(world, lambda r: op("c", "_c10d_functional.all_gather_into_tensor.default", R("x"), world, "g",
                                         val=T(2 * world, 3)), (2, 3), (2 * world, 3))
    for y in _run_coll(b, xs):
        assert torch.equal(y, torch.cat(xs, 0))
    xs = [rnd(2 * world, 3, g=g) for _ in range(world)]
    b = _coll_bundle(world, lambda r: op("c", "_c10d_functional.reduce_scatter_tensor.default", R("x"), "sum", world,
                                         "g", val=T(2, 3)), (2 * world, 3), (2, 3))
    total = sum(xs)
    for r, y in enumerate(_run_coll(b, xs)):
        assert torch.allclose(y, total[2 * r:2 * r + 2], rtol=1e-12, atol=1e-12)


def test_coalesced_variants():
    world = 2
    g = gen(5)
    xs = [rnd(2, 3, g=g) for _ in range(world)]
    ranks = []
    for r in range(world):
        nodes = [ph("x", T(2, 3)),
                 op("c", "_c10d_functional.all_gather_into_tensor_coalesced.default", [R("x"), R("x")], world, "g",
                    val=(T(4, 3), T(4, 3))),
                 op("c0", "getitem", R("c"), 1, val=T(4, 3)),
                 op("d", "_c10d_functional.reduce_scatter_tensor_coalesced.default", [R("c0")], "sum", world, "g",
                    val=(T(2, 3),)),
                 op("d0", "getitem", R("d"), 0, val=T(2, 3)),
                 op("e", "_c10d_functional.all_reduce_coalesced.default", [R("d0")], "max", "g", val=(T(2, 3),)),
                 op("e0", "getitem", R("e"), 0, val=T(2, 3))]
        ranks.append(rank(r, nodes, ["x"], {"y": "e0"}, groups={"g": [0, 1]}))
    envs = interp.run_bundle(G.Bundle(ranks), [{"x": x} for x in xs])
    full = torch.cat(xs, 0)
    assert torch.equal(envs[0]["c0"], full)
    assert torch.allclose(envs[1]["d0"], 2 * full[2:])
    assert torch.allclose(envs[0]["e0"], torch.maximum(2 * full[:2], 2 * full[2:]))


@pytest.mark.parametrize("world", [2, 4])
def test_all_to_all_single_uneven(world):
    # rank i sends (j + 1) rows to rank j: input i has sum(j+1) rows, output j has world*(j+1) rows
    rows_in = sum(j + 1 for j in range(world))
    b = _coll_bundle(world, lambda r: op("c", "_c10d_functional.all_to_all_single.default", R("x"),
                                         [r + 1] * world, [j + 1 for j in range(world)], "g", val=T(world * (r + 1), 2)),
                     (rows_in, 2), lambda r: (world * (r + 1), 2))
    g = gen(20)
    xs = [rnd(rows_in, 2, g=g) for _ in range(world)]
    ys = _run_coll(b, xs)
    for j in range(world):
        want = torch.cat([torch.split(xs[i], [k + 1 for k in range(world)])[j] for i in range(world)])
        assert torch.equal(ys[j], want)


@pytest.mark.parametrize("world", [2, 4])
def test_broadcast(world):
    b = _coll_bundle(world, lambda r: op("c", "_c10d_functional.broadcast.default", R("x"), 1, "g", val=T(3)), (3,), (3,))
    g = gen(30)
    xs = [rnd(3, g=g) for _ in range(world)]
    for y in _run_coll(b, xs):
        assert torch.equal(y, xs[1])


def test_shard_dim_alltoall():
    world = 2
    b = _coll_bundle(world, lambda r: op("c", "_dtensor.shard_dim_alltoall.default", R("x"), 0, 1, "g", val=T(4, 2)),
                     (2, 4), (4, 2))
    g = gen(31)
    xs = [rnd(2, 4, g=g) for _ in range(world)]
    ys = _run_coll(b, xs)
    full = torch.cat(xs, 0)
    assert torch.equal(ys[0], full[:, :2]) and torch.equal(ys[1], full[:, 2:])


def test_two_d_mesh_groups_with_per_rank_names():
    # 2x2 mesh, ranks (dp, tp): row (tp) groups {0,1},{2,3}; column (dp) groups {0,2},{1,3}.
    # Each rank knows its groups under its own names.
    def groups(r):
        row = [2 * (r // 2), 2 * (r // 2) + 1]
        col = [r % 2, r % 2 + 2]
        return {f"tp{r}": row, f"dp{r}": col}
    ranks = []
    for r in range(4):
        nodes = [ph("x", T(2, 3)),
                 op("a", "_c10d_functional.all_reduce.default", R("x"), "sum", f"tp{r}", val=T(2, 3)),
                 op("aw", "_c10d_functional.wait_tensor.default", R("a"), val=T(2, 3)),
                 op("c", "_c10d_functional.all_gather_into_tensor.default", R("aw"), 2, f"dp{r}", val=T(4, 3)),
                 op("w", "_c10d_functional.wait_tensor.default", R("c"), val=T(4, 3))]
        ranks.append(rank(r, nodes, ["x"], {"y": "w"}, groups=groups(r)))
    g = gen(40)
    xs = [rnd(2, 3, g=g) for _ in range(4)]
    ys = [e["w"] for e in interp.run_bundle(G.Bundle(ranks), [{"x": x} for x in xs])]
    want = torch.cat([xs[0] + xs[1], xs[2] + xs[3]], 0)
    for y in ys:
        assert torch.allclose(y, want, rtol=1e-12, atol=1e-12)


def test_point_to_point():
    ranks = []
    for r in range(2):
        peer = 1 - r
        nodes = [ph("x", T(3)),
                 # a send's own output is an empty tensor (torch's kernel and meta kernel)
                 op("s", "_c10d_functional.isend.default", R("x"), peer, 0, "g", val=T(0)),
                 op("buf", "aten.empty.memory_format", [3], dtype=G.TorchConst("dtype", F),
                    device=G.TorchConst("device", "meta"), val=T(3)),
                 op("c", "_c10d_functional.irecv.default", R("buf"), peer, 0, "g", val=T(3)),
                 op("w", "_c10d_functional.wait_tensor.default", R("c"), val=T(3))]
        ranks.append(rank(r, nodes, ["x"], {"y": "w"}, groups={"g": [0, 1]}))
    xs = [rnd(3, g=gen(50)), rnd(3, g=gen(51))]
    ys = [e["w"] for e in interp.run_bundle(G.Bundle(ranks), [{"x": x} for x in xs])]
    assert torch.equal(ys[0], xs[1]) and torch.equal(ys[1], xs[0])


# ----------------------------------------------------------------------------- mismatches

def _two_rank(make0, make1, groups=None):
    ranks = []
    for r, make in enumerate((make0, make1)):
        nodes = [ph("x", T(4, 2))] + make(r)
        ranks.append(rank(r, nodes, ["x"], {"y": nodes[-1].name}, groups=groups or {"g": [0, 1]}))
    return G.Bundle(ranks)


def _ar(name="c", src="x", red="sum", group="g", shape=(4, 2)):
    return op(name, "_c10d_functional.all_reduce.default", R(src), red, group, val=T(*shape))


def test_mismatched_collective_kinds():
    b = _two_rank(lambda r: [_ar("ar0")],
                  lambda r: [op("ag1", "_c10d_functional.all_gather_into_tensor.default", R("x"), 2, "g", val=T(8, 2))])
    with pytest.raises(graph_values.CollectiveMismatch) as e:
        interp.run_bundle(b, [{"x": rnd(4, 2)}, {"x": rnd(4, 2)}])
    msg = str(e.value)
    assert "rank 0" in msg and "rank 1" in msg and "'ar0'" in msg and "'ag1'" in msg
    assert "all_reduce" in msg and "all_gather_into_tensor" in msg


def test_mismatched_reduce_op_and_shape():
    b = _two_rank(lambda r: [_ar("a")], lambda r: [_ar("a", red="max")])
    with pytest.raises(graph_values.CollectiveMismatch, match="different parameters"):
        interp.run_bundle(b, [{"x": rnd(4, 2)}, {"x": rnd(4, 2)}])
    b = _two_rank(lambda r: [_ar("a")],
                  lambda r: [op("n", "aten.narrow.default", R("x"), 0, 0, 2, val=T(2, 2)), _ar("a", src="n", shape=(2, 2))])
    with pytest.raises(graph_values.CollectiveMismatch, match="different shapes"):
        interp.run_bundle(b, [{"x": rnd(4, 2)}, {"x": rnd(4, 2)}])


def test_rank_that_never_joins():
    b = _two_rank(lambda r: [_ar("lonely")], lambda r: [op("n", "aten.neg.default", R("x"), val=T(4, 2))])
    with pytest.raises(graph_values.CollectiveMismatch, match=r"rank 0 is at node 'lonely'.*rank 1 finished"):
        interp.run_bundle(b, [{"x": rnd(4, 2)}, {"x": rnd(4, 2)}])


def test_collective_order_mismatch_across_groups():
    # 3 ranks: rank 0 reduces over {0,1} then {0,2}; rank 1 over {0,1}; rank 2 over {0,2} ... but
    # rank 0 issues them in the opposite order from what rank 1 / 2 expect -> no deadlock here;
    # a real order deadlock: rank 0 does A then B, rank 1 does B then A on the same two groups.
    groups = {"a": [0, 1], "b": [0, 1, 2]}
    ranks = []
    orders = {0: ["a", "b"], 1: ["b", "a"], 2: ["b"]}
    for r in range(3):
        nodes = [ph("x", T(2))]
        prev = "x"
        for i, grp in enumerate(orders[r]):
            nodes.append(op(f"c{i}", "_c10d_functional.all_reduce.default", R(prev), "sum", grp, val=T(2)))
            prev = f"c{i}"
        ranks.append(rank(r, nodes, ["x"], {"y": prev}, groups=groups))
    with pytest.raises(graph_values.CollectiveMismatch, match="order mismatch"):
        interp.run_bundle(G.Bundle(ranks), [{"x": rnd(2)} for _ in range(3)])


def test_group_not_containing_rank_and_bad_group_size():
    b = _two_rank(lambda r: [_ar("a", group="h")], lambda r: [_ar("a", group="h")], groups={"h": [1]})
    with pytest.raises(graph_values.CollectiveMismatch, match="does not include rank 0"):
        interp.run_bundle(b, [{"x": rnd(4, 2)}, {"x": rnd(4, 2)}])
    mk = lambda r: [op("c", "_c10d_functional.all_gather_into_tensor.default", R("x"), 4, "g", val=T(16, 2))]
    with pytest.raises(graph_values.CollectiveMismatch, match="group_size=4"):
        interp.run_bundle(_two_rank(mk, mk), [{"x": rnd(4, 2)}, {"x": rnd(4, 2)}])
    b = _two_rank(lambda r: [_ar("a", group="zz")], lambda r: [_ar("a", group="zz")])
    with pytest.raises(graph_values.InterpError, match="'zz' is not in the rank's group table"):
        interp.run_bundle(b, [{"x": rnd(4, 2)}, {"x": rnd(4, 2)}])


# ----------------------------------------------------------------------------- distribute / terms

def _holder_bundle(shapes_per_rank, name="w", dtype=F):
    return G.Bundle([rank(r, [ph(name, T(*s, dtype=dtype))], [name], {}) for r, s in enumerate(shapes_per_rank)])


def test_distribute_shard_uneven_and_replicate():
    b = _holder_bundle([(3, 4), (5, 4)])
    v = rnd(8, 4, g=gen())
    parts = placement.distribute(v, S.Relation((S.Shard(0),)), "w", b)
    assert [p.shape[0] for p in parts] == [3, 5]
    assert torch.equal(torch.cat(parts, 0), v)
    reps = placement.distribute(v, S.Relation((S.Replicate(),)), "w", _holder_bundle([(8, 4)] * 3))
    assert all(torch.equal(p, v) for p in reps)
    with pytest.raises(graph_values.InterpError, match="do not tile"):
        placement.distribute(v, S.Relation((S.Shard(0),)), "w", _holder_bundle([(3, 4), (3, 4)]))


def test_distribute_partial_is_a_random_split():
    b = _holder_bundle([(4, 4)] * 4)
    v = rnd(4, 4, g=gen(1))
    parts = placement.distribute(v, S.Relation((S.Partial(),)), "w", b, generator=gen(2))
    assert torch.allclose(sum(parts), v, rtol=1e-12, atol=1e-12)
    assert not torch.allclose(parts[0], v / 4)
    parts = placement.distribute(v, S.Relation((S.Partial(reduce="max"),)), "w", b, generator=gen(3))
    assert torch.equal(torch.stack(parts).amax(0), v)


def test_distribute_two_d_mesh():
    mesh = S.Mesh((2, 2), ("dp", "tp"))
    b = _holder_bundle([(4, 3)] * 4)
    v = rnd(8, 3, g=gen(4))
    rel = S.parse_relation("shard(0)@dp, partial@tp", "t", mesh)
    parts = placement.distribute(v, rel, "w", b, mesh=mesh, generator=gen(5))
    (term,) = S.relation_terms(rel, "w", 4, mesh)
    assert torch.allclose(placement.eval_term(term, [{"w": p} for p in parts]), v, rtol=1e-12, atol=1e-12)
    # replicate over tp: both tp ranks hold the same tensor (DTensor semantics), partial over dp
    rel = S.parse_relation("partial@dp", "t", mesh)
    parts = placement.distribute(rnd(4, 3, g=gen(6)), rel, "w", b, mesh=mesh, generator=gen(7))
    assert torch.equal(parts[0], parts[1]) and torch.equal(parts[2], parts[3])
    # nested shard of one dim over both mesh dims: dp outer, tp inner
    b = _holder_bundle([(2, 3)] * 4)
    rel = S.parse_relation("shard(0)@dp, shard(0)@tp", "t", mesh)
    parts = placement.distribute(v, rel, "w", b, mesh=mesh)
    assert all(torch.equal(parts[r], v[2 * r:2 * r + 2]) for r in range(4))


def test_distribute_explicit_term_and_eval_term():
    b = _holder_bundle([(4, 2), (4, 3)])
    v = rnd(4, 5, g=gen(8))
    term = S.parse_term("concat(r0.w, r1.w, dim=1)")
    parts = placement.distribute(v, S.Relation(term=term), "w", b)
    assert parts[0].shape == (4, 2) and parts[1].shape == (4, 3)
    assert torch.equal(placement.eval_term(term, [{"w": p} for p in parts]), v)
    term = S.parse_term("sum(r0.w, transpose(r1.w, dim0=0, dim1=1))")
    b = _holder_bundle([(4, 5), (5, 4)])
    parts = placement.distribute(v, S.Relation(term=term), "w", b, generator=gen(9))
    assert torch.allclose(placement.eval_term(term, [{"w": p} for p in parts]), v, rtol=1e-12, atol=1e-12)
    with pytest.raises(graph_values.InterpError, match="not invertible"):
        placement.distribute(v, S.Relation(term=S.parse_term("reshape(concat(r0.w, r1.w, dim=0), shape=[4, 5])")), "w", b)
    sl = S.parse_term("slice(r0.w, dim=0, start=1, end=5)")
    parts = placement.distribute(v, S.Relation(term=sl), "w", _holder_bundle([(6, 5), (6, 5)]), generator=gen(10))
    assert parts[1] is None and torch.equal(parts[0][1:5], v)
    assert torch.equal(placement.eval_term(sl, [{"w": parts[0]}]), v)


def test_distribute_symbolic_shard_sizes():
    s0 = make_symbol("s0")
    b = G.Bundle([rank(r, [ph("w", T(s0, 3))], ["w"], {}, symbols={"s0": (1, None)}) for r in range(2)])
    v = rnd(6, 3)
    parts = placement.distribute(v, S.Relation((S.Shard(0),)), "w", b)
    assert [p.shape[0] for p in parts] == [3, 3]


def test_random_inputs():
    s0 = make_symbol("s0")
    nodes = [ph("ids", T(s0, 4, dtype="int64")), ph("x", T(s0, 2, dtype="float32")), ph("m", T(3, dtype="bool")),
             ph("n", G.SymIntMeta(s0))]
    g = rank(0, nodes, ["ids", "x", "m", "n"], {}, symbols={"s0": (2, None)})
    ins = placement.random_inputs(g, gen(0), sizes={"s0": 5}, int_ranges={"ids": (0, 100)}, float_dtype=torch.float64)
    assert ins["ids"].shape == (5, 4) and ins["ids"].dtype == torch.int64
    assert 0 <= int(ins["ids"].min()) and int(ins["ids"].max()) < 100 and int(ins["ids"].max()) > 1
    assert ins["x"].dtype == torch.float64 and ins["m"].dtype == torch.bool and ins["n"] == 5
    with pytest.raises(graph_values.InterpError, match="unbound symbol"):
        placement.random_inputs(g, gen(0))
    assert placement.random_inputs(g, gen(0), default_size=3)["x"].shape == (3, 2)


def test_kwargs_and_legacy_collectives():
    world = 2
    g = gen(60)
    xs = [rnd(2, 3, g=g) for _ in range(world)]
    b = _coll_bundle(world, lambda r: op("c", "_c10d_functional.all_reduce.default", R("x"), reduce_op="sum",
                                         group_name="g", val=T(2, 3)), (2, 3), (2, 3))
    for y in _run_coll(b, xs):
        assert torch.allclose(y, xs[0] + xs[1])
    b = _coll_bundle(world, lambda r: op("c", "c10d_functional.all_gather_into_tensor.default", R("x"), "", [0, 1], 2,
                                         val=T(4, 3)), (2, 3), (4, 3), groups=lambda r: {})
    for y in _run_coll(b, xs):
        assert torch.equal(y, torch.cat(xs))


def test_collectives_pair_per_communicator_not_per_member_set():
    """Two groups with the same members are two communicators: rank 1 issuing its collectives in
    the other order still pairs x with x and y with y (as c10d does; on gloo in
    tests/corpus/soundness/c5_same_members_issue_order_correct.py)."""
    groups = {"g1": [0, 1], "g2": [0, 1]}
    ranks = []
    for r, order in ((0, ("x", "g1", "y", "g2")), (1, ("y", "g2", "x", "g1"))):
        nodes = [ph("x", T(2)), ph("y", T(2))]
        nodes.append(op(f"a{order[0]}", "_c10d_functional.all_reduce.default", R(order[0]), "sum", order[1], val=T(2)))
        nodes.append(op(f"a{order[2]}", "_c10d_functional.all_reduce.default", R(order[2]), "sum", order[3], val=T(2)))
        ranks.append(rank(r, nodes, ["x", "y"], {"ox": "ax", "oy": "ay"}, groups=groups))
    ins = [{"x": rnd(2), "y": rnd(2)} for _ in range(2)]
    outs = interp.output_values(G.Bundle(ranks), interp.run_bundle(G.Bundle(ranks), ins))
    for o in outs:
        assert torch.allclose(o["ox"], ins[0]["x"] + ins[1]["x"]) and torch.allclose(o["oy"], ins[0]["y"] + ins[1]["y"])
