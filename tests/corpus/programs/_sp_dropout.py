"""Sequence-parallel dropout: x [S, B, H] sharded along the sequence, dropout (training) then a
replicated elementwise scale.  Each rank seeds its own stream (build): independent masks, together
one sequential mask.  Bug ``wrong_p``: the distributed program passes the attention-dropout rate
where the hidden dropout rate is configured (a config mix-up; e.g. Megatron ``hidden_dropout`` vs
``attention_dropout``).  Bug ``scale_grad_not_reduced`` (joint): the replicated scale is used
without ``copy_to``, so its gradient is a sum over the rank's rows of the sequence only (the classic
sequence-parallel missing gradient all-reduce of a replicated parameter).

On gloo (run_gloo.py) dropout is replaced by its expectation-preserving deterministic part (mask of
ones, scale 1/(1-p)) so that the label can be confirmed: a different ``p`` changes the scale."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import copy_to

HIDDEN_DROPOUT, ATTENTION_DROPOUT = 0.1, 0.25


class SPDropout(nn.Module):
    def __init__(self, ws, hidden, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.scale = nn.Parameter(torch.empty(hidden))

    def forward(self, x):
        if self.bug == "scale_grad_not_reduced":
            scale = self.scale  # BUG: the replicated scale's gradient is this rank's rows only, never all-reduced
        else:
            scale = copy_to(self.scale, self.ws)
        p = HIDDEN_DROPOUT
        if self.bug == "wrong_p" and self.ws > 1:
            p = ATTENTION_DROPOUT  # BUG: the attention dropout rate is used for the hidden dropout
        return F.dropout(x, p, training=True) * scale


def make_build(bug=None):
    def build(rank, world_size):
        torch.manual_seed(1000 + rank)      # each sequence shard draws its own mask
        return SPDropout(world_size, 7, bug), {"x": torch.randn(6 // world_size, 5, 7, requires_grad=True)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_sp_dropout.py:<name>`, and `entangle capture tests/corpus/programs/_sp_dropout.py:<name>` captures one).
sp_dropout_correct = make_build()
sp_dropout_scale_grad_not_reduced = make_build(bug='scale_grad_not_reduced')
sp_dropout_wrong_p = make_build(bug='wrong_p')
