"""What Megatron-core needs to build and run its layers on a CPU build of torch, shared by the
Megatron recipes: its process groups (``parallel_state``) and three CPU stand-ins for code that
names the CUDA device.  None of them changes what a layer computes."""
import os

# as Megatron's launch scripts set it for tensor parallelism (its linear layers otherwise warn once,
# marking a function attribute, which TorchDynamo does not trace)
os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from megatron.core import parallel_state  # noqa: E402


def on_cpu():
    """Megatron allocates its buffers on ``torch.cuda.current_device()`` (the global memory buffer
    behind the sequence-parallel gathers and the attention scores, the reduce-scatters' outputs)
    and its default causal mask on ``"cuda"``: here all on the CPU (fresh buffers, as the global buffer's are written before
    they are read).  Its attention dropout runs in a fork of the CUDA generator's state
    (``get_cuda_rng_tracker().fork()``): here in the CPU generator's own stream (the recipes'
    dropout rates are 0: nothing is drawn)."""
    import contextlib

    from megatron.core import utils
    from megatron.core.fusions import fused_softmax
    from megatron.core.tensor_parallel import random

    @contextlib.contextmanager
    def fork(self, name=None):
        yield

    random.CudaRNGStatesTracker.fork = fork
    # TorchDynamo's rules must name torch's own function before it is replaced: the replacement
    # is then traced as the program's code (a constant), not put in the graph as a torch op
    from torch._dynamo import trace_rules
    trace_rules.get_torch_obj_rule_map()
    torch.cuda.current_device = _cpu

    def get_tensor(self, tensor_shape, dtype, name, mem_alloc_context=None):
        return torch.empty(tuple(tensor_shape), dtype=dtype)

    def causal_mask(sq):
        return torch.triu(torch.ones(sq, sq), diagonal=1).bool()

    utils.GlobalMemoryBuffer.get_tensor = get_tensor
    fused_softmax.get_default_causal_mask = causal_mask


def _cpu():
    return "cpu"


def model_parallel(world_size):
    """Megatron's groups for tensor parallelism of ``world_size``.  Its parallel layers need a
    process group even at TP 1: the sequential program (world size 1, where capture starts none)
    gets a one-rank gloo group of its own, which communicates nothing."""
    on_cpu()
    if world_size == 1 and not dist.is_initialized():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    parallel_state.destroy_model_parallel()
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=world_size)
