"""Megatron-LM's SwitchMLP (megatron/core/transformer/switch_mlp.py, moe_utils.py) with expert
parallelism over sequence-sharded tokens: E experts, E/W on each rank (global expert = rank * E/W +
local); a replicated router ``logits = x @ router.T`` on the rank's own tokens; in training
``norm = sinkhorn(logits)`` under ``torch.no_grad()`` (Megatron's op, ``torch.ops.megatron.sinkhorn``,
see _megatron_ops.py) over *every* token's logits (all-gathered: Sinkhorn balances columns across
the whole batch), ``_, max_ind = torch.max(norm, dim=1)``, and the gate ``max_prob =
sigmoid(logits).gather(1, max_ind)`` through which the router gets its gradient.  The tokens are
all-gathered over the EP group (Megatron's gather_from_sequence_parallel_region_to_moe), each local
expert runs on the rows routed to it, the outputs are reduce-scattered back to the token shards and
scaled by ``max_prob``.  The router is replicated but each rank sees only its tokens, so its
gradient is all-reduced over the ranks (Megatron's sequence-parallel parameter gradient reduce,
here in the graph: identity forward, all-reduce backward).

Dispatch: Megatron writes ``local_indices = (max_ind == e).nonzero(); hidden = gx[local_indices, :]``
and ``output_total[local_indices, :] = output`` (``dispatch="nonzero"``, the ``moe_sinkhorn_nonzero*``
scripts): a size that depends on the values (the count of tokens routed to e), related across the
programs as the row count of the nonzero result itself.  The ``moe_sinkhorn_*`` scripts dispatch
with a dense mask as later Megatron / MoE codes do without token dropping: every expert runs on all
tokens and its output is kept where the token is routed to it (``y * (max_ind == e)``).

Bugs (each modelled on a public one): ``router_grad`` -- the router's gradient is not all-reduced
while the tokens are sequence-sharded (Megatron-LM's sequence-parallel router gradient bug: each
rank updates the router from its own tokens); ``offset`` -- a rank takes its local expert index as
the global one (it computes its experts on the tokens routed to expert 0..E/W-1); ``slice`` -- the
experts' partial outputs are sliced to the rank's rows instead of reduce-scattered (the other ranks'
experts' outputs are lost)."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

import _megatron_ops  # noqa: F401  (registers torch.ops.megatron.sinkhorn)
from _common import _Gather, _ReduceScatter, copy_to

E, H, FF, N = 4, 4, 6, 8       # experts, hidden, expert FFN, tokens (global)


class SwitchMLP(nn.Module):
    def __init__(self, rank, ws, bug=None, dispatch="mask"):
        super().__init__()
        self.rank, self.ws, self.bug, self.dispatch = rank, ws, bug, dispatch
        self.router = nn.Parameter(torch.empty(E, H))
        self.w1 = nn.Parameter(torch.empty(E // ws, FF, H))
        self.w2 = nn.Parameter(torch.empty(E // ws, H, FF))

    def expert(self, le, h):
        return F.gelu(h @ self.w1[le].t()) @ self.w2[le].t()

    def forward(self, x):                     # x: this rank's tokens [N / W, H]
        ws, rank, n, per = self.ws, self.rank, x.shape[0], E // self.ws
        router = self.router
        if ws > 1:
            router = self.router if self.bug == "router_grad" else copy_to(self.router, ws)  # BUG: the router gradient is not all-reduced
        logits = x @ router.t()
        with torch.no_grad():
            route = logits if ws == 1 else funcol.all_gather_tensor(logits, 0, dist.group.WORLD)
            norm = torch.ops.megatron.sinkhorn(route.float())
            _, max_ind = torch.max(norm, dim=1)                         # every token's expert [N]
        local_ind = max_ind if ws == 1 else max_ind[rank * n:(rank + 1) * n]
        max_prob = torch.sigmoid(logits).gather(1, local_ind.unsqueeze(1))
        gx = x if ws == 1 else _Gather.apply(x, 0, dist.group.WORLD)   # every token [N, H]
        if self.dispatch == "nonzero":                          # Megatron's SwitchMLP
            out_total = torch.zeros_like(gx)
            for le in range(per):
                e = le if self.bug == "offset" else rank * per + le  # BUG: the local expert index taken as the global one (nonzero dispatch)
                local_indices = (max_ind == e).nonzero()
                hidden = gx[local_indices, :]
                out_total[local_indices, :] = self.expert(le, hidden)
        else:     # the local experts as one grouped GEMM on every token (Megatron's GroupedMLP), masked
            experts = torch.arange(per) if self.bug == "offset" else torch.arange(per) + rank * per  # BUG: the local expert index taken as the global one
            mask = (max_ind.unsqueeze(0) == experts.unsqueeze(1)).unsqueeze(-1).to(gx.dtype)  # [E/W, N, 1]
            h = F.gelu(torch.bmm(gx.expand(per, -1, -1), self.w1.transpose(1, 2)))
            out_total = (torch.bmm(h, self.w2.transpose(1, 2)) * mask).sum(0)     # one expert's output per row
        if ws > 1:
            if self.bug == "slice":
                out_total = out_total[rank * n:(rank + 1) * n]  # BUG: the rank's rows sliced, the other ranks' experts never summed
            else:
                out_total = _ReduceScatter.apply(out_total, dist.group.WORLD)
        return out_total * max_prob


def make_build(bug=None, dispatch="mask"):
    def build(rank, world_size):
        return SwitchMLP(rank, world_size, bug, dispatch), {"x": torch.randn(N // world_size, H, requires_grad=True)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_moe_sinkhorn.py:<name>`, and `entangle capture tests/corpus/programs/_moe_sinkhorn.py:<name>` captures one).
moe_sinkhorn_correct = make_build()
moe_sinkhorn_nonzero_correct = make_build(dispatch="nonzero")
moe_sinkhorn_nonzero_offset = make_build(bug="offset", dispatch="nonzero")
moe_sinkhorn_nonzero_router_grad = make_build(bug="router_grad", dispatch="nonzero")
moe_sinkhorn_nonzero_slice = make_build(bug="slice", dispatch="nonzero")
moe_sinkhorn_offset = make_build(bug='offset')
moe_sinkhorn_router_grad = make_build(bug='router_grad')
moe_sinkhorn_slice = make_build(bug='slice')
