"""Hugging Face Mixtral / Qwen2-MoE sparse block with expert parallelism: the router is
replicated, each rank holds NUM_EXPERTS / ep experts and runs only the tokens routed to them
(torch.where on the expert mask), index_add_ of their weighted outputs into a zero buffer, and
the buffers are all-reduced."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

HIDDEN, FFN, NUM_EXPERTS, TOP_K, TOKENS = 4, 6, 4, 2, 5


class MLPExpert(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(HIDDEN, FFN, bias=False)
        self.up_proj = nn.Linear(HIDDEN, FFN, bias=False)
        self.down_proj = nn.Linear(FFN, HIDDEN, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class SparseMoeBlock(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.world_size = rank, world_size
        self.num_local_experts = NUM_EXPERTS // world_size
        self.gate = nn.Linear(HIDDEN, NUM_EXPERTS, bias=False)
        self.experts = nn.ModuleList([MLPExpert() for _ in range(self.num_local_experts)])

    def forward(self, hidden_states):
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, TOP_K, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)

        final_hidden_states = hidden_states.clone()  # BUG: residual folded into the buffer on every expert-parallel rank
        expert_mask = F.one_hot(selected_experts, num_classes=NUM_EXPERTS).permute(2, 1, 0)
        for local_idx in range(self.num_local_experts):
            expert_idx = self.rank * self.num_local_experts + local_idx
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[None, top_x].reshape(-1, HIDDEN)
            current_hidden_states = self.experts[local_idx](current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        if self.world_size > 1:
            final_hidden_states = funcol.all_reduce(final_hidden_states, "sum", dist.group.WORLD)
        return final_hidden_states


def build(rank, world_size):
    model = SparseMoeBlock(rank, world_size)
    return model, {"hidden_states": torch.randn(TOKENS, HIDDEN)}
