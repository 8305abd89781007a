"""entangle_py.testing.assert_refines used the way a user's test suite would use it."""
import pytest
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

from entangle_py.testing import assert_refines

B, K, F = 3, 8, 5


class RowParallel(nn.Module):
    """y = x @ W with x and W sharded along K; the partial products all-reduced (or not)."""

    def __init__(self, world_size, reduce=True):
        super().__init__()
        self.ws, self.reduce = world_size, reduce
        self.w = nn.Parameter(torch.empty(K // world_size, F))

    def forward(self, x):
        y = x @ self.w
        if self.ws > 1 and self.reduce:
            y = funcol.all_reduce(y, "sum", dist.group.WORLD)
        return y


SPEC = """
[inputs]
"param:w" = "shard(0)"
"input:x" = "shard(1)"
[expect]
out = "replicate"
"""


def build(rank, world_size):
    return RowParallel(world_size), {"x": torch.randn(B, K // world_size)}


def build_missing_all_reduce(rank, world_size):
    return RowParallel(world_size, reduce=False), {"x": torch.randn(B, K // world_size)}


def test_a_correct_program_passes():
    res = assert_refines(build, world_size=2, spec=SPEC)
    assert res.relations == {"out": "r0.out"}


def test_a_wrong_program_fails_with_the_report():
    with pytest.raises(AssertionError) as err:
        assert_refines(build_missing_all_reduce, world_size=2, spec=SPEC)
    msg = str(err.value)
    assert "does not refine" in msg and "(exit 1)" in msg
    # the output is the sum of the ranks' partial products, not what every rank holds
    assert "expect out = replicate: violated (found out = sum(r0.out, r1.out))" in msg
