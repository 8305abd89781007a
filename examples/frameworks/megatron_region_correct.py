"""A block written with Megatron's mapping functions: fc1 a ``ColumnParallelLinear``, fc2 the
rank's columns of a weight reduced with ``reduce_from_tensor_model_parallel_region``.  Spec
megatron_region.toml; buggy twin megatron_region_copy.py."""
from _megatron_region import make_build

build = make_build(region="reduce")
