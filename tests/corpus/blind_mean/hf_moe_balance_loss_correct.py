"""Hugging Face Mixtral's ``load_balancing_loss_func`` (Switch Transformer aux loss) with the
tokens split over data/sequence-parallel ranks: the fraction of tokens routed to each expert and
the mean router probability per expert are means over all tokens, so each rank's local means are
averaged over the ranks (``dist.all_reduce(op=ReduceOp.AVG)``, even shards) before the product.
Every rank returns the global statistics and loss."""
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

TOKENS, HIDDEN, NUM_EXPERTS, TOP_K = 8, 16, 4, 2


class MixtralRouterAux(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.gate = nn.Linear(HIDDEN, NUM_EXPERTS, bias=False)

    def load_balancing_loss_func(self, gate_logits, num_experts, top_k):
        routing_weights = F.softmax(gate_logits, dim=-1)
        _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
        expert_mask = F.one_hot(selected_experts, num_experts)
        # Compute the percentage of tokens routed to each experts
        tokens_per_expert = torch.mean(expert_mask.to(routing_weights.dtype), dim=0)
        # Compute the average probability of routing to these experts
        router_prob_per_expert = torch.mean(routing_weights, dim=0)
        if self.world_size > 1:
            dist.all_reduce(tokens_per_expert, op=dist.ReduceOp.AVG)
            dist.all_reduce(router_prob_per_expert, op=dist.ReduceOp.AVG)
        overall_loss = torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0))
        return overall_loss * num_experts, tokens_per_expert, router_prob_per_expert

    def forward(self, hidden_states):
        gate_logits = self.gate(hidden_states)
        aux_loss, tokens_per_expert, router_prob = self.load_balancing_loss_func(
            gate_logits, NUM_EXPERTS, TOP_K)
        return {"aux_loss": aux_loss, "tokens_per_expert": tokens_per_expert,
                "router_prob_per_expert": router_prob}


def build(rank, world_size):
    return MixtralRouterAux(world_size), {
        "hidden_states": torch.randn(TOKENS // world_size, HIDDEN)}
