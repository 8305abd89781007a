"""Hugging Face LlamaRMSNorm (transformers/models/llama/modeling_llama.py) run sequence parallel:
each rank normalises its chunk of the sequence ([batch, seq / W, hidden], dim 1), then the
chunks are all-gathered back into the full sequence for the attention that follows.
all_gather_into_tensor stacks the ranks' chunks along dim 0, so the result is regrouped: the
rank dimension moved next to the sequence before the reshape.
"""
import torch
import torch.distributed as dist
from torch import nn

HIDDEN, BATCH, SEQ = 4, 2, 6


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32) if input_dtype == torch.float16 else hidden_states
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class SequenceParallelNorm(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.input_layernorm = LlamaRMSNorm(HIDDEN)

    def forward(self, hidden_states):
        normed = self.input_layernorm(hidden_states)
        if self.world_size == 1:
            return normed
        b, s_local, h = normed.shape
        gathered = torch.empty(self.world_size * b, s_local, h, dtype=normed.dtype)
        dist.all_gather_into_tensor(gathered, normed.contiguous())
        full = gathered.view(b, self.world_size, s_local, h)  # BUG
        return full.reshape(b, self.world_size * s_local, h)


def build(rank, world_size):
    return SequenceParallelNorm(world_size), {"hidden_states": torch.randn(BATCH, SEQ // world_size, HIDDEN)}
