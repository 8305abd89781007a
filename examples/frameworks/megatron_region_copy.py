"""Bug in a block written with Megatron's mapping functions: the row-parallel product is passed
through ``copy_to_tensor_model_parallel_region`` (identity forward, all-reduce backward) where
``reduce_from_tensor_model_parallel_region`` (all-reduce forward) belongs.  Correct twin:
megatron_region_correct.py.  Spec megatron_region.toml."""
from _megatron_region import make_build

build = make_build(region="copy")
