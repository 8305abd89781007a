"""A row-parallel linear with input_is_parallel=False, as in Megatron-DeepSpeed / GPT-NeoX's
mpu: the (replicated) input is scattered -- each rank keeps its slice of the last dim
(_ScatterToModelParallelRegion: split forward, all-gather backward) -- multiplied by the rank's
rows of a weight stored transposed ([in, out], x @ W as in Conv1D-style layers), the partial
products all-reduced (_ReduceFromModelParallelRegion), then the bias.
"""
import torch
import torch.distributed as dist
from torch import nn

IN, OUT, BATCH, SEQ = 8, 4, 2, 3


def _split_along_last_dim(input_, rank, world_size):
    per_partition = input_.size(-1) // world_size
    return input_[..., rank * per_partition:(rank + 1) * per_partition].contiguous()


def _gather_along_last_dim(input_, world_size):
    tensor_list = [torch.empty_like(input_) for _ in range(world_size)]
    dist.all_gather(tensor_list, input_.contiguous())
    return torch.cat(tensor_list, dim=-1).contiguous()


class _ScatterToModelParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_, rank, world_size):
        ctx.world_size = world_size
        return _split_along_last_dim(input_, rank, world_size)

    @staticmethod
    def backward(ctx, grad_output):
        return _gather_along_last_dim(grad_output, ctx.world_size), None, None


class _ReduceFromModelParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_):
        input_ = input_.clone()
        dist.all_reduce(input_)
        return input_

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class RowParallelLinear(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.rank, self.world_size = rank, world_size
        self.weight = nn.Parameter(torch.empty(IN // world_size, OUT))
        self.bias = nn.Parameter(torch.empty(OUT))

    def forward(self, input_):
        if self.world_size > 1:
            input_ = _ScatterToModelParallelRegion.apply(input_, self.rank, self.world_size)
        output_parallel = torch.matmul(input_, self.weight)
        if self.world_size > 1:
            output_parallel = _ReduceFromModelParallelRegion.apply(output_parallel)
        return output_parallel + self.bias


def build(rank, world_size):
    return RowParallelLinear(rank, world_size), {"input_": torch.randn(BATCH, SEQ, IN, requires_grad=True)}
