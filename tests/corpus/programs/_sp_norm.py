"""Sequence parallelism (Megatron layout [S, B, H], rows sharded along the sequence, dim 0).

* ``layernorm``: F.layer_norm over sequence-sharded rows; the weight and bias are replicated and
  used by every rank on its rows, so their gradients are partial sums that must be all-reduced
  (Megatron's ``allreduce_sequence_parallel_grads``; here in-graph through copy_to on the weight).
  Bug ``ln_grad_not_reduced``: the LN weight gradient is left unreduced (Megatron-LM issue #204 /
  NeMo's ``sequence_parallel`` LN-grad fix).
* ``rmsnorm``: RMSNorm (written out) then an SP MLP: all-gather the sequence, column fc1, silu,
  row fc2, reduce-scatter back to sequence shards, residual.  Bug ``slice_not_reduce_scatter``: the
  row-parallel output is sliced to the rank's rows without being summed over ranks.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import copy_to, gather, reduce_scatter


class SPLayerNorm(nn.Module):
    def __init__(self, ws, hidden, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.ln = nn.LayerNorm(hidden)

    def forward(self, x):
        if self.bug == "ln_grad_not_reduced":
            w, b = self.ln.weight, copy_to(self.ln.bias, self.ws)  # BUG: the LN weight gradient is not all-reduced
        else:
            w, b = copy_to(self.ln.weight, self.ws), copy_to(self.ln.bias, self.ws)
        return F.layer_norm(x, x.shape[-1:], w, b, self.ln.eps)


class SPRMSNormMLP(nn.Module):
    def __init__(self, ws, rank, hidden, ffn, bug):
        super().__init__()
        self.ws, self.rank, self.bug = ws, rank, bug
        self.norm_weight = nn.Parameter(torch.empty(hidden))
        self.fc1 = nn.Parameter(torch.empty(ffn // ws, hidden))
        self.fc2 = nn.Parameter(torch.empty(hidden, ffn // ws))

    def forward(self, x):
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * copy_to(self.norm_weight, self.ws)
        h = gather(h, 0, self.ws)
        y = F.linear(F.silu(F.linear(h, self.fc1)), self.fc2)
        if self.bug == "slice_not_reduce_scatter":
            y = y.chunk(self.ws, 0)[self.rank]  # BUG: sliced to this rank's rows, never summed over ranks
        else:
            y = reduce_scatter(y, self.ws)
        return x + y


def make_build(kind, bug=None):
    def build(rank, world_size):
        if kind == "layernorm":
            return SPLayerNorm(world_size, 6, bug), {"x": torch.randn(8 // world_size, 3, 6, requires_grad=True)}
        return SPRMSNormMLP(world_size, rank, 6, 10, bug), {"x": torch.randn(8 // world_size, 3, 6, requires_grad=True)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_sp_norm.py:<name>`, and `entangle capture tests/corpus/programs/_sp_norm.py:<name>` captures one).
sp_layernorm_correct = make_build('layernorm')
sp_layernorm_grad_not_reduced = make_build('layernorm', bug='ln_grad_not_reduced')
sp_rmsnorm_mlp_correct = make_build('rmsnorm')
sp_rmsnorm_mlp_slice_not_reduce_scatter = make_build('rmsnorm', bug='slice_not_reduce_scatter')
