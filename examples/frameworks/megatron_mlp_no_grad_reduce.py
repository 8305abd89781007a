"""Bug: fc1 built with ``disable_grad_reduce=True`` (meant for layers whose input gradient a
framework reduces elsewhere): each rank's input gradient is its partial sum, never all-reduced.
See megatron_mlp.py; spec megatron_mlp_joint.toml (joint)."""
import megatron_mlp
from megatron.core.tensor_parallel import ColumnParallelLinear


class NoGradReduce(ColumnParallelLinear):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs, disable_grad_reduce=True)  # BUG (no_grad_reduce): input gradient not all-reduced


build = megatron_mlp.make_build(fc1=NoGradReduce)
