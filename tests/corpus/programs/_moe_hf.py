"""Hugging Face's sparse MoE block (transformers' MixtralSparseMoeBlock) with expert parallelism:
E experts, E/W on each rank (global expert = rank * E/W + local); every rank holds every token and
the replicated router.  Top-K routing (softmax, topk, renormalised), then per local expert
``idx, top_x = torch.where(expert_mask[e])`` (nonzero: which tokens chose e, at which of their K
slots), the chosen tokens' rows through the expert, weighted by their routing weight, and
``final.index_add_(0, top_x, out)``.  The ranks' partial outputs are all-reduced (each rank adds
only its experts' rows); x and the router are read under copy_to (their gradients from the other
ranks' experts are all-reduced in backward).

Bugs: ``offset`` -- a rank takes its local expert index as the global one; ``index`` -- the
expert's output added at the K-slot index instead of the token's (idx for top_x); ``norm`` -- the
routing weights not renormalised over the K chosen experts on the distributed ranks."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import copy_to, reduce_from

E, K, H, FF, N = 4, 2, 4, 6, 8       # experts, top-k, hidden, expert FFN, tokens
# the routing weights are float32 whatever x's dtype (softmax(dtype=torch.float), as Hugging Face
# writes it): in a training step their gradient is summed over experts in float32, by the ranks in
# another order than the sequential program (differences near 1e-7; the bugs' are above 0.1)
GLOO_TOL = 1e-5


class SparseMoE(nn.Module):
    def __init__(self, rank, ws, bug=None):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        self.gate = nn.Parameter(torch.empty(E, H))
        self.w1 = nn.Parameter(torch.empty(E // ws, FF, H))
        self.w2 = nn.Parameter(torch.empty(E // ws, H, FF))

    def forward(self, x):                     # x: every token [N, H]
        ws, rank, per = self.ws, self.rank, E // self.ws
        gate = self.gate if ws == 1 else copy_to(self.gate, ws)
        x = x if ws == 1 else copy_to(x, ws)
        logits = x @ gate.t()
        weights = F.softmax(logits, dim=1, dtype=torch.float)
        weights, selected = torch.topk(weights, K, dim=-1)
        if not (self.bug == "norm" and ws > 1):
            weights = weights / weights.sum(dim=-1, keepdim=True)  # BUG (norm): the distributed ranks skip the renormalisation
        final = torch.zeros_like(x)
        expert_mask = F.one_hot(selected, num_classes=E).permute(2, 1, 0)     # [E, K, N]
        for le in range(per):
            e = le if self.bug == "offset" else rank * per + le  # BUG (offset): the local expert index taken as the global one
            idx, top_x = torch.where(expert_mask[e])
            current = x[None, top_x].reshape(-1, H)
            out = F.gelu(current @ self.w1[le].t()) @ self.w2[le].t()
            out = out * weights[top_x, idx, None]
            at = idx if self.bug == "index" and ws > 1 else top_x  # BUG (index): the output added at the K-slot index, not the token's
            final.index_add_(0, at, out.to(x.dtype))
        return final if ws == 1 else reduce_from(final, ws)


def make_build(bug=None):
    def build(rank, world_size):
        return SparseMoE(rank, world_size, bug), {"x": torch.randn(N, H, requires_grad=True)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_moe_hf.py:<name>`, and `entangle capture tests/corpus/programs/_moe_hf.py:<name>` captures one).
moe_hf_correct = make_build()
moe_hf_index = make_build(bug="index")
moe_hf_norm = make_build(bug="norm")
moe_hf_offset = make_build(bug="offset")
