"""Capture of torch.nn.parallel.DistributedDataParallel (frontend/ddp.py): DDP's step as graph ops
(broadcast from the group's rank 0 where the forward reads a parameter, gradient all-reduced and
divided by the group's size), transparent port names, and the refusals (exit 2, with the line)."""
from __future__ import annotations

import textwrap

import pytest

from entangle_py import cli
from entangle_py.frontend.capture import CaptureError, capture
from entangle_py.ir import graph
from entangle_py.ir import bundle_meta

SCRIPT = """\
import torch, torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 3)
        self.unused = nn.Linear(2, 2)
    def forward(self, x):
        return self.fc(x).pow(2).mean()

class Step(nn.Module):
    def __init__(self, ws):
        super().__init__()
        self.body = {wrap}
    def forward(self, x):
        return {call}

def build(rank, world_size):
    {pre}
    return Step(world_size), {{"x": torch.randn(8 // world_size, 5)}}
"""


def _script(tmp_path, wrap="DDP(Net(), find_unused_parameters=True) if ws > 1 else Net()",
            call="self.body(x)", pre="pass", name="ddp_step.py"):
    p = tmp_path / name
    p.write_text(SCRIPT.format(wrap=wrap, call=call, pre=pre))
    return p


def _line(path, text):
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


def _targets(g):
    return [n.target for n in g.nodes if not n.is_placeholder]


def test_ddp_ports_are_the_wrapped_modules_and_match_the_sequential_program(tmp_path):
    s = _script(tmp_path)
    seq, dist = capture(s, 1, joint=True).rank(0), capture(s, 2, joint=True)
    for g in dist.ranks:
        # the unused layer is an input of DDP's step only (its broadcast reads it)
        assert {p.name for p in g.inputs} - {p.name for p in seq.inputs} == {"param:body.unused.weight",
                                                                              "param:body.unused.bias"}
        assert {p.name for p in seq.inputs} <= {p.name for p in g.inputs}
        assert sorted(p.name for p in g.outputs) == sorted(p.name for p in seq.outputs)
    assert {"param:body.fc.weight", "param:body.fc.bias"} <= {p.name for p in seq.inputs}
    assert {"grad:body.fc.weight", "grad:body.fc.bias"} <= {p.name for p in seq.outputs}
    g = dist.rank(1)
    t = _targets(g)
    # every parameter DDP manages (the unused one too) is read as rank 0's; each gradient averaged
    assert t.count("_c10d_functional.broadcast.default") == 4
    # (find_unused_parameters=True: the unused layer's zeros are reduced too, as DDP's reducer does;
    # unused on every rank, its gradient stays None -- no output)
    assert t.count("_c10d_functional.all_reduce.default") == 4
    for grad in ("grad:body.fc.weight", "grad:body.fc.bias"):
        n = g.output_node(grad)
        assert n.target == "aten.div.Tensor" and n.args[1] == 2
        assert g.node(g.node(n.args[0].name).args[0].name).target == "_c10d_functional.all_reduce.default"
    assert "_c10d_functional.all_reduce.default" not in _targets(seq)


def test_ddp_at_the_top_is_transparent_too(tmp_path):
    p = tmp_path / "top.py"
    p.write_text(textwrap.dedent("""\
        import torch, torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel
        def build(rank, world_size):
            net = nn.Linear(5, 3)
            net = DistributedDataParallel(net) if world_size > 1 else net
            return net, {"input": torch.randn(2, 5)}
        """))
    g = capture(p, 2).rank(0)
    assert {q.name for q in g.inputs} == {"param:weight", "param:bias", "input:input"}


