"""torchtitan's output projection and loss parallel: the output Linear is ColwiseParallel with
output_layouts=Shard(-1), use_local_output=False (logits stay a vocab-sharded DTensor), and the
cross entropy runs under torch.distributed.tensor.parallel.loss_parallel() (also around the
backward, as torchtitan's train step does).  The loss is summed and divided by the number of
tokens of the whole data-parallel batch (here one DP replica: the mesh is all TP).
"""
import contextlib

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Replicate, Shard
from torch.distributed.tensor.parallel import ColwiseParallel, loss_parallel, parallelize_module

DIM, VOCAB, BATCH, SEQ = 4, 8, 2, 3


class OutputAndLoss(nn.Module):
    def __init__(self, world_size):
        super().__init__()
        self.norm = nn.RMSNorm(DIM)
        self.output = nn.Linear(DIM, VOCAB, bias=False)
        self.world_size = world_size
        self.dp_degree = 1
        self.loss_context = contextlib.nullcontext

    def forward(self, h, labels):
        pred = self.output(self.norm(h))
        num_tokens = labels.numel() * self.dp_degree
        if self.world_size > 1:  # the capture asks for DTensor labels
            labels = DTensor.from_local(labels, pred.device_mesh, [Replicate()], run_check=False)
        with self.loss_context():
            loss = F.cross_entropy(pred.flatten(0, 1), labels.flatten(0, 1), reduction="sum") / num_tokens
        if self.world_size > 1:
            loss = loss.full_tensor()
        return loss


def build(rank, world_size):
    model = OutputAndLoss(world_size)
    if world_size > 1:
        mesh = init_device_mesh("cpu", (world_size,))
        parallelize_module(model, mesh, {
            "output": ColwiseParallel(output_layouts=Shard(-1), use_local_output=False)})
        model.loss_context = model.backward_context = loss_parallel
    h = torch.randn(BATCH, SEQ, DIM, requires_grad=True)
    return model, {"h": h, "labels": torch.zeros(BATCH, SEQ, dtype=torch.long)}
