"""DeepSpeed-MoE style top-1 gating (deepspeed/moe/sharded_moe.py: top1gating builds the
one-hot dispatch mask by scattering ones at the argmax expert), expert parallel with a dense
combine: each rank runs its own experts on every token, weights each expert's output by the
token's combine weight (gate probability times the one-hot mask), accumulates them into a zero
buffer, and the ranks' buffers are all-reduced.
"""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

HIDDEN, FFN, EXPERTS, TOKENS = 4, 8, 4, 6


class _AllReduceForward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.clone()
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


class Experts(nn.Module):
    def __init__(self, num_local):
        super().__init__()
        self.fc1 = nn.Parameter(torch.empty(num_local, FFN, HIDDEN))
        self.fc2 = nn.Parameter(torch.empty(num_local, HIDDEN, FFN))

    def forward(self, i, x):
        return F.linear(F.relu(F.linear(x, self.fc1[i])), self.fc2[i])


class MOELayer(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.world_size = rank, world_size
        self.num_local_experts = EXPERTS // world_size
        self.wg = nn.Linear(HIDDEN, EXPERTS, bias=False)
        self.experts = Experts(self.num_local_experts)

    def forward(self, x):
        logits = self.wg(x)
        gates = F.softmax(logits, dim=1)
        indices1_s = torch.argmax(gates, dim=1)
        mask1 = torch.zeros_like(gates).scatter_(1, indices1_s.unsqueeze(-1), 1)
        combine_weights = gates * mask1
        out = torch.zeros_like(x)
        for i in range(self.num_local_experts):
            e = self.rank * self.num_local_experts + i
            out = out + combine_weights[:, e:e + 1] * self.experts(i, x)
        if self.world_size > 1:
            out = _AllReduceForward.apply(out) / self.world_size  # BUG
        return out


def build(rank, world_size):
    return MOELayer(rank, world_size), {"x": torch.randn(TOKENS, HIDDEN, requires_grad=True)}
