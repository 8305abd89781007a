"""A Megatron-style MLP written by hand with Megatron's mapping functions (see the twins)."""
import torch
import torch.nn.functional as F
from megatron.core import parallel_state
from megatron.core.tensor_parallel import ColumnParallelLinear
from megatron.core.tensor_parallel.mappings import (copy_to_tensor_model_parallel_region,
                                                    reduce_from_tensor_model_parallel_region)

from _megatron import model_parallel
from megatron_mlp import BATCH, FFN, HIDDEN, SEQ, config


class Block(torch.nn.Module):
    def __init__(self, world_size, region):
        super().__init__()
        self.fc1 = ColumnParallelLinear(HIDDEN, FFN, config=config(world_size), init_method=torch.nn.init.zeros_,
                                        bias=False, gather_output=False)
        self.fc2 = torch.nn.Parameter(torch.empty(HIDDEN, FFN // world_size))
        self.region = region

    def forward(self, x):
        h, _ = self.fc1(x)
        y = F.linear(F.gelu(h), self.fc2)
        if parallel_state.get_tensor_model_parallel_world_size() == 1:
            return y
        if self.region == "copy":
            return copy_to_tensor_model_parallel_region(y)  # BUG (region_copy): the forward's all-reduce is missing
        return reduce_from_tensor_model_parallel_region(y)


def make_build(region):
    def build(rank, world_size):
        model_parallel(world_size)
        return Block(world_size, region), {"x": torch.randn(SEQ, BATCH, HIDDEN, requires_grad=True)}
    return build
