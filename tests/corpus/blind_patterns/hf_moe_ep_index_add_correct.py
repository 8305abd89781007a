"""Hugging Face Mixtral sparse MoE block (experts stored as 3-D tensors, MixtralExperts.forward:
torch.where on the one-hot expert mask, index_add_ into a zeros_like buffer) under expert
parallelism as HF's EP router does it: the replicated router's top-k expert ids are remapped to
the rank's local ids, ids of other ranks' experts become the sentinel num_local_experts (skipped)
with weight 0; each rank holds a dim-0 slice of the stacked expert weights, and the buffers are
all-reduced."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

HIDDEN, FFN, NUM_EXPERTS, TOP_K, TOKENS = 4, 6, 4, 2, 5


class MixtralExperts(nn.Module):
    def __init__(self, num_experts):
        super().__init__()
        self.num_experts = num_experts
        self.gate_up_proj = nn.Parameter(torch.empty(num_experts, 2 * FFN, HIDDEN))
        self.down_proj = nn.Parameter(torch.empty(num_experts, HIDDEN, FFN))

    def forward(self, hidden_states, top_k_index, top_k_weights):
        final_hidden_states = torch.zeros_like(hidden_states)
        expert_mask = F.one_hot(top_k_index, num_classes=self.num_experts + 1).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[token_idx]
            gate, up = F.linear(current_state, self.gate_up_proj[expert_idx]).chunk(2, dim=-1)
            current_hidden_states = F.silu(gate) * up
            current_hidden_states = F.linear(current_hidden_states, self.down_proj[expert_idx])
            current_hidden_states = current_hidden_states * top_k_weights[token_idx, top_k_pos, None]
            final_hidden_states.index_add_(0, token_idx, current_hidden_states.to(final_hidden_states.dtype))
        return final_hidden_states


class MixtralSparseMoeBlock(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.ep_rank, self.ep_size = rank, world_size
        self.num_local_experts = NUM_EXPERTS // world_size
        self.gate = nn.Linear(HIDDEN, NUM_EXPERTS, bias=False)
        self.experts = MixtralExperts(self.num_local_experts)

    def forward(self, hidden_states):
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=-1, dtype=torch.float)
        top_k_weights, top_k_index = torch.topk(routing_weights, TOP_K, dim=-1)
        top_k_weights /= top_k_weights.sum(dim=-1, keepdim=True)
        top_k_weights = top_k_weights.to(hidden_states.dtype)
        if self.ep_size > 1:
            local_index = top_k_index - self.ep_rank * self.num_local_experts
            outside = (local_index < 0) | (local_index >= self.num_local_experts)
            top_k_index = local_index.masked_fill(outside, self.num_local_experts)
            top_k_weights = top_k_weights.masked_fill(outside, 0.0)
        final_hidden_states = self.experts(hidden_states, top_k_index, top_k_weights)
        if self.ep_size > 1:
            final_hidden_states = funcol.all_reduce(final_hidden_states, "sum", dist.group.WORLD)
        return final_hidden_states


def build(rank, world_size):
    return MixtralSparseMoeBlock(rank, world_size), {"hidden_states": torch.randn(TOKENS, HIDDEN)}
