"""Capture robustness: tensors created in forward without a device, backward formulas that exist
on CPU but not on ``meta`` (a dropped gradient is an error), torch's own words for an exception the
program raises (a collective given a bad group), per-rank progress."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from entangle_py import cli
from entangle_py.frontend.capture import CaptureError, capture

ROOT = Path(__file__).resolve().parent.parent
CAUSAL = ROOT / "tests" / "corpus" / "capture" / "causal_attention.py"
CROSS_ENTROPY = ROOT / "tests" / "corpus" / "capture" / "cross_entropy.py"


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def _outs(g):
    return sorted(p.name for p in g.outputs)


def _targets(g):
    return [n.target for n in g.nodes if not n.is_placeholder]


# ----------------------------------------------------------------------------- device-less tensors

@pytest.mark.parametrize("world_size", [1, 2])
@pytest.mark.parametrize("joint", [False, True])
def test_causal_mask_created_in_forward(world_size, joint):
    b = capture(CAUSAL, world_size, joint=joint)
    assert b.world_size == world_size
    for g in b.ranks:
        t = _targets(g)
        assert "aten.ones.default" in t and "aten.tril.default" in t and "aten.eye.default" in t
        assert t.count("_c10d_functional.all_reduce.default") == (0 if world_size == 1 else 1 + joint)
        if joint:
            assert _outs(g) == ["grad:input:x", "grad:o.weight", "grad:qkv.weight", "out"]
            assert g.input_node("param:qkv.weight").val.shape == (24 // world_size, 8)
        else:
            assert _outs(g) == ["out"]


# ----------------------------------------------------------------------------- backward never dropped

def test_cross_entropy_joint_has_every_gradient():
    for world_size in (1, 2):
        b = capture(CROSS_ENTROPY, world_size, joint=True)
        for g in b.ranks:
            assert _outs(g) == ["grad:fc1.bias", "grad:fc1.weight", "grad:fc2.bias", "grad:fc2.weight", "out"]
            t = _targets(g)
            assert "aten.nll_loss_backward.default" in t and "aten._log_softmax_backward_data.default" in t
            assert any(x.startswith("aten.var") for x in t)
            for name in ("fc1.weight", "fc2.weight"):
                assert g.output_node("grad:" + name).val.shape == g.input_node("param:" + name).val.shape


# Each rank is captured in a process of its own: capture's internals are patched there, by the
# script itself at import (the process is fresh, so the patch dies with it).
TRACE_ON_META = """\
import contextlib
import entangle_py.frontend.capture as _capture
_capture._to_fake_cpu = lambda model, inputs: (contextlib.nullcontext(), inputs)
"""
NO_KERNEL_WARNING = """\
import re
_capture._NO_AUTOGRAD_KERNEL = re.compile(r"(?!)")
"""


def _patched(tmp_path, source: Path, *patches, name=None, replace=None) -> Path:
    """``source`` with ``patches`` prepended: the old behaviour, tracing on meta (where nll_loss
    loses its backward), optionally without the warning torch gives for it."""
    text = source.read_text()
    if replace:
        assert replace[0] in text
        text = text.replace(*replace)
    script = tmp_path / (name or source.name)
    script.write_text("".join(patches) + text)
    return script


def test_missing_autograd_kernel_warning_is_an_error(tmp_path, capsys):
    script = _patched(tmp_path, CROSS_ENTROPY, TRACE_ON_META)
    with pytest.raises(CaptureError, match=r"rank 0: the backward of aten::nll_loss is missing"):
        capture(script, 1, joint=True)
    rc = cli.main(["capture", str(script), "--joint", "-o", str(tmp_path / "x.pt")])
    err = capsys.readouterr().err
    assert rc == 2 and "aten::nll_loss" in err and "UserWarning" not in err
    assert not (tmp_path / "x.pt").exists()
    capture(script, 1, joint=False)      # forward only: nothing is missing


def test_dropped_gradient_is_an_error_even_without_a_warning(tmp_path):
    script = _patched(tmp_path, CROSS_ENTROPY, TRACE_ON_META, NO_KERNEL_WARNING)
    with pytest.warns(UserWarning):
        with pytest.raises(CaptureError) as e:
            capture(script, 1, joint=True)
    msg = str(e.value)
    assert "fc2.weight feeds the output through" in msg and "nll_loss_forward" in msg
    assert "grad:fc2.weight is missing" in msg and "\n" not in msg


NO_GRAD = """\
import torch, torch.nn as nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.gate = nn.Linear(8, 8)
        self.shift = nn.Parameter(torch.randn(8))
        self.scale = nn.Parameter(torch.randn(8))
    def forward(self, x):
        with torch.no_grad():
            s = self.gate(x).sigmoid()
        # shift and scale are read for their shape only: no gradient flows to them
        return self.fc(x) * s + self.gate.bias.detach() + torch.zeros_like(self.shift) + self.scale.new_ones(8)
