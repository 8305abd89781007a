"""Context parallelism (Megatron-style): the sequence is split over the ranks, each rank sums its
tokens' losses, the sum is all-reduced through an autograd function whose backward is the
identity (_ReduceFromModelParallelRegion), and divided by the global token count.  The
replicated weight's gradient on each rank is its tokens' part; the CP/DP gradient all-reduce
(outside this step) sums them."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

HIDDEN, SEQ, BATCH = 4, 6, 2


class _ReduceFromContextParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_):
        return funcol.all_reduce(input_, "sum", dist.group.WORLD)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class Regressor(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.world_size = world_size
        self.proj = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x, y):
        err = self.proj(x) - y
        loss_sum = err.pow(2).sum()
        if self.world_size > 1:
            loss_sum = _ReduceFromContextParallelRegion.apply(loss_sum)
        num_tokens = y.numel() * self.world_size
        return loss_sum / num_tokens


def build(rank, world_size):
    model = Regressor(rank, world_size)
    return model, {"x": torch.randn(BATCH, SEQ // world_size, HIDDEN),
                   "y": torch.randn(BATCH, SEQ // world_size, HIDDEN)}
