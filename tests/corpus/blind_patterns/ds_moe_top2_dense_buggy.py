"""DeepSpeed-MoE style top-2 gating with expert parallelism, dense combine: the gate's top-2
probabilities are scattered into a [tokens, experts] combine-weight matrix (zeros + scatter_),
each rank runs its NUM_EXPERTS / ep local experts (grouped weights, a dim-0 slice of the
experts' stacked parameters) on all tokens, accumulates the combine-weighted outputs into a
zeros_like buffer, and the buffers are all-reduced over the expert-parallel group."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

HIDDEN, FFN, NUM_EXPERTS, TOKENS = 4, 6, 4, 5


class GroupedExperts(nn.Module):
    def __init__(self, num_local_experts):
        super().__init__()
        self.w1 = nn.Parameter(torch.empty(num_local_experts, HIDDEN, FFN))
        self.b1 = nn.Parameter(torch.empty(num_local_experts, FFN))
        self.w2 = nn.Parameter(torch.empty(num_local_experts, FFN, HIDDEN))
        self.b2 = nn.Parameter(torch.empty(num_local_experts, HIDDEN))

    def forward(self, local_expert_id, x):
        h = F.gelu(x @ self.w1[local_expert_id] + self.b1[local_expert_id])
        return h @ self.w2[local_expert_id] + self.b2[local_expert_id]


class MOELayer(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.ep_rank, self.ep_size = rank, world_size
        self.num_local_experts = NUM_EXPERTS // world_size
        self.wg = nn.Linear(HIDDEN, NUM_EXPERTS, bias=False)
        self.experts = GroupedExperts(self.num_local_experts)

    def top2gating(self, logits):
        gates = F.softmax(logits, dim=1)
        topk_vals, topk_idx = torch.topk(gates, k=2, dim=1)
        topk_vals = topk_vals / topk_vals.sum(dim=1, keepdim=True)
        return torch.zeros_like(gates).scatter_(1, topk_idx, topk_vals)   # combine weights [t, e]

    def forward(self, hidden_states):
        combine_weights = self.top2gating(self.wg(hidden_states))
        expert_output = torch.zeros_like(hidden_states)
        for local_expert_id in range(self.num_local_experts):
            global_expert_id = self.ep_rank + local_expert_id  # BUG: expert offset = rank instead of rank * local experts
            expert_output += combine_weights[:, global_expert_id:global_expert_id + 1] * self.experts(local_expert_id, hidden_states)
        if self.ep_size > 1:
            expert_output = funcol.all_reduce(expert_output, "sum", dist.group.WORLD)
        return expert_output


def build(rank, world_size):
    return MOELayer(rank, world_size), {"hidden_states": torch.randn(TOKENS, HIDDEN)}
