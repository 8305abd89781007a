"""Hugging Face Mixtral sparse MoE block (transformers/models/mixtral/modeling_mixtral.py:
MixtralSparseMoeBlock), expert parallel: the router is replicated, the experts' stacked weights
(w1/w3 gate and up, w2 down: [num_experts, ...]) are split across ranks, each rank runs its own
experts on the tokens routed to them (torch.where on the one-hot expert mask, index_add_ into a
zero buffer), and the buffers are all-reduced.
"""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

HIDDEN, FFN, EXPERTS, TOP_K, BATCH, SEQ = 4, 6, 4, 2, 2, 3


class _AllReduceForward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.clone()
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


class MixtralSparseMoeBlock(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.world_size = rank, world_size
        self.num_local_experts = EXPERTS // world_size
        self.gate = nn.Linear(HIDDEN, EXPERTS, bias=False)
        self.w1 = nn.Parameter(torch.empty(self.num_local_experts, FFN, HIDDEN))
        self.w3 = nn.Parameter(torch.empty(self.num_local_experts, FFN, HIDDEN))
        self.w2 = nn.Parameter(torch.empty(self.num_local_experts, HIDDEN, FFN))

    def expert(self, local_idx, x):
        h = F.silu(F.linear(x, self.w1[local_idx])) * F.linear(x, self.w3[local_idx])
        return F.linear(h, self.w2[local_idx])

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, TOP_K, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)

        final_hidden_states = torch.zeros((batch_size * sequence_length, hidden_dim), dtype=hidden_states.dtype)
        expert_mask = F.one_hot(selected_experts, num_classes=EXPERTS).permute(2, 1, 0)
        for local_idx in range(self.num_local_experts):
            expert_idx = local_idx  # BUG
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = self.expert(local_idx, current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        if self.world_size > 1:
            final_hidden_states = _AllReduceForward.apply(final_hidden_states)
        return final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)


def build(rank, world_size):
    return MixtralSparseMoeBlock(rank, world_size), {"hidden_states": torch.randn(BATCH, SEQ, HIDDEN, requires_grad=True)}
