"""DeepSpeed-MoE style top-2 gating with expert parallelism, dense combine: the gate's top-2
probabilities are scattered into a [tokens, experts] combine-weight matrix (zeros + scatter_),
each rank runs its NUM_EXPERTS / ep local experts on all tokens, accumulates combine-weighted
outputs into a zeros_like buffer, and the buffers are all-reduced over the expert-parallel group."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

HIDDEN, FFN, NUM_EXPERTS, TOKENS = 4, 6, 4, 5


class Expert(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(HIDDEN, FFN)
        self.fc2 = nn.Linear(FFN, HIDDEN)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class MOELayer(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.ep_rank, self.ep_size = rank, world_size
        self.num_local_experts = NUM_EXPERTS // world_size
        self.wg = nn.Linear(HIDDEN, NUM_EXPERTS, bias=False)
        self.deepspeed_experts = nn.ModuleList([Expert() for _ in range(self.num_local_experts)])

    def top2gating(self, logits):
        gates = F.softmax(logits, dim=1)
        topk_vals, topk_idx = torch.topk(gates, k=2, dim=1)
        topk_vals = topk_vals / topk_vals.sum(dim=1, keepdim=True)
        return torch.zeros_like(gates).scatter_(1, topk_idx, topk_vals)   # combine weights [t, e]

    def forward(self, hidden_states):
        combine_weights = self.top2gating(self.wg(hidden_states))
        expert_output = torch.zeros_like(hidden_states)
        for local_expert_id, expert in enumerate(self.deepspeed_experts):
            global_expert_id = self.ep_rank + local_expert_id  # BUG: expert offset = rank instead of rank * local experts
            expert_output += combine_weights[:, global_expert_id:global_expert_id + 1] * expert(hidden_states)
        if self.ep_size > 1:
            expert_output = funcol.all_reduce(expert_output, "sum", dist.group.WORLD)
        return expert_output


def build(rank, world_size):
    return MOELayer(rank, world_size), {"hidden_states": torch.randn(TOKENS, HIDDEN)}