def build(rank, world_size):
    return M(), {"x": torch.randn(4, 8)}
"""


def test_parameters_used_without_gradient_are_not_reported(tmp_path):
    script = tmp_path / "no_grad_gate.py"
    script.write_text(NO_GRAD)
    g = capture(script, 1, joint=True).rank(0)
    assert _outs(g) == ["grad:fc.bias", "grad:fc.weight", "out"]


def test_a_shape_read_does_not_hide_a_dropped_gradient(tmp_path):
    """A parameter that also feeds the output through zeros_like (its shape only) but loses the
    gradient of its value path (nll_loss's backward, dropped on meta) is still reported."""
    script = _patched(tmp_path, CROSS_ENTROPY, TRACE_ON_META, NO_KERNEL_WARNING, name="shape_and_values.py",
                      replace=("return F.cross_entropy(",
                               "return torch.zeros_like(self.fc2.weight).sum() + F.cross_entropy("))
    with pytest.warns(UserWarning):
        with pytest.raises(CaptureError) as e:
            capture(script, 1, joint=True)
    assert "grad:fc2.weight is missing" in str(e.value) and "nll_loss_forward" in str(e.value)


# ----------------------------------------------------------------------------- torch's own words

BAD_GROUP = """\
import torch, torch.nn as nn
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
class M(nn.Module):
    def __init__(self, group):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.group = group
    def forward(self, x):
        return funcol.all_reduce(self.fc(x), "sum", {group})
def build(rank, world_size):
    return M(dist.new_group([1])), {{"x": torch.randn(3, 4)}}
"""


@pytest.mark.parametrize("group, words", [
    ("self.group", r"ValueError: Unsupported group type: <class 'int'>, -100 \[-100 is GroupMember.NON_GROUP_MEMBER"),
    ("123", r"ValueError: Unsupported group type: <class 'int'>, 123 at "),
    ("[0, 5]", r"ValueError \(torch gives no message\) raised by _resolve_group_name_by_ranks_and_tag "
               r"\(torch/distributed/distributed_c10d.py:\d+\)"),
    ('"not-a-group"', r"RuntimeError: Could not resolve the process group registered under the name not-a-group"),
])
def test_bad_group_error_is_torchs(tmp_path, group, words):
    script = tmp_path / "bad_group.py"
    script.write_text(BAD_GROUP.format(group=group))
    with pytest.raises(CaptureError) as e:
        capture(script, 2)
    msg = str(e.value)
    assert re.search(words, msg), msg
    assert msg.startswith("rank 0: ") and "graph break" not in msg and "Observed exception" not in msg
    assert "bad_group.py:10" in msg and "\n" not in msg


# ----------------------------------------------------------------------------- progress

def test_progress_with_verbose(tmp_path, capsys):
    out = tmp_path / "mlp.pt"
    assert cli.main(["capture", "examples/mlp.py", "--world-size", "2", "-v", "-o", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(re.fullmatch(rf"rank {r}/2 captured in \d+\.\d s", e) for r, e in zip((0, 1), err))
    assert cli.main(["capture", "examples/mlp.py", "--world-size", "2", "-o", str(out)]) == 0
    assert capsys.readouterr().err == ""      # not a terminal, no -v: quiet


# ----------------------------------------------------------------------------- sharding in hooks

FSDP2 = """
import torch
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard


def build(rank, world_size):
    m = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
    if world_size > 1:
        fully_shard(m[0], mesh=init_device_mesh("cpu", (world_size,)))
    return m, {"input": torch.randn(2, 4)}
"""


def test_fsdp2_is_refused_by_name(tmp_path):
    """fully_shard's collectives run in hooks no graph holds: refused, naming the module."""
    script = tmp_path / "fsdp2.py"
    script.write_text(FSDP2)
    with pytest.raises(CaptureError, match=r"module '0' is sharded with FSDP2 \(fully_shard\).*_fsdp.py"):
        capture(script, 2)
    assert capture(script, 1).rank(0) is not None      # the sequential program has no FSDP


# ----------------------------------------------------------------------------- data-dependent sizes

PROGRAMS = ROOT / "tests" / "corpus" / "programs"
MOE_NONZERO = PROGRAMS / "_moe_sinkhorn.py:moe_sinkhorn_nonzero_correct"     # Megatron's SwitchMLP dispatch, (max_ind == e).nonzero()


def _line_of(path, text):
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


@pytest.mark.parametrize("world_size, joint", [(1, False), (2, True)])
def test_nonzero_is_captured_with_its_row_count_as_its_own_size(world_size, joint):
    """nonzero's row count depends on the values (torch's unbacked u0): capture keeps it, one
    symbol per nonzero node, so the checker can name it after the node (check/sizes.py, DRows);
    every tensor sized by it (the rows gathered for an expert) carries that symbol."""
    b = capture(MOE_NONZERO, world_size, joint=joint)
    for g in b.ranks:
        counts = g.nonzero_counts()
        experts = 4 // world_size
        assert sorted(counts.values()) == sorted(["nonzero"] + [f"nonzero_{k}" for k in range(1, experts)])
        gathered = [n for n in g.nodes if n.target == "aten.index.Tensor"]
        assert len(gathered) >= experts and {n.val.shape[0].name for n in gathered} <= set(counts)


def test_a_data_dependent_size_other_than_nonzero_is_refused(tmp_path, capsys):
    """masked_select's size depends on the values too, but no term says which values: refused by
    name and line, with what to write instead."""
    script = tmp_path / "msel.py"
    script.write_text(textwrap.dedent("""\
        import torch, torch.nn as nn
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.empty(4, 4))
            def forward(self, x):
                y = x @ self.w
                return torch.masked_select(y, y > 0).sum()
        def build(rank, world_size):
            return M(), {"x": torch.randn(6, 4)}
        """))
    assert cli.main(["capture", str(script), "-o", str(tmp_path / "m.pt")]) == 2
    err = capsys.readouterr().err
    assert "unsupported op: aten.masked_select.default gives a tensor whose size depends on the values" in err
    assert "msel.py:8: return torch.masked_select(y, y > 0).sum()" in err and "nonzero" in err
    assert not (tmp_path / "m.pt").exists()


def test_boolean_mask_indexing_is_refused(tmp_path, capsys):
    script = tmp_path / "masked.py"
    script.write_text(textwrap.dedent("""\
        import torch, torch.nn as nn
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.empty(4, 4))
            def forward(self, x):
                y = x @ self.w
                return y[y > 0].sum()
        def build(rank, world_size):
            return M(), {"x": torch.randn(6, 4)}
        """))
    assert cli.main(["capture", str(script), "-o", str(tmp_path / "m.pt")]) == 2
    err = capsys.readouterr().err
    assert "unsupported op: aten.index.Tensor gives a tensor whose size depends on the values" in err
    assert "masked.py:8: return y[y > 0].sum()" in err
    assert not (tmp_path / "m.pt").exists()


def test_sinkhorn_stays_one_op_and_the_dense_dispatch_captures():
    """torch.ops.megatron.sinkhorn (registered with torch.library.custom_op, as a compiled Megatron
    router must: its while loop is data-dependent) is one node, under no_grad, in both modes."""
    for joint in (False, True):
        for g in capture(PROGRAMS / "_moe_sinkhorn.py:moe_sinkhorn_correct", 2, joint=joint).ranks:
            t = _targets(g)
            assert t.count("megatron.sinkhorn.default") == 1 and "aten.nonzero.default" not in t
            assert "_c10d_functional.reduce_scatter_tensor.default" in t
