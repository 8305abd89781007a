"""Pipeline parallelism (issue 13): ranks with different ports, and point-to-point transfers
(isend / irecv / batch_p2p_ops) paired by communicator, peer, tag and issue order -- never by the
group's member set.  The received tensor IS the sent one (a clean data movement)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from entangle_py.check import spec as S
from entangle_py.check.checker import Checker
from entangle_py.errors import InputError
from entangle_py.frontend.capture import CaptureError, capture
from entangle_py.ir import graph as G

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "corpus" / "programs"
R = G.Ref
F32 = "float32"


def T(*shape, dtype=F32):
    return G.TensorMeta(tuple(shape), dtype)


def ph(name, meta=None):
    return G.Node(name, "placeholder", val=meta or T(3))


def op(name, target, *args, val=None):
    return G.Node(name, target, tuple(args), {}, val if val is not None else T(3))


def send(name, x, dst, tag=0, group="g"):
    return op(name, "_c10d_functional.isend.default", R(x), dst, tag, group, val=T(0))


def recv(name, dst_buf, src, tag=0, group="g", val=None):
    return [op(f"{name}_buf", "aten.empty.memory_format", [3], val=val),
            op(name, "_c10d_functional.irecv.default", R(f"{name}_buf"), src, tag, group, val=val)]


def rank(r, nodes, inputs, outputs, groups):
    return G.RankGraph(rank=r, nodes=nodes, inputs=[G.Port(n, n) for n in inputs],
                       outputs=[G.Port(k, v) for k, v in outputs.items()], groups=groups, symbols={})


def seq_sub():
    """G_s: out = x - y (order matters)."""
    return G.Bundle([rank(0, [ph("x"), ph("y"), op("out", "aten.sub.Tensor", R("x"), R("y"))],
                          ["x", "y"], {"out": "out"}, {})])


def _check(dist, expect="r2.out", **inputs):
    inputs = inputs or {"x": "r0.x", "y": "r1.y"}
    spec = S.parse_spec({"inputs": inputs, "expect": {"out": expect}})
    return Checker(seq_sub(), dist, spec).run()


def _three_ranks(first, second, swap=False, groups=None):
    """rank 0 sends x to rank 2, rank 1 sends y to rank 2; rank 2 receives from ``first`` then
    ``second`` and returns (a - b) for a from rank 0, b from rank 1 (or swapped)."""
    gs = groups or {"g": [0, 1, 2]}
    r0 = rank(0, [ph("x"), send("s", "x", 2)], ["x"], {"o0": "x"}, gs)
    r1 = rank(1, [ph("y"), send("s", "y", 2)], ["y"], {"o1": "y"}, gs)
    got = {first: "ra", second: "rb"}
    a, b = got[0], got[1]
    if swap:
        a, b = b, a
    r2 = rank(2, recv("ra", None, first) + recv("rb", None, second) +
              [op("out", "aten.sub.Tensor", R(a), R(b))], [], {"out": "out"}, gs)
    return G.Bundle([r0, r1, r2])


@pytest.mark.parametrize("first, second", [(0, 1), (1, 0)])
def test_receives_pair_with_their_peers_send_whatever_the_issue_order(first, second):
    res = _check(_three_ranks(first, second))
    assert res.status == "refines", res.failure
    assert res.relations["out"] == "r2.out"
    kinds = [k for _, k, _ in res.collectives]
    assert kinds == ["send/recv", "send/recv"]


@pytest.mark.parametrize("first, second", [(0, 1), (1, 0)])
def test_receives_from_swapped_peers_do_not_refine(first, second):
    assert _check(_three_ranks(first, second, swap=True)).status == "fails"


def _two_ranks(sends, recvs, out=("ra", "rb"), groups=None):
    """rank 0 sends (tensor, tag) pairs to rank 1 in order; rank 1 receives (name, tag) in order
    and returns out[0] - out[1]."""
    gs = groups or {"g": [0, 1]}
    r0 = rank(0, [ph("x"), ph("y")] + [send(f"s{i}", t, 1, tag) for i, (t, tag) in enumerate(sends)],
              ["x", "y"], {"o": "x"}, gs)
    nodes = []
    for name, tag, *grp in recvs:
        nodes += recv(name, None, 0, tag, *(grp or ["g"]))
    r1 = rank(1, nodes + [op("out", "aten.sub.Tensor", R(out[0]), R(out[1]))], [], {"out": "out"}, gs)
    return G.Bundle([r0, r1])


def test_transfers_on_one_channel_pair_in_issue_order():
    ok = _two_ranks([("x", 0), ("y", 0)], [("ra", 0), ("rb", 0)])
    assert _check(ok, expect="r1.out", x="r0.x", y="r0.y").status == "refines"
    swapped = _two_ranks([("y", 0), ("x", 0)], [("ra", 0), ("rb", 0)])     # the sender's order differs
    assert _check(swapped, expect="r1.out", x="r0.x", y="r0.y").status == "fails"


def test_tags_are_separate_channels():
    # x goes with tag 1, y with tag 0; rank 1 receives tag 0 first: that is y
    b = _two_ranks([("x", 1), ("y", 0)], [("rb", 0), ("ra", 1)])
    assert _check(b, expect="r1.out", x="r0.x", y="r0.y").status == "refines"
    b = _two_ranks([("x", 1), ("y", 0)], [("ra", 0), ("rb", 1)])
    assert _check(b, expect="r1.out", x="r0.x", y="r0.y").status == "fails"


@pytest.mark.parametrize("bundle, why", [
    (lambda: _two_ranks([("x", 0), ("y", 0)], [("ra", 0), ("rb", 5)]), "do not pair"),        # tag 5: no send
    (lambda: _two_ranks([("x", 0), ("y", 0)], [("ra", 0)], out=("ra", "ra")), "do not pair"),  # a send unreceived
    (lambda: _two_ranks([("x", 0), ("y", 0)], [("ra", 0), ("rb", 0, "h")],
                        groups={"g": [0, 1], "h": [0, 1]}), "do not pair"),     # another communicator
    (lambda: G.Bundle([rank(0, [ph("x"), ph("y"), send("s", "x", 1), send("t", "y", 1)], ["x", "y"], {"o": "x"},
                            {"g": [0, 1]}),
                       rank(1, recv("ra", None, 0, val=T(4)) + recv("rb", None, 0) +
                            [op("out", "aten.sub.Tensor", R("rb"), R("rb"))], [], {"out": "out"}, {"g": [0, 1]})]),
     "receives float32\\[4\\]"),
    (lambda: G.Bundle([rank(0, [ph("x"), ph("y"), send("s", "x", 1), send("t", "y", 1)], ["x", "y"], {"o": "x"},
                            {"g": [0, 1]}),
                       rank(1, recv("ra", None, 0, val=T(3, dtype="float64")) + recv("rb", None, 0) +
                            [op("out", "aten.sub.Tensor", R("rb"), R("rb"))], [], {"out": "out"}, {"g": [0, 1]})]),
     "receives float64"),
])
def test_transfers_that_cannot_pair_are_refused(bundle, why):
    with pytest.raises(InputError, match=why):
        _check(bundle(), expect="r1.out", x="r0.x", y="r0.y")


def test_a_peer_outside_the_group_is_refused():
    gs = {"g": [0, 1], "w": [0, 1, 2]}
    b = G.Bundle([rank(0, [ph("x"), ph("y"), send("s", "x", 2)], ["x", "y"], {"o": "x"}, gs),
                  rank(1, [ph("z")], ["z"], {"o": "z"}, gs),
                  rank(2, recv("ra", None, 0) + [op("out", "aten.sub.Tensor", R("ra"), R("ra"))], [], {"out": "out"},
                       gs)])
    with pytest.raises(InputError, match="not in its group"):
        _check(b, expect="r2.out", x="r0.x", y="r0.y")


# ----------------------------------------------------------------------------- capture

def test_pipeline_ranks_are_captured_with_their_own_ports():
    b = capture(str(PROGRAMS / "_pp.py:pp_p2p_correct"), 2)
    ins = [sorted(p.name for p in g.inputs) for g in b.ranks]
    assert ins == [["input:x", "param:fc1"], ["param:fc2"]]
    assert [[p.name for p in g.outputs] for g in b.ranks] == [["out"], ["out"]]
    targets = [[n.target for n in g.nodes if n.target.endswith("batch_p2p_ops.default")] for g in b.ranks]
    assert [len(t) for t in targets] == [3, 3]       # rank 0: 2 sends, 1 receive; rank 1: 2 receives, 1 send


def test_an_input_only_some_ranks_hold_needs_the_spec_to_name_the_rank(tmp_path):
    seq, dist = capture(str(PROGRAMS / "_pp.py:pp_p2p_correct"), 1), capture(str(PROGRAMS / "_pp.py:pp_p2p_correct"), 2)
    with pytest.raises(InputError, match='"param:fc2" = "r1.param:fc2"'):
        Checker(seq, dist, S.parse_spec({"inputs": {"input:x": "r0.input:x", "param:fc1": "r0.param:fc1"}})).run()
    with pytest.raises(InputError, match="rank 0 has no tensor"):
        Checker(seq, dist, S.parse_spec({"inputs": {"input:x": "r0.input:x", "param:fc1": "r0.param:fc1",
                                                    "param:fc2": "replicate"}})).run()


def _script(tmp_path, body):
    p = tmp_path / "pp_script.py"
    p.write_text(textwrap.dedent('''
        import torch, torch.nn as nn, torch.nn.functional as F
        import torch.distributed as dist

        class M(nn.Module):
            def __init__(self, rank, ws):
                super().__init__()
                self.rank, self.ws = rank, ws
                self.w = nn.Parameter(torch.empty(4, 4))

            def forward(self, x):
                h = F.linear(x, self.w)
                if self.ws == 1:
                    return h
        ''') + textwrap.indent(textwrap.dedent(body), " " * 8) + textwrap.dedent('''

        def build(rank, ws):
            return M(rank, ws), {"x": torch.randn(2, 4)}
        '''))
    return str(p)


def test_a_receive_whose_value_torch_drops_is_refused(tmp_path):
    # dist.irecv(buf).wait() traces to an irecv nobody reads while buf keeps its old contents
    script = _script(tmp_path, '''
        if self.rank == 0:
            req = dist.isend(h, 1)
            req.wait()
            return h
        buf = torch.empty(2, 4)
        req = dist.irecv(buf, 0)
        req.wait()
        return buf + h
    ''')
    with pytest.raises(CaptureError, match="drops the received value"):
        capture(script, 2)


def test_batched_receives_keep_their_value(tmp_path):
    script = _script(tmp_path, '''
        if self.rank == 0:
            for req in dist.batch_isend_irecv([dist.P2POp(dist.isend, h, 1)]):
                req.wait()
            return h
        buf = torch.empty(2, 4)
        for req in dist.batch_isend_irecv([dist.P2POp(dist.irecv, buf, 0)]):
            req.wait()
        return buf + h
    ''')
    b = capture(script, 2)
    g1 = b.ranks[1]
    add = next(n for n in g1.nodes if n.target == "aten.add.Tensor")
    # the add reads the received tensor (a getitem of batch_p2p_ops), not the empty buffer
    src = g1.node(add.args[0].name)
    assert src.target == "getitem" and g1.node(src.args[0].name).target.endswith("batch_p2p_ops.default")


def _rank1_batch_receive(tmp_path, before, after):
    return _script(tmp_path, f'''
        if self.rank == 0:
            for req in dist.batch_isend_irecv([dist.P2POp(dist.isend, h, 1)]):
                req.wait()
            return h
        buf = torch.zeros(2, 4)
        {before}
        for req in dist.batch_isend_irecv([dist.P2POp(dist.irecv, buf, 0)]):
            req.wait()
        return {after}
    ''')


def test_a_batched_receive_the_program_never_reads_is_kept_out_of_its_graph(tmp_path):
    # a copy of the buffer taken before the receive is what the program computes with (a bug of
    # its own, which the check reports): the graph reads the copy of the zeros
    b = capture(_rank1_batch_receive(tmp_path, "old = buf.clone()", "old + h"), 2)
    g1 = b.ranks[1]
    add = next(n for n in g1.nodes if n.target == "aten.add.Tensor")
    assert g1.node(add.args[0].name).target == "aten.clone.default"


def _rank1_output(bundle):
    """Rank 1's output run on the captured graphs (simulated transfers), and what eager torch
    computes from the same values: (got, received r = rank 0's h, rank 1's own h)."""
    import torch
    from entangle_py.oracle.interp import run_bundle
    torch.manual_seed(0)
    xs, ws = [torch.randn(2, 4) for _ in range(2)], [torch.randn(4, 4) for _ in range(2)]
    inputs = [{"input:x": x, "param:w": w} for x, w in zip(xs, ws)]
    env = run_bundle(bundle, inputs)
    out = env[1][bundle.ranks[1].outputs[0].node]
    return out, xs[0] @ ws[0].T, xs[1] @ ws[1].T


@pytest.mark.parametrize("before, after, eager", [
    ("v = buf.view(8)", "v.view(2, 4) + h", lambda r, h: r + h),    # the received value unread, a view read
    ("v = buf[:]", "buf + v", lambda r, h: 2 * r),                 # both read: the view shows what arrived
    ("v = buf[1:]", "v + h[1:]", lambda r, h: r[1:] + h[1:]),       # a view of part of the buffer
])
def test_a_view_taken_before_a_batched_receive_reads_what_arrived(tmp_path, before, after, eager):
    # torch's graph gives the view the zeros; capture re-takes it from the buffer holding the received tensor
    out, r, h = _rank1_output(capture(_rank1_batch_receive(tmp_path, before, after), 2))
    assert torch_allclose(out, eager(r, h))


def _rank1_receive_into_view(tmp_path, view, after):
    return _script(tmp_path, f'''
        if self.rank == 0:
            for req in dist.batch_isend_irecv([dist.P2POp(dist.isend, h{view}, 1)]):
                req.wait()
            return h
        buf = torch.zeros(2, 4)
        v = buf{view}
        for req in dist.batch_isend_irecv([dist.P2POp(dist.irecv, v, 0)]):
            req.wait()
        return {after}
    ''')


@pytest.mark.parametrize("view, after, eager", [
    ("[:]", "buf + h", lambda r, h: r + h),                        # the base of a view received into
    ("[1:]", "buf + h", lambda r, h: torch_cat(h[:1], r[1:] + h[1:])),   # ... of part of it: row 0 stays zero
    ("[1]", "buf * 2 + v", lambda r, h: torch_cat(r[1:], r[1:] * 3)),   # a select: row 1 received, v broadcast
    ("[:, 1:3]", "buf + v.sum()", lambda r, h: torch_pad_cols(r[:, 1:3]) + r[:, 1:3].sum()),
])
def test_the_base_of_a_view_received_into_holds_what_arrived(tmp_path, view, after, eager):
    out, r, h = _rank1_output(capture(_rank1_receive_into_view(tmp_path, view, after), 2))
    assert torch_allclose(out, eager(r, h))


def test_a_view_received_into_without_a_scatter_is_refused(tmp_path):
    # a reshape has no scatter to write the received tensor back into the buffer: refused, not guessed
    script = _rank1_receive_into_view(tmp_path, ".view(8)", "buf + h").replace(
        "dist.P2POp(dist.isend, h.view(8), 1)", "dist.P2POp(dist.isend, h.reshape(8), 1)")
    with pytest.raises(CaptureError, match="has no scatter"):
        capture(script, 2)


def torch_allclose(a, b):
    import torch
    return a.shape == b.shape and torch.allclose(a, b, atol=1e-6)


def torch_cat(*xs):
    import torch
    return torch.cat(xs)


def torch_pad_cols(x):
    import torch
    return torch.nn.functional.pad(x, (1, 1))


@pytest.mark.parametrize("src, status", [(0, "refines"), (1, "fails")])
def test_functional_sends_and_receives_pair_by_peer(tmp_path, src, status):
    # funcol.isend_inplace / irecv_inplace: rank 2 takes the activation of rank `src`; only
    # rank 0 computes the program's h (rank 1 sends its x unchanged)
    p = tmp_path / "pp_funcol.py"
    p.write_text(textwrap.dedent(f'''
        import torch, torch.nn as nn, torch.nn.functional as F
        import torch.distributed._functional_collectives as funcol

        class M(nn.Module):
            def __init__(self, rank, ws):
                super().__init__()
                self.rank, self.ws = rank, ws
                if ws == 1 or rank == 0:
                    self.w = nn.Parameter(torch.empty(4, 4))

            def forward(self, x):
                if self.ws == 1:
                    return F.linear(x, self.w)
                if self.rank == 0:
                    return funcol.isend_inplace(F.linear(x, self.w), 2)
                if self.rank == 1:
                    return funcol.isend_inplace(x * 1.0, 2)
                got = [funcol.irecv_inplace(torch.empty(2, 4), 0), funcol.irecv_inplace(torch.empty(2, 4), 1)]
                return got[{src}]      # a received tensor nobody reads is fine (not a dropped one)

        def build(rank, ws):
            return M(rank, ws), {{"x": torch.randn(2, 4)}}
        '''))
    seq, dist = capture(str(p), 1), capture(str(p), 3)
    spec = S.parse_spec({"inputs": {"input:x": "r0.input:x", "param:w": "r0.param:w"}, "expect": {"out": "r2.out"}})
    assert Checker(seq, dist, spec).run().status == status
