"""Megatron DDP's gradient accumulation written out: each parameter's main_grad buffer starts as
zeros_like(param) and accumulates the gradient of every micro-batch's loss (scaled by
1/num_microbatches, as the schedule does); at the end of the step the buffer is scaled by the
gradient scaling factor 1/dp and all-reduced (divide, then all-reduce)."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

IN, OUT, MICRO_BATCH, NUM_MICROBATCHES = 4, 3, 2, 3


class LinearWithMainGrad(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.world_size = world_size
        self.weight = nn.Parameter(torch.empty(OUT, IN))

    def micro_batch_grad(self, x, y):
        # d/dW of ((x W^T - y)^2).mean() / num_microbatches
        err = x @ self.weight.t() - y
        grad_output = 2.0 * err / (err.numel() * NUM_MICROBATCHES)
        return grad_output.t() @ x

    def forward(self, xs, ys):
        main_grad = torch.zeros_like(self.weight)
        for m in range(NUM_MICROBATCHES):
            main_grad += self.micro_batch_grad(xs[m], ys[m])
        if self.world_size > 1:
            gradient_scaling_factor = 1.0 / (self.world_size * NUM_MICROBATCHES)  # BUG: micro-batches counted again (each micro-batch loss is already scaled)
            main_grad = main_grad * gradient_scaling_factor
            main_grad = funcol.all_reduce(main_grad, "sum", dist.group.WORLD)
        return main_grad


def build(rank, world_size):
    model = LinearWithMainGrad(rank, world_size)
    return model, {"xs": torch.randn(NUM_MICROBATCHES, MICRO_BATCH * 2 // world_size, IN),
                   "ys": torch.randn(NUM_MICROBATCHES, MICRO_BATCH * 2 // world_size, OUT)}