def test_a_parameter_without_a_gradient_on_one_rank_gets_ddps_reduction_of_zeros_there(tmp_path):
    # find_unused_parameters=True: DDP's reducer all-reduces zeros for a parameter the rank has no
    # gradient of (here rank 1 reads fc2's weight detached), so its gradient is the group's mean
    # over the ranks that have one, on every rank; the reductions are issued in one order
    p = tmp_path / "unused_one_rank.py"
    p.write_text(textwrap.dedent("""\
        import torch, torch.nn as nn, torch.nn.functional as F
        from torch.nn.parallel import DistributedDataParallel as DDP
        class Net(nn.Module):
            def __init__(self, rank):
                super().__init__()
                self.rank, self.fc, self.fc2 = rank, nn.Linear(4, 3), nn.Linear(3, 1)
            def forward(self, x):
                w = self.fc2.weight.detach() if self.rank == 1 else self.fc2.weight
                return F.linear(F.relu(self.fc(x)), w, self.fc2.bias).pow(2).mean()
        def build(rank, world_size):
            net = Net(rank)
            return (DDP(net, find_unused_parameters=True) if world_size > 1 else net), {"x": torch.randn(2, 4)}
        """))
    b = capture(p, 2, joint=True)
    reduced = []
    for g in b.ranks:
        assert sorted(q.name for q in g.outputs) == ["grad:fc.bias", "grad:fc.weight", "grad:fc2.bias",
                                                     "grad:fc2.weight", "out"]
        reduced.append([tuple(n.val.shape) for n in g.nodes if n.target == "_c10d_functional.all_reduce.default"])
        n = g.output_node("grad:fc2.weight")
        assert n.target == "aten.div.Tensor" and n.args[1] == 2
        src = g.node(g.node(g.node(n.args[0].name).args[0].name).args[0].name)
        assert (src.target == "aten.zeros.default") == (g.rank == 1)
    assert reduced[0] == reduced[1] == [(1,), (1, 3), (3,), (3, 4)]      # DDP's order: the parameters' reversed


def test_ddp_on_a_process_group_reduces_over_it(tmp_path):
    s = _script(tmp_path, pre="g = [dist.new_group([0, 2]), dist.new_group([1, 3])][rank % 2]",
                wrap="DDP(Net(), process_group=GROUP, find_unused_parameters=True) if ws > 1 else Net()")
    s.write_text(s.read_text().replace("Step(world_size)", "Step(world_size, g if world_size > 1 else None)")
                 .replace("def __init__(self, ws):", "def __init__(self, ws, GROUP=None):"))
    b = capture(s, 4, joint=True)
    for r in range(4):
        g = b.rank(r)
        groups = {tuple(g.groups[n.args[2]]) for n in g.nodes if n.target == "_c10d_functional.all_reduce.default"}
        assert groups == {(0, 2) if r % 2 == 0 else (1, 3)}


def test_ddp_buffers_are_rank_zeros_unless_broadcast_buffers_is_off(tmp_path):
    def script(arg):
        p = tmp_path / f"buf{len(arg)}.py"
        p.write_text(textwrap.dedent(f"""\
            import torch, torch.nn as nn
            from torch.nn.parallel import DistributedDataParallel as DDP
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(5, 3)
                    self.register_buffer("scale", torch.ones(3))
                def forward(self, x):
                    return self.fc(x) * self.scale
            def build(rank, world_size):
                return (DDP(Net(){arg}) if world_size > 1 else Net()), {{"x": torch.randn(2, 5)}}
            """))
        return p
    g = capture(script(""), 2).rank(0)
    assert "mutated:buffer:scale" in {p.name for p in g.outputs}
    assert _targets(g).count("_c10d_functional.broadcast.default") == 3
    g = capture(script(", broadcast_buffers=False"), 2).rank(0)
    assert "mutated:buffer:scale" not in {p.name for p in g.outputs}


def test_ddp_class_is_restored_after_capture(tmp_path):
    from torch.nn.parallel import DistributedDataParallel
    before = DistributedDataParallel.__init__
    capture(_script(tmp_path), 2)
    assert DistributedDataParallel.__init__ is before


@pytest.mark.parametrize("change, words, at", [
    (dict(pre="pass", call="self.body(x)",
          wrap="DDP(Net(), find_unused_parameters=True, mixed_precision=object()) if ws > 1 else Net()"),
     "mixed_precision", "self.body = "),
    (dict(wrap="DDP(Net(), skip_all_reduce_unused_params=True) if ws > 1 else Net()"),
     "skip_all_reduce_unused_params", "self.body = "),
    (dict(wrap="DDP(Net())", pre="pass"), "world size 1", "self.body = "),
    (dict(wrap="DDP(Net(), find_unused_parameters=True) if ws > 1 else Net()",
          call="self.body(x) + getattr(self.body, 'module', self.body).fc(x).sum()"),
     "outside the wrapper's forward", None),
    (dict(wrap="DDP(Net(), static_graph=True) if ws > 1 else Net()"), "get no gradient", "self.body = "),
])
def test_ddp_refusals_name_the_construct_and_the_line(tmp_path, change, words, at):
    s = _script(tmp_path, **change)
    with pytest.raises(CaptureError) as e:
        capture(s, 1 if words == "world size 1" else 2, joint=True)
    msg = str(e.value)
    assert words in msg and "\n" not in msg
    if at is not None:
        assert f"ddp_step.py:{_line(s, at)}" in msg


