"""Adversarial programs (helper-adv6): DistributedDataParallel's contract (groups, buffers, the
parameter set fixed at construction), DTensor partial sums with a bias, labels a program computes
under no_ignored_targets, a division by False, Sinkhorn's tolerance.  Every kind has a correct
twin; ``bug`` picks the wrong variant (the ``# BUG`` lines).

DDP kinds (real DistributedDataParallel on gloo; the model x -> fc2(relu(fc(x))), a mean squared
error over the rank's rows, DDP averaging the gradients; ``pred`` detached, ``loss`` back-propagated):

* ``dsub``: DDP over an explicit group of every rank.  Bug ``self``: each rank's DDP over its own
  one-rank group (dist.new_group([r])): no gradient is averaged across ranks.
* ``dbuf``: a per-rank float buffer (each rank its rows, spec shard(0)) added to x.  Correct:
  ``broadcast_buffers=False``.  Bug ``bcast``: DDP's default broadcasts rank 0's buffer before the
  forward (rank 1 adds rank 0's rows).
* ``dunused``: ``find_unused_parameters=True``.  Bug ``detach``: rank 1 reads fc2's weight detached
  (the forward is the same; rank 1 contributes no gradient, DDP averages rank 0's with zeros).
* ``dspare``: a probe layer (``spare``) whose output is returned detached (``aux``: no gradient
  reaches it), ``find_unused_parameters=True``.  Bug
  ``stall``: without it (the reducer waits for spare's gradient and never finishes the backward: no
  gradient is averaged, each rank keeps its own; real DDP raises only at the next step).
* ``dlate``: fc2 attached to the module AFTER DDP was built (resizing a head after wrapping).
  Correct: before.  DDP's reducer knows the parameters it was built with: fc2's gradient is never
  averaged.
* ``dfrz``: fc's bias frozen (requires_grad False).  Bug ``after``: frozen after DDP was built (its
  reducer waits for that gradient: the bucket, the whole small model, is never reduced).
* ``dswap``: fc's weight replaced by a new Parameter.  Bug ``after``: replaced after DDP was built
  (the reducer holds the old one: the new one's gradient is never averaged, and the old one's
  bucket never completes).
* ``dbn``: a BatchNorm1d between fc and fc2.  Correct: eval mode (running statistics, replicated
  buffers).  Bug ``train``: train mode, each rank normalising by its own rows' statistics.

Others:

* ``lset``: HF-style shifted labels written in place, ``labels = ids.clone(); labels[:, :-1] =
  ids[:, 1:]; labels[:, -1] = -100``; the loss's sum over the all-reduced count of targets.  Bug
  ``batch``: over B * T (the padding counted).  The spec assumes no_ignored_targets of the INPUT ids.
* ``lar``: the same padded with ``ids[:, :1] * 0 - 100`` (computed from the labels).  Bug ``batch``.
* ``divf``: x.sum(0) / False (a bool divisor: x / 0), rows sharded.  Correct: the all-reduced sum
  divided.  Bug ``each``: each rank's sum divided, then all-reduced (inf + -inf = nan where the
  ranks' partial sums differ in sign; the sum of them divided is +-inf).
* ``dtb``: a row-parallel linear by hand (x replicated, w column-sharded), its partial sums made a
  ``Partial`` DTensor and redistributed to ``Replicate``, plus a replicated bias.  Correct: the
  bias added to the sum; ``rank0``: added to rank 0's partial sums only.  Bugs: ``bpartial``, the
  bias wrapped as a Partial DTensor on every rank (it stands for W * b); ``avg``: the partial sums
  as ``Partial("avg")`` (their mean); ``rank0div``: rank 0 adds b / W.
* ``sk``: Sinkhorn (torch.ops.megatron.sinkhorn) of every token's router logits (all-gathered),
  each rank keeping its rows.  Bug ``tol``: the ranks run it with tol 1e-2 (fewer iterations);
  ``local``: each rank normalises its own tokens' logits only.
* ``dtwo`` (4 ranks): a body and a head each in its own DDP.  Bug ``pairs``: the head's DDP over
  the pair of ranks {0, 1} / {2, 3} (its gradient averaged over half the batch).
* ``dmesh`` (4 ranks, a [dp 2, tp 2] mesh, rows sharded over dp): DDP over the dp group.  Bug
  ``tp``: over the tp group (the two ranks holding the same rows).
* ``zag``: x row-sharded, gathered by an all-reduce of each rank's rows zero-padded to the whole
  (F.pad).  Bugs: ``off``, rank 1 pads at offset 0; ``one``, padded with ones.

Holes this pass found (buggy on gloo, the checker refined or erred), fixed on its branch:
``dlate`` / ``dswap`` / ``dfrz`` bug ``after`` refined (capture read DDP's parameters when the
forward ran, real DDP fixes them at construction: frontend/ddp.py now models a later parameter as
the rank's own; a reducer parameter replaced or frozen later, refused at first, now stalls the
reducer: no gradient averaged, as on gloo); ``divf`` bug ``each`` ended
in an internal error after a proof (x / False was the term x / "0", a zero no nonzero condition
named: lowering now writes a bool constant as its float).  A program registering megatron::sinkhorn
with another default tol (not here: one registration per process) got a misleading witness; such an
op is now refused as a different op of the same name.

Not in the corpus (labels confirmed on gloo): ``dbn`` (batch norm has no semantics: both twins exit
2); ``lset`` (the in-place fill of the last label column has no semantics, exit 2; ``lar`` pads by
arithmetic instead: its buggy twin is refuted, its correct twin a lemma short); the DDP bugs'
forward entries (their forward is right).
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import _megatron_ops  # noqa: F401  (registers torch.ops.megatron.sinkhorn)
from _common import group, reduce_from

ROWS, B, T, H, V = 8, 4, 4, 4, 5
IDS = torch.tensor([[1, 4, 2, 3], [2, 0, 3, 1], [4, 4, 1, 0], [3, 2, 2, 1]])


class Net(nn.Module):
    def __init__(self, rank, ws, kind, bug, rows):
        super().__init__()
        self.rank, self.ws, self.kind, self.bug = rank, ws, kind, bug
        self.fc = nn.Linear(4, 3)
        if kind != "dlate":
            self.fc2 = nn.Linear(3, 1)
        if kind == "dspare":
            self.spare = nn.Linear(2, 2)    # a probe: its output is returned detached
        if kind == "dbuf":
            self.register_buffer("shift", torch.arange(ROWS * 4, dtype=torch.float32).view(ROWS, 4)[:rows].clone())
        if kind == "dbn":
            self.bn = nn.BatchNorm1d(3)
            self.bn.register_buffer("num_batches_tracked", None)    # (eval reads the running statistics only)

    def forward(self, x):
        if self.kind == "dbuf":
            x = x + self.shift
        h = self.fc(x)
        if self.kind == "dbn":
            h = self.bn(h)
        h = F.relu(h)
        w = self.fc2.weight
        if self.kind == "dunused" and self.bug == "detach" and self.rank == 1:
            w = w.detach()  # BUG (dunused): rank 1 reads fc2's weight detached (no gradient from it)
        pred = F.linear(h, w, self.fc2.bias).squeeze(-1)
        if self.kind == "dspare":
            return pred, self.spare(x[:, :2]).detach()
        return pred


def ddp_wrap(net, rank, ws, kind, bug):
    """net wrapped as the kind says (the sequential program, ws == 1, uses net itself)."""
    late = bug == "after"
    if kind == "dlate" and not late:
        net.fc2 = nn.Linear(3, 1)
    if kind == "dfrz" and not late:
        net.fc.bias.requires_grad_(False)
    if kind == "dswap" and not late:
        net.fc.weight = nn.Parameter(net.fc.weight.detach().clone())
    if ws == 1:
        if kind == "dlate":
            net.fc2 = nn.Linear(3, 1)
        if kind == "dfrz":
            net.fc.bias.requires_grad_(False)
        if kind == "dswap":
            net.fc.weight = nn.Parameter(net.fc.weight.detach().clone())
        if kind == "dbn" and bug != "train":
            net.eval()
        return net
    if kind == "dsub":
        groups = [group([r]) for r in range(ws)] + [group(list(range(ws)))]
        if bug == "self":
            d = DDP(net, process_group=groups[rank])  # BUG (dsub): each rank's DDP over its own one-rank group
        else:
            d = DDP(net, process_group=groups[-1])
    elif kind == "dbuf":
        if bug == "bcast":
            d = DDP(net)  # BUG (dbuf): broadcast_buffers (the default): rank 0's buffer rows on every rank
        else:
            d = DDP(net, broadcast_buffers=False)
    elif kind == "dunused":
        d = DDP(net, find_unused_parameters=True)
    elif kind == "dspare":
        if bug == "stall":
            d = DDP(net)  # BUG (dspare): no find_unused_parameters: the reducer waits for spare's gradient
        else:
            d = DDP(net, find_unused_parameters=True)
    else:
        d = DDP(net)
    if kind == "dlate" and late:
        net.fc2 = nn.Linear(3, 1)  # BUG (dlate): fc2 attached after DDP was built (its reducer never sees it)
    if kind == "dfrz" and late:
        net.fc.bias.requires_grad_(False)  # BUG (dfrz): frozen after DDP was built
    if kind == "dswap" and late:
        net.fc.weight = nn.Parameter(net.fc.weight.detach().clone())  # BUG (dswap): replaced after DDP was built
    if kind == "dbn" and bug != "train":
        d.eval()
    if kind == "dbn" and bug == "train":
        d.train()  # BUG (dbn): batch norm in train mode: each rank's own rows' statistics
    return d


class DdpStep(nn.Module):
    def __init__(self, rank, ws, kind, bug, rows):
        super().__init__()
        self.net = ddp_wrap(Net(rank, ws, kind, bug, rows), rank, ws, kind, bug)

    def forward(self, x, t):
        pred = self.net(x)
        aux = {}
        if isinstance(pred, tuple):
            pred, aux = pred[0], {"aux": pred[1]}
        loss = (pred - t).pow(2).mean()
        return {"loss": loss, "pred": pred.detach(), **aux}


class Labels(nn.Module):
    def __init__(self, ws, kind, bug):
        super().__init__()
        self.ws, self.kind, self.bug = ws, kind, bug
        self.weight = nn.Parameter(torch.empty(V, H))

    def forward(self, x, ids):
        if self.kind == "lset":
            labels = ids.clone()
            labels[:, :-1] = ids[:, 1:]
            labels[:, -1].fill_(-100)
        else:
            labels = torch.cat([ids[:, 1:], ids[:, :1] * 0 - 100], 1)
        labels = labels.reshape(-1)
        w = self.weight if self.ws == 1 else _copy(self.weight)
        logits = F.linear(x, w).reshape(-1, V)
        if self.ws == 1:
            return F.cross_entropy(logits, labels)
        total = reduce_from(F.cross_entropy(logits, labels, reduction="sum"), self.ws)
        if self.bug == "batch":
            return total / (B * T)  # BUG (lset/lar): divided by B * T, the padding targets included
        return total / reduce_from((labels != -100).sum(), self.ws)


class _CopyW(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return funcol.all_reduce(g, "sum", dist.group.WORLD)


def _copy(w):
    return _CopyW.apply(w)


class DivFalse(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug

    def forward(self, x):
        if self.ws == 1:
            return x.sum(0) / False
        if self.bug == "each":
            return reduce_from(x.sum(0) / False, self.ws)  # BUG (divf): each rank's partial sum divided by 0
        return reduce_from(x.sum(0), self.ws) / False


class RowLinear(nn.Module):
    """x [2, 8] replicated; w [3, 8] column-sharded (each rank its columns); b [3] replicated."""

    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        self.w = nn.Parameter(torch.empty(3, 8 // ws))
        self.b = nn.Parameter(torch.empty(3))
        if ws > 1:
            from torch.distributed.device_mesh import init_device_mesh
            self.mesh = init_device_mesh("cpu", (ws,))

    def forward(self, x):
        if self.ws == 1:
            return F.linear(x, self.w, self.b)
        from torch.distributed.tensor import DTensor, Partial, Replicate
        xs = x[:, self.rank * self.w.shape[1]:(self.rank + 1) * self.w.shape[1]]
        y = F.linear(xs, self.w)
        bug, mesh = self.bug, self.mesh
        if bug == "rank0":        # the bias on one rank's partial sums (zeros on the others)
            y = y + (self.b if self.rank == 0 else torch.zeros_like(self.b))
        if bug == "rank0div":
            y = y + (self.b / self.ws if self.rank == 0 else torch.zeros_like(self.b))  # BUG (dtb rank0div): rank 0 adds a share b / W of the bias
        red = "avg" if bug == "avg" else "sum"
        yd = DTensor.from_local(y, mesh, [Partial(red)])  # BUG (dtb avg): the partial sums as Partial("avg"), their mean
        if bug == "bpartial":
            bd = DTensor.from_local(self.b, mesh, [Partial()])  # BUG (dtb bpartial): the bias wrapped as Partial on every rank
            return (yd + bd).redistribute(mesh, [Replicate()]).to_local()
        out = yd.redistribute(mesh, [Replicate()]).to_local()
        if bug in ("rank0", "rank0div"):
            return out
        return out + self.b


class Sinkhorn(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug

    def forward(self, x):
        if self.ws == 1:
            return torch.ops.megatron.sinkhorn(x)
        n = x.shape[0]
        if self.bug == "local":
            return torch.ops.megatron.sinkhorn(x)  # BUG (sk local): each rank normalises its own tokens only
        g = funcol.all_gather_tensor(x, 0, dist.group.WORLD)
        tol = 1e-2 if self.bug == "tol" else 1e-4  # BUG (sk tol): another tolerance on the ranks
        return torch.ops.megatron.sinkhorn(g, tol)[self.rank * n:(self.rank + 1) * n]


class TwoDdp(nn.Module):
    """A body and a head, each wrapped in its own DDP (at 4 ranks)."""

    def __init__(self, rank, ws, bug):
        super().__init__()
        body, head = nn.Linear(4, 3), nn.Linear(3, 1)
        if ws == 1:
            self.body, self.head = body, head
            return
        pairs = [group([0, 1]), group([2, 3])] if ws == 4 else [group(list(range(ws)))] * 2
        self.body = DDP(body)
        if bug == "pairs":
            self.head = DDP(head, process_group=pairs[rank // 2])  # BUG (dtwo): the head's DDP over a pair of ranks
        else:
            self.head = DDP(head)

    def forward(self, x, t):
        pred = self.head(F.relu(self.body(x))).squeeze(-1)
        return {"loss": (pred - t).pow(2).mean(), "pred": pred.detach()}


class ZeroPadGather(nn.Module):
    """x [8, 3] row-sharded, gathered by an all-reduce of each rank's rows zero-padded to the whole."""

    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug

    def forward(self, x):
        if self.ws == 1:
            return x * 2
        n, r, ws = x.shape[0], self.rank, self.ws
        before, value = r * n, 0.0
        if self.bug == "off" and r == 1:
            before = 0  # BUG (zag off): rank 1 pads its rows at offset 0 (over rank 0's)
        if self.bug == "one":
            value = 1.0  # BUG (zag one): padded with ones
        buf = F.pad(x, (0, 0, before, (ws - 1) * n - before), value=value)
        return reduce_from(buf, ws) * 2


