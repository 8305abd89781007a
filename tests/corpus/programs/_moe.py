"""Expert parallelism: 2 experts, one per rank; tokens sharded over ranks; top-1 routing with a
replicated router.  Each rank builds a dense dispatch buffer [E, n, H] (token rows zeroed where not
routed to expert e), all_to_all_single sends block e to rank e, the expert runs on what it
received, all_to_all_single sends the results back, and the rank combines
sum_e gate * [routed to e] * out_e.  The exchanges are an autograd Function whose backward sends the
gradient back the same way (joint mode).  Bug ``wrong_block``: the returned blocks are combined in
reverse order (outputs routed back to the wrong expert's slot)."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

E, H, H2 = 2, 4, 5


class _AllToAll(torch.autograd.Function):
    """all_to_all_single with equal splits; its backward is the same exchange of the gradient
    (block j of rank i went to rank j's block i, so the gradient goes back the same way)."""
    @staticmethod
    def forward(ctx, t):
        return funcol.all_to_all_single(t, None, None, dist.group.WORLD)

    @staticmethod
    def backward(ctx, grad):
        return funcol.all_to_all_single(grad.contiguous(), None, None, dist.group.WORLD)


class MoE(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.router = nn.Parameter(torch.empty(E, H))
        self.experts = nn.Parameter(torch.empty(E // ws, H2, H))

    def forward(self, x):
        n = x.shape[0]
        gate, idx = F.softmax(x @ self.router.t(), dim=-1).topk(1, dim=-1)
        onehot = F.one_hot(idx.squeeze(-1), E).to(x.dtype) * gate          # [n, E]
        if self.ws == 1:
            outs = torch.stack([(x * onehot[:, e:e + 1]) @ self.experts[e].t() for e in range(E)])
        else:
            buf = torch.stack([x * onehot[:, e:e + 1] for e in range(E)]).reshape(E * n, H)
            recv = _AllToAll.apply(buf)                                                    # [W * n, H]
            y = recv @ self.experts[0].t()
            outs = _AllToAll.apply(y).reshape(E, n, H2)
            if self.bug == "wrong_block":
                outs = outs.flip(0)  # BUG: expert outputs combined into the wrong expert's slot
        return sum(outs[e] * (onehot[:, e:e + 1] > 0) for e in range(E))


def make_build(bug=None):
    def build(rank, world_size):
        return MoE(world_size, bug), {"x": torch.randn(6 // world_size, H, requires_grad=True)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_moe.py:<name>`, and `entangle capture tests/corpus/programs/_moe.py:<name>` captures one).
moe_ep_correct = make_build()
moe_ep_wrong_block = make_build(bug='wrong_block')
