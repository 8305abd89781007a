"""torchtitan's token-normalised loss under data parallelism: each rank's cross entropy summed
over its tokens (``reduction="sum"``), divided by the global number of valid tokens
(``dist_sum`` of the ranks' ``(labels != IGNORE_INDEX).sum()``).  The ranks' losses then add
up to the global token mean, and so do their gradients (the backward is where it matters)."""
import torch
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed import distributed_c10d as c10d
from torch.distributed.device_mesh import init_device_mesh

IGNORE_INDEX = -100
BATCH, SEQ, DIM, VOCAB = 4, 4, 16, 8


def _dist_reduce_tensor(x, reduceOp, mesh):
    if mesh is not None:
        x = funcol.all_reduce(x, reduceOp=reduceOp, group=mesh)
        return funcol.wait_tensor(x)
    return x


def dist_sum(x, mesh=None):
    return _dist_reduce_tensor(x, reduceOp=c10d.ReduceOp.SUM.name, mesh=mesh)


def dist_mean(x, mesh=None):
    return _dist_reduce_tensor(x, reduceOp=c10d.ReduceOp.AVG.name, mesh=mesh)


def cross_entropy_loss(pred, labels):
    """Cross-entropy loss with sum reduction for token-based normalization."""
    return F.cross_entropy(pred.flatten(0, 1), labels.flatten(0, 1), reduction="sum",
                           ignore_index=IGNORE_INDEX)


class OutputHead(nn.Module):
    def __init__(self, mesh):
        super().__init__()
        self.mesh = mesh
        self.norm = nn.RMSNorm(DIM, eps=1e-5)
        self.output = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, h, labels):
        pred = self.output(self.norm(h))
        local_valid_tokens = (labels != IGNORE_INDEX).sum().to(pred.dtype)
        global_valid_tokens = dist_sum(local_valid_tokens, self.mesh)
        return cross_entropy_loss(pred, labels) / global_valid_tokens


def build(rank, world_size):
    mesh = init_device_mesh("cpu", (world_size,), mesh_dim_names=("dp",)) if world_size > 1 else None
    local_batch = BATCH // world_size
    return OutputHead(mesh), {
        "h": torch.randn(local_batch, SEQ, DIM, requires_grad=True),
        "labels": torch.randint(0, VOCAB, (local_batch, SEQ)),
    }
