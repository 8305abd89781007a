"""The gloo harness reads spec relations as the README defines them: the ranks' tensors it builds
from a sequential value give that value back, and an expectation names the right tensor."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import relations as R  # noqa: E402

FUSED = ("concat(concat(slice(r0.w, dim=0, end=2), slice(r1.w, dim=0, end=2), dim=0), "
         "concat(slice(r0.w, dim=0, start=2), slice(r1.w, dim=0, start=-2), dim=0), dim=0)")


@pytest.mark.parametrize("rel,shapes", [
    ("replicate", [(8, 6)] * 2),
    ("shard(0)", [(4, 6)] * 2),
    ("shard(-1)", [(8, 3)] * 2),
    ("shard(1)", [(8, 1), (8, 2), (8, 3)]),        # uneven parts
    ("partial", [(8, 6)] * 4),
    (FUSED, [(4, 6)] * 2),                          # a fused [gate_r; up_r] weight
    ("concat(r1.w, r0.w, dim=1)", [(8, 2), (8, 4)]),
    ("r1.w", [None, (8, 6)]),                       # only rank 1 holds it
])
def test_distribute_then_evaluate_is_the_value(rel, shapes):
    v = torch.randn(8, 6, dtype=torch.float64)
    ranks = R.distribute(rel, v, shapes, "w")
    assert [None if t is None else tuple(t.shape) for t in ranks] == [None if s is None else tuple(s) for s in shapes]
    back = R.evaluate(rel, ranks, "w", [{"w": t} for t in ranks])
    assert torch.allclose(back, v, rtol=0, atol=1e-12)


def test_partial_parts_differ_from_the_value():
    v = torch.randn(3, dtype=torch.float64)
    ranks = R.distribute("partial", v, [(3,)] * 2, "w")
    assert not torch.allclose(ranks[0], v)


def test_infer_follows_the_readme():
    assert R.infer((8, 6), [(8, 6), (8, 6)]) == "replicate"
    assert R.infer((8, 6), [(8, 3), (8, 3)]) == "shard(1)"
    with pytest.raises(ValueError):
        R.infer((8, 6), [(4, 3), (4, 3)])


def test_parse_reads_rank_qualified_ports():
    assert R.parse("r3.grad:input:x") == R.Leaf(3, "grad:input:x")
    call = R.parse("slice(r0.param:fc.weight, dim=-1, start=2)")
    assert call.fn == "slice" and call.kw("dim") == -1 and call.args == (R.Leaf(0, "param:fc.weight"),)