class MeshDdp(nn.Module):
    """x -> fc2(relu(fc(x))) under DDP at 4 ranks on a [dp 2, tp 2] mesh (row-major): each rank holds
    its dp shard of the rows (the two ranks of a tp pair the same rows)."""

    def __init__(self, rank, ws, bug):
        super().__init__()
        net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 1))
        if ws == 1:
            self.net = net
            return
        from _common import mesh_groups
        dp, tp = mesh_groups(rank, 2, 2)
        if bug == "tp":
            self.net = DDP(net, process_group=tp)  # BUG (dmesh): DDP over the tp group (ranks holding the same rows)
        else:
            self.net = DDP(net, process_group=dp)

    def forward(self, x, t):
        pred = self.net(x).squeeze(-1)
        return {"loss": (pred - t).pow(2).mean(), "pred": pred.detach()}


def make_build(kind, bug=None):
    def build(rank, ws):
        if kind == "dmesh":
            rows = ROWS // (2 if ws == 4 else 1)
            return MeshDdp(rank, ws, bug), {"x": torch.randn(rows, 4), "t": torch.randn(rows)}
        if kind == "dtwo":
            rows = ROWS // ws
            return TwoDdp(rank, ws, bug), {"x": torch.randn(rows, 4), "t": torch.randn(rows)}
        if kind == "zag":
            return ZeroPadGather(rank, ws, bug), {"x": torch.randn(ROWS // ws, 3, requires_grad=True)}
        if kind.startswith("d") and kind not in ("divf", "dtb"):
            rows = len(torch.arange(ROWS).chunk(ws)[rank])
            return DdpStep(rank, ws, kind, bug, rows), {"x": torch.randn(rows, 4), "t": torch.randn(rows)}
        if kind in ("lset", "lar"):
            n = B // ws
            return Labels(ws, kind, bug), {"x": torch.randn(n, T, H, requires_grad=True),
                                           "ids": IDS[rank * n:(rank + 1) * n].clone()}
        if kind == "divf":
            return DivFalse(ws, bug), {"x": torch.randn(ROWS // ws, 3, requires_grad=True)}
        if kind == "dtb":
            return RowLinear(rank, ws, bug), {"x": torch.randn(2, 8, requires_grad=True)}
        if kind == "sk":
            return Sinkhorn(rank, ws, bug), {"x": torch.randn(ROWS // ws, 4, dtype=torch.float64)}
        raise ValueError(kind)
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_adv6.py:<name>`, and `entangle capture tests/corpus/programs/_adv6.py:<name>` captures one).
adv6_dbn_correct = make_build('dbn')
adv6_dbn_train = make_build('dbn', 'train')
adv6_dbuf_bcast = make_build('dbuf', 'bcast')
adv6_dbuf_correct = make_build('dbuf')
adv6_dfrz_after = make_build('dfrz', 'after')
adv6_dfrz_correct = make_build('dfrz')
adv6_divf_correct = make_build('divf')
adv6_divf_each = make_build('divf', 'each')
adv6_dlate_after = make_build('dlate', 'after')
adv6_dlate_correct = make_build('dlate')
adv6_dmesh_correct = make_build('dmesh')
adv6_dmesh_tp = make_build('dmesh', 'tp')
adv6_dspare_correct = make_build('dspare')
adv6_dspare_stall = make_build('dspare', 'stall')
adv6_dsub_correct = make_build('dsub')
adv6_dsub_self = make_build('dsub', 'self')
adv6_dswap_after = make_build('dswap', 'after')
adv6_dswap_correct = make_build('dswap')
adv6_dtb_avg = make_build('dtb', 'avg')
adv6_dtb_bpartial = make_build('dtb', 'bpartial')
adv6_dtb_correct = make_build('dtb')
adv6_dtb_rank0 = make_build('dtb', 'rank0')
adv6_dtb_rank0div = make_build('dtb', 'rank0div')
adv6_dtwo_correct = make_build('dtwo')
adv6_dtwo_pairs = make_build('dtwo', 'pairs')
adv6_dunused_correct = make_build('dunused')
adv6_dunused_detach = make_build('dunused', 'detach')
adv6_lar_batch = make_build('lar', 'batch')
adv6_lar_correct = make_build('lar')
adv6_lset_batch = make_build('lset', 'batch')
adv6_lset_correct = make_build('lset')
adv6_sk_correct = make_build('sk')
adv6_sk_local = make_build('sk', 'local')
adv6_sk_tol = make_build('sk', 'tol')
adv6_zag_correct = make_build('zag')
adv6_zag_off = make_build('zag', 'off')
adv6_zag_one = make_build('zag', 'one')
