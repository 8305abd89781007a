"""Megatron ParallelMLP and attention output projection on local shards: the weights are stored
[out, in] as nn.Linear does, so the row-parallel products are written with the transposed local
weight (x @ w.t(), torch.matmul(x, w.T), F.linear), input_is_parallel=True, the partial sums
all-reduced and the bias added once after the reduction (skip_bias_add)."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

HIDDEN, FFN, TOKENS = 4, 8, 5


def reduce_from_tensor_model_parallel_region(x, world_size):
    if world_size == 1:
        return x
    return funcol.all_reduce(x, "sum", dist.group.WORLD)


class ParallelMLP(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.world_size = world_size
        self.fc1_weight = nn.Parameter(torch.empty(FFN // world_size, HIDDEN))   # column parallel
        self.fc1_bias = nn.Parameter(torch.empty(FFN // world_size))
        self.fc2_weight = nn.Parameter(torch.empty(HIDDEN, FFN // world_size))   # row parallel
        self.fc2_bias = nn.Parameter(torch.empty(HIDDEN))
        self.proj_weight = nn.Parameter(torch.empty(HIDDEN, FFN // world_size))  # row parallel
        self.proj_bias = nn.Parameter(torch.empty(HIDDEN))

    def forward(self, hidden_states, context_layer):
        intermediate_parallel = F.gelu(hidden_states @ self.fc1_weight.t() + self.fc1_bias)
        output_parallel = torch.matmul(intermediate_parallel, self.fc2_weight.T)
        output = reduce_from_tensor_model_parallel_region(output_parallel, self.world_size)
        mlp_out = output + self.fc2_bias

        # attention's dense projection: context_layer already split over heads (input_is_parallel)
        attn_parallel = F.linear(context_layer, self.proj_weight)
        attn_out = attn_parallel  # BUG: the dense projection's partial sums never all-reduced
        return mlp_out + attn_out + self.proj_bias


def build(rank, world_size):
    model = ParallelMLP(rank, world_size)
    return model, {"hidden_states": torch.randn(TOKENS, HIDDEN),
                   "context_layer": torch.randn(TOKENS, FFN // world_size)}
