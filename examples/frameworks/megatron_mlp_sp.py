"""Megatron-core MLP with sequence parallelism (``config.sequence_parallel``): see megatron_mlp.py.
Specs: megatron_mlp_sp.toml (forward), megatron_mlp_sp_joint.toml (joint)."""
from megatron_mlp import make_build

build = make_build(sequence_parallel=True)
