"""Bug: sequence parallelism turned on for fc2 alone (its own config with
``sequence_parallel=True``): fc2 reduce-scatters the rows of the sequence where the block's output
is read whole.  See megatron_mlp.py; spec megatron_mlp.toml."""
import megatron_mlp
from megatron.core.tensor_parallel import RowParallelLinear


class SequenceParallelFc2(RowParallelLinear):
    def __init__(self, input_size, output_size, *, config, **kwargs):
        if config.tensor_model_parallel_size > 1:
            config = megatron_mlp.config(config.tensor_model_parallel_size, sequence_parallel=True)  # BUG (sp_fc2_only): one layer's sequence-parallel flag
        super().__init__(input_size, output_size, config=config, **kwargs)


build = megatron_mlp.make_build(fc2=SequenceParallelFc2)
