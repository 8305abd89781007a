"""Adversarial programs (helper-adv4) on the lemmas and lowerings of the vocab-parallel loss gradient,
the product over a sum over ranks, permutes around a reduce-scatter, counts of masks and typed
constants.  Every kind has a correct twin; ``bug`` picks the wrong variant (the ``# BUG`` lines).

* ``vpnll`` / ``vpnllm``: cross-entropy of logits [6, 8] vocab-sharded; each rank sets the targets
  it does not own to the ignore index -100 and calls F.nll_loss (reduction none) on its block of the
  shifted logits z; loss rows lse - z_t summed (``vpnll``) or their mean (``vpnllm``, sum / 6).  Twin ``full``: the foreign
  targets filled by torch.where with t.new_full.  Bugs: ``mean`` the ranks' nll_loss means summed
  (each divides by the count of ITS targets, not 6); ``ign0`` foreign targets set to 0 (class 0 of
  every rank picked).  Joint: the gradient is nll_loss_backward's placement at the local targets.
* ``lsmv`` (joint): a vocab-parallel log-softmax as an autograd.Function; backward g - exp(y) times
  the all-reduced row sum of g.  Bug ``local``: backward is aten._log_softmax_backward_data on the
  shard (the row sum of g over the rank's vocabulary block only).
* ``lsmd`` (joint): a row-sharded log-softmax as an autograd.Function whose backward calls
  aten._log_softmax_backward_data.  Bug ``dim0``: the reduction dim of the backward is 0.
* ``nllb`` (joint): row-sharded nll_loss (ignore_index 0, which occurs, reduction sum) as an
  autograd.Function calling aten.nll_loss_backward.  Bugs: ``ign`` the backward's ignore index is
  -100; ``mean`` the backward's reduction is the mean (divides by total_weight).
* ``rsp``: a row-parallel linear over x [2, 2, 4] (K sharded) reduce-scattered along the last dim
  (N = 4): permute(2, 0, 1), reduce-scatter, permute(1, 2, 0).  Twins: ``alt`` permute(2, 1, 0)
  both ways; ``slice`` all-reduce then the rank's block taken between two movedims.  Bugs:
  ``back`` permuted back by (2, 0, 1); ``order`` (2, 1, 0) then back by (1, 2, 0); ``other`` the
  other rank's block; joint ``slice_ident``: the all-reduce's backward is the identity (each rank's
  partial gets only its own block's gradient).
* ``mulrs``: the product of two row-parallel outputs (finite_values).  Twin ``inner``: each rank's
  partial times the all-reduced other, then all-reduced.  Bugs: ``local`` the partials multiplied
  then summed; ``div`` the inner twin divided by W; joint ``inner_ident``: the inner all-reduce's
  backward is the identity.  Joint, the correct twin is wrong: every rank goes on with the same
  all_reduce(q), whose backward (an all-reduce) then gives b W times its gradient (``inner`` is right).
* ``lnh`` (joint): hidden-sharded layer norm (gather, normalise, own slice).  Bug ``split``: the
  gather's backward takes the rank's own slice of the gradient instead of the reduce-scatter.
* ``fdt`` / ``fdtr``: x + a constant 0.1, x row-sharded / replicated.  Bug ``half``: the constant
  made by new_full in float16.
* ``zpad``: row-sharded x gathered by zero-padding each rank's rows (new_zeros) and all-reducing.
  Bug ``ones``: padded with new_ones.
* ``cnt``: per-row masked mean, x [4, 8] sequence-sharded: (x * m).sum(1) / (m.sum(1) + 1) with m =
  x > 0, sums all-reduced.  Twin ``cnz``: count_nonzero.  Bug ``dim0``: the count over dim 0.
* ``cnt8``: the same over 600 positions (300 a rank), m = x > -3.  Bug ``u8``: the count summed in uint8.
* ``xign``: row-sharded cross-entropy, ignore_index 0 (which occurs), reduction sum.  Bug ``other``:
  the ranks pass ignore_index -100.  ``xignm``: mean (summed losses over the all-reduced count of
  targets != 0).  Bug ``count``: the count of targets != -100.
* ``xpad``: data-parallel cross-entropy mean of a linear's logits, with padding targets -100 in the
  data (HF style); the spec enables valid_indices (as a model with an embedding must).  Correct:
  summed losses over the all-reduced count of targets != -100.  Bug ``batch``: over the batch size 8.
* ``tvm``: an expert-sharded bmm (one expert a rank, [1, 4, 4] weights viewed 2-D).  Twin ``tt``:
  the weight transposed, reshaped and transposed back.  Bug ``reshape``: w.reshape(F, H).t() (a
  reshape is not a transpose).
* ``amin``: rows of x [4, 3] (row-sharded) where all column values > -1 (torch.all over dim 0) as a
  float mask's amin, combined as a min over ranks.  Bug ``dim1``: the amin over dim 1 (broadcast).
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

from _common import all_reduce, gather, gather_split, reduce_from, reduce_max, reduce_scatter

V, NT = 8, 6
TARGETS = torch.tensor([0, 3, 5, 7, 4, 1])          # every rank owns some at 2 and 4 ranks
XIGN_TARGETS = torch.tensor([0, 2, 0, 4, 1, 0, 3, 2])
XPAD_TARGETS = torch.tensor([1, 4, -100, -100, 2, 0, 3, -100])     # padding labelled -100 (HF style)


def _world():
    return dist.group.WORLD


class VPNll(nn.Module):
    def __init__(self, rank, ws, kind, bug):
        super().__init__()
        self.rank, self.ws, self.kind, self.bug = rank, ws, kind, bug
        self.start, self.end = rank * (V // ws), (rank + 1) * (V // ws)

    def forward(self, logits, target):
        red = "sum" if self.kind == "vpnll" else "mean"
        if self.ws == 1:
            return F.cross_entropy(logits, target, reduction=red)
        m = reduce_max(logits.detach().amax(-1, keepdim=True), self.ws)
        z = logits - m
        lse = reduce_from(z.exp().sum(-1), self.ws).log()
        own = (target >= self.start) & (target < self.end)
        if self.bug == "full":
            lt = torch.where(own, target - self.start, target.new_full(target.shape, -100))
        else:
            lt = (target - self.start).masked_fill(~own, 0 if self.bug == "ign0" else -100)  # BUG (vpnll): foreign targets filled with a class
        if self.bug == "mean":
            return lse.mean() + reduce_from(F.nll_loss(z, lt, ignore_index=-100), self.ws)  # BUG (vpnll): the ranks' means of their own targets summed
        rows = lse + reduce_from(F.nll_loss(z, lt, ignore_index=-100, reduction="none"), self.ws)
        return rows.sum() if self.kind == "vpnll" else rows.sum() / NT


class _VPLogSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bug):
        m = funcol.all_reduce(x.amax(-1, keepdim=True), "max", _world())
        z = x - m
        y = z - funcol.all_reduce(z.exp().sum(-1, keepdim=True), "sum", _world()).log()
        ctx.save_for_backward(y)
        ctx.bug = bug
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        if ctx.bug == "local":
            return torch.ops.aten._log_softmax_backward_data(g, y, 1, g.dtype), None  # BUG (lsmv): the row sum of g over the rank's block only
        return g - y.exp() * funcol.all_reduce(g.sum(-1, keepdim=True), "sum", _world()), None


class _LogSoftmaxDim(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bug):
        y = torch.log_softmax(x, 1)
        ctx.save_for_backward(y)
        ctx.bug = bug
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        d = 0 if ctx.bug == "dim0" else 1  # BUG (lsmd): the backward's reduction dim
        return torch.ops.aten._log_softmax_backward_data(g, y, d, g.dtype), None


class _NllSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logp, t, bug):
        out, tw = torch.ops.aten.nll_loss_forward(logp, t, None, 2, 0)
        ctx.save_for_backward(logp, t, tw)
        ctx.bug = bug
        return out

    @staticmethod
    def backward(ctx, g):
        logp, t, tw = ctx.saved_tensors
        red, ign = {"ign": (2, -100), "mean": (1, 0)}.get(ctx.bug, (2, 0))  # BUG (nllb): the backward's reduction and ignore index
        return torch.ops.aten.nll_loss_backward(g, logp, t, None, red, ign, tw), None, None


class Lsm(nn.Module):
    def __init__(self, ws, kind, bug):
        super().__init__()
        self.ws, self.kind, self.bug = ws, kind, bug

    def forward(self, x, t=None):
        if self.kind == "nllb":
            if self.ws == 1:
                return F.nll_loss(x, t, ignore_index=0, reduction="sum")
            return reduce_from(_NllSum.apply(x, t, self.bug), self.ws)
        if self.ws == 1:
            return F.log_softmax(x, 1)
        return (_VPLogSoftmax if self.kind == "lsmv" else _LogSoftmaxDim).apply(x, self.bug)


class RSP(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        self.weight = nn.Parameter(torch.empty(4, 4 // ws))

    def forward(self, x):
        p = F.linear(x, self.weight)
        if self.ws == 1:
            return p
        if self.bug in ("slice", "other", "slice_ident"):
            full = reduce_from(p, self.ws) if self.bug == "slice_ident" else all_reduce(p, self.ws)  # BUG (rsp): the all-reduce's backward
            n = p.shape[2] // self.ws
            r = self.ws - 1 - self.rank if self.bug == "other" else self.rank  # BUG (rsp): the rank's block
            return full.movedim(2, 0)[r * n:(r + 1) * n].movedim(0, 2)
        fwd, back = {"alt": ((2, 1, 0), (2, 1, 0)), "back": ((2, 0, 1), (2, 0, 1)),
                     "order": ((2, 1, 0), (1, 2, 0))}.get(self.bug, ((2, 0, 1), (1, 2, 0)))  # BUG (rsp): the permutes around the reduce-scatter
        return reduce_scatter(p.permute(*fwd), self.ws).permute(*back)


class MulRS(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.a = nn.Parameter(torch.empty(3, 4 // ws))
        self.b = nn.Parameter(torch.empty(3, 4 // ws))

    def forward(self, x):
        p, q = F.linear(x, self.a), F.linear(x, self.b)
        if self.ws == 1:
            return p * q
        if self.bug in ("inner", "div", "inner_ident"):
            qq = reduce_from(q, self.ws) if self.bug == "inner_ident" else all_reduce(q, self.ws)  # BUG (mulrs): the inner all-reduce's backward
            out = reduce_from(p * qq, self.ws)
            return out / self.ws if self.bug == "div" else out  # BUG (mulrs): divided by the ranks
        if self.bug == "local":
            return reduce_from(p * q, self.ws)  # BUG (mulrs): the partials multiplied, then summed
        return reduce_from(p, self.ws) * all_reduce(q, self.ws)  # BUG (mulrs joint): all_reduce's backward sums the ranks' equal gradients of q


class LNH(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        self.weight = nn.Parameter(torch.empty(6 // ws))

    def forward(self, x):
        if self.ws == 1:
            return F.layer_norm(x, x.shape[-1:]) * self.weight
        g = gather_split(x, 2, self.rank, self.ws) if self.bug == "split" else gather(x, 2, self.ws)  # BUG (lnh): the gather's backward
        n = x.shape[-1]
        return F.layer_norm(g, g.shape[-1:])[..., self.rank * n:(self.rank + 1) * n] * self.weight


class Fill(nn.Module):
    def __init__(self, rank, ws, kind, bug):
        super().__init__()
        self.rank, self.ws, self.kind, self.bug = rank, ws, kind, bug

    def forward(self, x):
        if self.kind in ("fdt", "fdtr"):
            if self.ws == 1:
                return x + torch.full_like(x, 0.1)
            c = x.new_full(x.shape, 0.1, dtype=torch.float16) if self.bug == "half" else x.new_full(x.shape, 0.1)  # BUG (fdt): the constant's dtype
            return x + c
        if self.ws == 1:
            return x * 2
        s, h = x.shape
        pad = x.new_ones if self.bug == "ones" else x.new_zeros  # BUG (zpad): the padding's fill
        return reduce_from(torch.cat([pad(self.rank * s, h), x, pad((self.ws - 1 - self.rank) * s, h)]), self.ws) * 2


class Cnt(nn.Module):
    def __init__(self, ws, kind, bug):
        super().__init__()
        self.ws, self.bug = ws, bug if ws > 1 else None
        self.thr = 0.0 if kind == "cnt" else -3.0

    def forward(self, x):
        m = x > self.thr
        num = (x * m).sum(1)
        if self.bug == "cnz":
            den = torch.count_nonzero(m, dim=1)
        elif self.bug == "u8":
            den = m.sum(1, dtype=torch.uint8)  # BUG (cnt): the count summed in uint8
        else:
            den = m.sum(0 if self.bug == "dim0" else 1)  # BUG (cnt): the count over the other dim
        if self.ws > 1:
            num, den = reduce_from(num, self.ws), reduce_from(den.to(torch.int64), self.ws)
        return num / (den + 1)


class XIgn(nn.Module):
    def __init__(self, ws, kind, bug):
        super().__init__()
        self.ws, self.kind, self.bug = ws, kind, bug

    def forward(self, logits, target):
        if self.ws == 1:
            return F.cross_entropy(logits, target, ignore_index=0, reduction="sum" if self.kind == "xign" else "mean")
        ign = -100 if self.bug == "other" else 0  # BUG (xign): the ranks' ignore index
        total = reduce_from(F.cross_entropy(logits, target, ignore_index=ign, reduction="sum"), self.ws)
        if self.kind == "xign":
            return total
        count = reduce_from((target != (-100 if self.bug == "count" else 0)).sum(), self.ws)  # BUG (xignm): the count of targets
        return total / count


class XPad(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.weight = nn.Parameter(torch.empty(5, 4))

    def forward(self, x, target):
        logits = F.linear(x, self.weight)
        if self.ws == 1:
            return F.cross_entropy(logits, target)
        total = reduce_from(F.cross_entropy(logits, target, reduction="sum"), self.ws)
        if self.bug == "batch":
            return total / 8  # BUG (xpad): divided by the batch size, padding targets included
        return total / reduce_from((target != -100).sum(), self.ws)


class TVM(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.weight = nn.Parameter(torch.empty(2 // ws, 4, 4))

    def forward(self, x):
        if self.ws == 1:
            return torch.bmm(x, self.weight)
        _, t, h = x.shape
        w = self.weight
        if self.bug == "tt":
            w2 = w.transpose(1, 2).reshape(4, h).t()
        else:
            w2 = w.reshape(4, h).t() if self.bug == "reshape" else w.view(h, 4)  # BUG (tvm): a reshape for a transpose
        return (x.view(t, h) @ w2).view(1, t, 4)


class AMin(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug

    def forward(self, x):
        if self.ws == 1:
            return x * (x > -1).all(0, keepdim=True).to(x.dtype)
        ok = (x > -1).to(x.dtype).amin(1 if self.bug == "dim1" else 0, keepdim=True)  # BUG (amin): the dim of the min
        return x * -reduce_max(-ok, self.ws)


def make_build(kind, bug=None):
    def build(rank, ws):
        if kind in ("vpnll", "vpnllm"):
            return VPNll(rank, ws, kind, bug), {"logits": torch.randn(NT, V // ws, requires_grad=True),
                                                "target": TARGETS.clone()}
        if kind in ("lsmv", "lsmd"):
            shape = (4, 6 // ws) if kind == "lsmv" else (6 // ws, 4)
            return Lsm(ws, kind, bug), {"x": torch.randn(*shape, requires_grad=True)}
        if kind == "nllb":
            return Lsm(ws, kind, bug), {"x": torch.randn(8 // ws, 5, requires_grad=True),
                                        "t": XIGN_TARGETS[:8 // ws].clone()}
        if kind == "rsp":
            return RSP(rank, ws, bug), {"x": torch.randn(2, 2, 4 // ws)}
        if kind == "mulrs":
            return MulRS(ws, bug), {"x": torch.randn(3, 4 // ws)}
        if kind == "lnh":
            return LNH(rank, ws, bug), {"x": torch.randn(2, 2, 6 // ws, requires_grad=True)}
        if kind in ("fdt", "fdtr", "zpad"):
            return Fill(rank, ws, kind, bug), {"x": torch.randn(4 // ws if kind != "fdtr" else 4, 3, requires_grad=True)}
        if kind in ("cnt", "cnt8"):
            return Cnt(ws, kind, bug), {"x": torch.randn(4 if kind == "cnt" else 2, (8 if kind == "cnt" else 600) // ws,
                                                         requires_grad=True)}
        if kind in ("xign", "xignm"):
            return XIgn(ws, kind, bug), {"logits": torch.randn(8 // ws, 5, requires_grad=True), "target": XIGN_TARGETS[:8 // ws].clone()}
        if kind == "xpad":
            return XPad(ws, bug), {"x": torch.randn(8 // ws, 4), "target": XPAD_TARGETS[:8 // ws].clone()}
        if kind == "tvm":
            return TVM(ws, bug), {"x": torch.randn(2 // ws, 3, 4)}
        if kind == "amin":
            return AMin(ws, bug), {"x": torch.randn(4 // ws, 3, requires_grad=True)}
        raise ValueError(kind)
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_adv4.py:<name>`, and `entangle capture tests/corpus/programs/_adv4.py:<name>` captures one).
adv4_amin_correct = make_build('amin')
adv4_amin_dim1 = make_build('amin', 'dim1')
adv4_cnt8_correct = make_build('cnt8')
adv4_cnt8_u8 = make_build('cnt8', 'u8')
adv4_cnt_cnz = make_build('cnt', 'cnz')
adv4_cnt_correct = make_build('cnt')
adv4_cnt_dim0 = make_build('cnt', 'dim0')
adv4_fdt_correct = make_build('fdt')
adv4_fdt_half = make_build('fdt', 'half')
adv4_fdtr_correct = make_build('fdtr')
adv4_fdtr_half = make_build('fdtr', 'half')
adv4_lnh_correct = make_build('lnh')
adv4_lnh_split = make_build('lnh', 'split')
adv4_lsmd_correct = make_build('lsmd')
adv4_lsmd_dim0 = make_build('lsmd', 'dim0')
adv4_lsmv_correct = make_build('lsmv')
adv4_lsmv_local = make_build('lsmv', 'local')
adv4_mulrs_correct = make_build('mulrs')
adv4_mulrs_div = make_build('mulrs', 'div')
adv4_mulrs_inner = make_build('mulrs', 'inner')
adv4_mulrs_inner_ident = make_build('mulrs', 'inner_ident')
adv4_mulrs_local = make_build('mulrs', 'local')
adv4_nllb_correct = make_build('nllb')
adv4_nllb_ign = make_build('nllb', 'ign')
adv4_nllb_mean = make_build('nllb', 'mean')
adv4_rsp_alt = make_build('rsp', 'alt')
adv4_rsp_back = make_build('rsp', 'back')
adv4_rsp_correct = make_build('rsp')
adv4_rsp_order = make_build('rsp', 'order')
adv4_rsp_other = make_build('rsp', 'other')
adv4_rsp_slice = make_build('rsp', 'slice')
adv4_rsp_slice_ident = make_build('rsp', 'slice_ident')
adv4_tvm_correct = make_build('tvm')
adv4_tvm_reshape = make_build('tvm', 'reshape')
adv4_tvm_tt = make_build('tvm', 'tt')
adv4_vpnll_correct = make_build('vpnll')
adv4_vpnll_full = make_build('vpnll', 'full')
adv4_vpnll_ign0 = make_build('vpnll', 'ign0')
adv4_vpnllm_correct = make_build('vpnllm')
adv4_vpnllm_mean = make_build('vpnllm', 'mean')
adv4_xign_correct = make_build('xign')
adv4_xign_other = make_build('xign', 'other')
adv4_xignm_correct = make_build('xignm')
adv4_xignm_count = make_build('xignm', 'count')
adv4_xpad_batch = make_build('xpad', 'batch')
adv4_xpad_correct = make_build('xpad')
adv4_zpad_correct = make_build('zpad')
adv4_zpad_ones = make_build('zpad', 'ones')
