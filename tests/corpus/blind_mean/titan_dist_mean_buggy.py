"""torchtitan: a tiny decoder's output (embedding, RMSNorm, output projection) and its
cross-entropy loss on the data-parallel shard of the batch; the logged loss is
``dist_mean(loss, mesh)``: torchtitan's ``_dist_reduce_tensor`` with ``ReduceOp.AVG.name``
(``funcol.all_reduce(x, reduceOp="AVG", group=mesh)`` then ``wait_tensor``)."""
import torch
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed import distributed_c10d as c10d
from torch.distributed.device_mesh import init_device_mesh

BATCH, SEQ, DIM, VOCAB = 4, 4, 16, 8


def _dist_reduce_tensor(x, reduceOp, mesh):
    if mesh is not None:
        x = funcol.all_reduce(x, reduceOp=reduceOp, group=mesh)
        return funcol.wait_tensor(x)
    return x


def dist_mean(x, mesh=None):
    return _dist_reduce_tensor(x, reduceOp=c10d.ReduceOp.MAX.name, mesh=mesh)  # BUG: copied from dist_max


def cross_entropy_loss(pred, labels):
    """Common cross-entropy loss function for Transformer models training."""
    return F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))


class TinyDecoder(nn.Module):
    def __init__(self, mesh):
        super().__init__()
        self.mesh = mesh
        self.tok_embeddings = nn.Embedding(VOCAB, DIM)
        self.norm = nn.RMSNorm(DIM, eps=1e-5)
        self.output = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, tokens, labels):
        h = self.tok_embeddings(tokens)
        pred = self.output(self.norm(h))
        loss = cross_entropy_loss(pred, labels)
        global_avg_loss = dist_mean(loss.detach(), self.mesh)
        return global_avg_loss


def build(rank, world_size):
    mesh = init_device_mesh("cpu", (world_size,), mesh_dim_names=("dp",)) if world_size > 1 else None
    local_batch = BATCH // world_size
    return TinyDecoder(mesh), {
        "tokens": torch.randint(0, VOCAB, (local_batch, SEQ)),
        "labels": torch.randint(0, VOCAB, (local_batch, SEQ)),
    }
