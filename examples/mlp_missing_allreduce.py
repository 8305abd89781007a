"""The Megatron MLP of examples/mlp.py with a BUG: the row-parallel fc2 forgets its all-reduce.

Every rank returns its partial sum plus the bias instead of the full result.  Training still runs
and the backward is even unchanged (reduce_from_tp's backward is the identity); only the output is
wrong -- the kind of silent bug ``entangle check`` must catch.  The sequential program
(world_size 1) is the same as examples/mlp.py.

Regenerate graphs/mlp_tp2_missing_allreduce, mlp_tp2_missing_allreduce_joint and
mlp_tp2_dynamic_missing_allreduce::

    python examples/mlp_missing_allreduce.py
"""
import torch

from mlp import BATCH, HIDDEN, MLP, SEQ, SPEC_FORWARD, SPEC_JOINT

DYNAMIC_DIMS = {"x": [0, 1]}


def build(rank, world_size):
    model = MLP(world_size, reduce=False)      # the bug: no all-reduce after fc2
    x = torch.randn(BATCH, SEQ, HIDDEN, requires_grad=True)
    return model, {"x": x}


_NOTE = "# Expected to FAIL: fc2's all-reduce is missing, so 'out' is a per-rank partial sum.\n"

GRAPHS = [
    ("mlp_tp2_missing_allreduce", 2, False, False, _NOTE + SPEC_FORWARD),
    ("mlp_tp2_missing_allreduce_joint", 2, True, False, _NOTE + SPEC_JOINT),
    ("mlp_tp2_dynamic_missing_allreduce", 2, False, True, _NOTE + SPEC_FORWARD),
]

if __name__ == "__main__":
    from entangle_py.frontend.capture import regenerate_examples
    regenerate_examples(__file__, GRAPHS)
