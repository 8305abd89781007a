"""Data-parallel classifier loss reported as the mean of the ranks' losses (the usual
`dist.all_reduce(loss); loss /= world_size` of training scripts, written as an autograd
Function whose backward is the identity, so every rank's backward starts from its own share).
The loss is cross entropy written with logsumexp.  Gradients of the replicated weights are
all-reduced in the backward (a DDP-like hook).
"""
import torch
import torch.distributed as dist
from torch import nn

IN, CLASSES, BATCH = 4, 5, 6


class _AllReduceForward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.clone()
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


class _AllReduceGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p):
        return p

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad)
        return grad


class Classifier(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.world_size = world_size
        self.proj = nn.Linear(IN, CLASSES)

    def forward(self, x, labels):
        w, b = self.proj.weight, self.proj.bias
        if self.world_size > 1:
            w, b = _AllReduceGrad.apply(w), _AllReduceGrad.apply(b)
        logits = x @ w.t() + b
        nll = torch.logsumexp(logits, dim=-1) - logits.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
        loss = nll.mean()
        if self.world_size > 1:
            loss = _AllReduceForward.apply(loss)
            # loss = loss / self.world_size  # BUG
        return loss


def build(rank, world_size):
    return Classifier(world_size), {"x": torch.randn(BATCH // world_size, IN),
                                    "labels": torch.zeros(BATCH // world_size, dtype=torch.long)}