def test_ddp_comm_hook_is_refused_at_its_line(tmp_path, capsys):
    s = _script(tmp_path)
    s.write_text(s.read_text().replace(
        "        self.body = ", "        self.body = b = ").replace(
        "    def forward(self, x):\n        return self.body(x)",
        "        if ws > 1:\n            b.register_comm_hook(None, lambda state, bucket: None)\n"
        "    def forward(self, x):\n        return self.body(x)"))
    rc = cli.main(["capture", str(s), "--world-size", "2", "-o", str(tmp_path / "x.pt")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "register_comm_hook" in err and f"ddp_step.py:{_line(s, 'register_comm_hook')}" in err


def test_a_ddp_subclass_is_refused(tmp_path):
    s = _script(tmp_path, wrap="type('MyDDP', (DDP,), {})(Net()) if ws > 1 else Net()")
    with pytest.raises(CaptureError, match="subclass of DistributedDataParallel"):
        capture(s, 2)


def test_a_ddp_parameter_held_outside_the_wrapper_is_refused(tmp_path):
    s = _script(tmp_path)
    s.write_text(s.read_text().replace("    def forward(self, x):\n        return self.body(x)",
                                       "        self.tied = self.body.module.fc if ws > 1 else self.body.fc\n"
                                       "    def forward(self, x):\n        return self.body(x) + self.tied(x).sum()"))
    with pytest.raises(CaptureError, match="used outside the wrapper"):
        capture(s, 2, joint=True)


_AFTER = "    def forward(self, x):\n        return self.body(x)"


def _after_wrap(tmp_path, wrap, stmt):
    """The script with ``stmt`` run on the wrapped module (m) after DDP was built."""
    s = _script(tmp_path, wrap=wrap)
    s.write_text(s.read_text().replace(
        _AFTER, f"        m = getattr(self.body, 'module', self.body)\n        {stmt}\n" + _AFTER))
    return s


def test_a_parameter_attached_after_ddp_was_built_is_neither_broadcast_nor_averaged(tmp_path):
    # DDP's init sync and reducer know the parameters the module had at construction: a layer put in
    # place later is each rank's own, its gradient never averaged (adversary pass 6: it was averaged)
    s = _after_wrap(tmp_path, "DDP(Net(), find_unused_parameters=True) if ws > 1 else Net()", "m.fc = nn.Linear(5, 3)")
    with pytest.warns(UserWarning, match="fc.weight, fc.bias were not in the module when it was built"):
        b = capture(s, 2, joint=True)
    g = b.rank(0)
    assert _targets(g).count("_c10d_functional.broadcast.default") == 2      # the unused layer's, built with DDP
    # fc's gradient is the rank's own: the only reductions are the unused layer's zeros (DDP's
    # reducer with find_unused_parameters=True), its gradient left None
    reduced = [g.node(n.args[0].name).target for n in g.nodes if n.target == "_c10d_functional.all_reduce.default"]
    assert reduced == ["aten.zeros.default"] * 2
    assert "grad:body.unused.weight" not in {p.name for p in g.outputs}
    (note,) = bundle_meta.capture_notes(b)        # at the DDP's line, for the report
    assert note["line"] == _line(s, "self.body = ") and "neither broadcast nor averaged" in note["text"]


@pytest.mark.parametrize("stmt, synced", [("m.fc.bias.requires_grad_(False)", 4),
                                           ("m.fc.weight = nn.Parameter(m.fc.weight.detach())", 3)])
def test_a_ddp_parameter_frozen_or_replaced_after_ddp_was_built_stalls_its_reducer(tmp_path, stmt, synced):
    # its reducer waits for that gradient and never finishes the backward: no gradient of the DDP is
    # averaged (each rank keeps its own, measured on gloo with one bucket and with several); the
    # init sync still broadcast what DDP was built with (a replacing parameter is the rank's own)
    s = _after_wrap(tmp_path, "DDP(Net()) if ws > 1 else Net()", stmt)
    with pytest.warns(UserWarning, match="never finishes, so no gradient of this DDP is averaged"):
        g = capture(s, 2, joint=True).rank(1)
    assert _targets(g).count("_c10d_functional.all_reduce.default") == 0
    assert _targets(g).count("_c10d_functional.broadcast.default") == synced


@pytest.mark.parametrize("opt", ["static_graph=True", "gradient_as_bucket_view=True"])
def test_a_stalled_reducer_with_in_place_or_static_buckets_is_refused(tmp_path, opt):
    # on gloo: static_graph's first step averages the rest (as find_unused_parameters would);
    # gradient_as_bucket_view leaves a ready bucket half reduced in the gradients
    s = _after_wrap(tmp_path, f"DDP(Net(), {opt}) if ws > 1 else Net()", "m.fc.bias.requires_grad_(False)")
    with pytest.raises(CaptureError, match=f"with {opt.split('=')[0]}=True what the stalled reducer leaves"):
        capture(s, 2, joint=True)


def test_a_ddp_parameter_without_gradient_stalls_its_reducer(tmp_path):
    # Net's unused layer, no find_unused_parameters: the reducer waits for its gradient and never
    # finishes (measured on gloo: every gradient is the rank's own); the traced averaging is undone
    s = _script(tmp_path, wrap="DDP(Net()) if ws > 1 else Net()")
    with pytest.warns(UserWarning, match=r"unused\.weight.*get no gradient in the step.*never finishes"):
        b = capture(s, 2, joint=True)
    for r in (0, 1):
        g = b.rank(r)
        assert _targets(g).count("_c10d_functional.all_reduce.default") == 0
        assert _targets(g).count("_c10d_functional.broadcast.default") == 4       # the init sync stays
    # the bundle keeps it as a note at the DDP's line, for the check's report
    (note,) = bundle_meta.capture_notes(b)
    assert note["ranks"] == [0, 1] and "never finishes" in note["text"] and "unused.weight" in note["text"]
    assert note["file"].endswith("ddp_step.py") and note["line"] == _line(s, "self.body = ")
    # with find_unused_parameters=True the same program averages fc's gradient (and reduces the
    # unused layer's zeros)
    g = capture(_script(tmp_path), 2, joint=True).rank(0)
    assert _targets(g).count("_c10d_functional.all_reduce.default") == 4
    assert {"grad:body.fc.weight", "grad:body.fc.bias"} <= {p.name for p in g.outputs}


def test_capture_notes_of_a_stranger_s_file_are_read_as_data_only():
    # a graph file is untrusted: malformed notes are dropped, never evaluated
    import json
    b = graph.Bundle(ranks=[], kind="forward", meta={bundle_meta.CAPTURE_NOTES: json.dumps([
        {"ranks": [0], "text": "ok", "file": "a.py", "line": 3, "code": "x"},
        {"ranks": "0", "text": "bad ranks", "file": "a.py", "line": 3},
        {"ranks": [0], "text": 5}, "not a dict"])})
    assert bundle_meta.capture_notes(b) == [{"ranks": [0], "text": "ok", "file": "a.py", "line": 3, "code": "x"}]
    assert bundle_meta.capture_notes(graph.Bundle(ranks=[], kind="forward", meta={bundle_meta.CAPTURE_NOTES: "{"})) == []


def test_ddp_over_a_group_of_one_rank_is_noted(tmp_path):
    s = _script(tmp_path, wrap="DDP(Net(), find_unused_parameters=True, process_group=dist.new_group([rank])) "
                               "if ws > 1 else Net()", pre="global rank\n    rank = rank")
    s.write_text(s.read_text().replace("def build(rank, world_size):\n    global rank\n    rank = rank",
                                       "def build(r, world_size):\n    global rank\n    rank = r"))
    with pytest.warns(UserWarning, match="over a group of one rank"):
        b = capture(s, 2, joint=True)
    (note,) = bundle_meta.capture_notes(b)
    assert note["ranks"] == [0, 1] and note["line"] == _line(s, "self.body = ")
    # over its own rank only (fc's gradient and the unused layer's zeros; that layer keeps no gradient)
    g = b.rank(0)
    assert _targets(g).count("_c10d_functional.all_reduce.default") == 4
    assert {tuple(g.groups[n.args[2]]) for n in g.nodes if n.target == "_c10d_functional.all_reduce.default"} == {(0,)}
    assert "grad:body.unused.weight" not in {p.name for p in g.outputs}
    # over every rank: no note
    assert bundle_meta.capture_notes(capture(_script(tmp_path, name="full.py"), 2, joint=True)) == []
