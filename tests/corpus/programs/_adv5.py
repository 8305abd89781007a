"""Adversarial programs (helper-adv5): assumption scopes, joint-mode backward paths, collectives'
arguments, signed zeros, views.  Every kind has a correct twin; ``bug`` picks the wrong variant
(the ``# BUG`` lines).

* ``bpad``: a causal LM's shifted labels (HF style): labels = ids[:, 1:] followed by a column of
  -100 from an int BUFFER (the program's own constant, not an input label); cross-entropy mean
  over the real targets.  ids / x / the buffer row-sharded; the ranks' loss sums all-reduced over
  the all-reduced count of targets != -100.  Bug ``batch``: divided by B * T, padding included.
  The spec assumes no_ignored_targets: true of the INPUT labels (ids), not of the buffer's.
* ``fpad``: the same padded with ids.new_full(..., -100) (a constant the program makes).  Bug ``batch``.
* ``gpad``: the same padded with a module-level tensor constant PAD (full of -100) expanded.  Bug ``batch``.
* ``mpad``: labels set to -100 where the input mask is 0 (masked_fill, as loss_pad), and the spec
  CUTS the graphs at the padded labels (``[cut] masked_fill``, a tensor of both graphs treated as
  an input): no_ignored_targets is still true of the programs' input labels.  Bug ``batch``.
* ``twice`` (joint): a replicated weight read twice by data-parallel rows, out = x W^T + relu(x) W^T.
  Correct: both reads under one copy_to.  Bug ``once``: the second read without copy_to (its
  gradient never all-reduced).
* ``detach`` (joint): hidden-sharded centring x - mean(x, -1), the row sums all-reduced.  Bug
  ``detach``: the row sum of x.detach() (the forward is the same, the mean's gradient is lost).
* ``fnb`` (joint): a column-parallel linear as an autograd.Function (backward: the input's gradient
  all-reduced).  Bug ``scale``: the backward divides it by W as well.
* ``bsrc``: rows of x sharded, out = rank 0's rows broadcast from rank 0, times 2 (an autograd.Function
  whose backward reduces the ranks' gradient shares to src, zero elsewhere).  Bug ``src``: from rank 1;
  ``keep`` (joint): the backward an all-reduce, every rank keeping the sum (x's rows not broadcast get one).
* ``msrc``: ``bsrc`` doubled before the broadcast (the rank not src gets zeros_like times 2 back).
  Twins ``src`` (forward, from rank 1) and ``keep`` (joint).
* ``rsop``: a row-parallel matmul's partials reduce-scattered (backward: all-gathered).  Bug ``max``:
  reduce op max.
* ``agv``: x column-sharded, all-gathered along dim 0 and put back by chunk + cat.  Bug ``view``:
  the gathered [W * r, c] viewed to [r, W * c] (interleaves rows of one rank).
* ``grev``: x row-sharded, all-gathered over the group built from the ranks in reverse order
  (dist.new_group orders its members by rank); backward: reduce-scattered over the same group
  (_common.gather).  Twins ``fwd``: the group in rank order; ``list``: funcol given the list of
  ranks in reverse order.
* ``a2a``: rows of x [6, 3] redistributed unevenly by all_to_all_single (rank 0 keeps 2 rows,
  rank 1 gets 4), each rank weighs its rows by the matching rows of P, partial sums all-reduced.
  Bug ``order``: rank 1 takes its rows as its own first (they arrive by source rank).
* ``nzero``: out = x * sigmoid(-1 / relu-like(x)) where relu-like is x * (x > 0): -0.0 at negative
  x, a gate of 1 there (detached: its own gradient through 1 / -0.0 is 0 * inf = NaN).
  Correct: the ranks compute it on their rows.  Bug ``acc``: the rank starts an accumulator at 0.0
  and adds to it (-0.0 + 0.0 = +0.0: the reciprocal flips from +inf to -inf).
* ``floor``: integer floor division of int ids (negative ones too).  Bug ``trunc``: rounding_mode trunc.
* ``unfold``: x [8, 3] row-sharded, out = x.unfold(0, 2, 2).  Bug ``view``: the rank's rows viewed
  [n / 2, 3, 2] (interleaves the window with the columns).
* ``isel`` (joint): rows of x (column-sharded) picked with duplicates by an autograd.Function whose
  backward index_adds.  Bug ``copy``: the backward index_copies (duplicates keep one gradient).
* ``scat``: scatter_add along the last dim of src^T (src [8, 3] row-sharded) into [3, 4] at idx^T
  (collisions within and across ranks), partials all-reduced.
  Bug ``scatter``: the ranks scatter (overwrite) instead of scatter_add.
* ``inpl``: x * 2 written in place through a view of a clone.  Bug ``narrow``: rank 0's view is
  its first two columns only.
* ``astr``: every other row of x (row-sharded) by as_strided.  Bug ``rows``: strides of the first rows.

Not in the corpus (labels confirmed on gloo; the checker cannot decide them): refused (exit 2) --
``floor`` (floor_divide; div trunc of an int tensor), ``unfold``, ``astr`` (as_strided), ``scat``
(scatter / scatter_add of several index columns).  ``isel`` joint bug ``copy`` is refuted: index_copy
at ids not shown distinct is a value the checker does not know (helper-isel).  Once false alarms, now proven (helper-falarm):
``a2a`` (the all_to_all's empty block left out of the received rows), ``isel`` forward (index_select
lowered as a lookup; a lookup of a column-split table looks up every part), ``fpad`` (the constant
column split at the row parts), ``msrc`` joint (zeros times a positive constant folded).  Soundness
holes found here (buggy on gloo, the checker refined): ``bpad`` / ``gpad`` / ``mpad`` bug ``batch``
(since refuted), ``nzero`` bug ``acc`` (exact arithmetic: see the comment in corpus.py).
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

from _common import all_reduce, copy_to, gather, group, reduce_from

B, T, H, V = 4, 4, 4, 5
PAD = torch.full((1, 1), -100)
TARGETS = torch.tensor([1, 4, 2, 3, 2, 0, 3, 1])
MASK = torch.tensor([1, 1, 0, 0, 1, 1, 1, 0])
IDS = torch.tensor([[1, 4, 2, 3], [2, 0, 3, 1], [4, 4, 1, 0], [3, 2, 2, 1]])


class MaskPad(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.weight = nn.Parameter(torch.empty(V, H))

    def forward(self, x, target, mask):
        target = target.masked_fill(mask == 0, -100)
        logits = F.linear(x, copy_to(self.weight, self.ws))
        if self.ws == 1:
            return F.cross_entropy(logits, target)
        total = reduce_from(F.cross_entropy(logits, target, reduction="sum"), self.ws)
        if self.bug == "batch":
            return total / MASK.numel()  # BUG (mpad): divided by the batch size, padding targets included
        return total / reduce_from((target != -100).sum(), self.ws)


class ShiftPad(nn.Module):
    def __init__(self, ws, kind, bug):
        super().__init__()
        self.ws, self.kind, self.bug = ws, kind, bug
        self.weight = nn.Parameter(torch.empty(V, H))
        if kind == "bpad":
            self.register_buffer("pad", torch.full((B // ws, 1), -100))

    def forward(self, x, ids):
        if self.kind == "gpad":       # a module-level tensor constant
            pad = PAD.expand(ids.shape[0], 1)
        else:
            pad = self.pad if self.kind == "bpad" else ids.new_full((ids.shape[0], 1), -100)
        labels = torch.cat([ids[:, 1:], pad], 1).reshape(-1)
        logits = F.linear(x, copy_to(self.weight, self.ws)).reshape(-1, V)
        if self.ws == 1:
            return F.cross_entropy(logits, labels)
        total = reduce_from(F.cross_entropy(logits, labels, reduction="sum"), self.ws)
        if self.bug == "batch":
            return total / (B * T)  # BUG (bpad/fpad): divided by B * T, the padding targets included
        return total / reduce_from((labels != -100).sum(), self.ws)


class Twice(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.weight = nn.Parameter(torch.empty(3, 4))

    def forward(self, x):
        w = copy_to(self.weight, self.ws)
        w2 = self.weight if self.bug == "once" else w  # BUG (twice): the second read without copy_to
        return F.linear(x, w) + F.linear(x.relu(), w2)


class Detach(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug

    def forward(self, x):
        if self.ws == 1:
            return x - x.mean(-1, keepdim=True)
        src = x.detach() if self.bug == "detach" else x  # BUG (detach): the row sum of a detached x
        s = all_reduce(src.sum(-1, keepdim=True), self.ws)
        return x - s / (x.shape[-1] * self.ws)


class _ColLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, ws, scale):
        ctx.save_for_backward(x, w)
        ctx.ws, ctx.scale = ws, scale
        return x @ w.t()

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gx = funcol.all_reduce(g @ w, "sum", dist.group.WORLD)
        if ctx.scale:
            gx = gx / ctx.ws  # BUG (fnb): the input's gradient divided by W
        return gx, g.t() @ x, None, None


class Fnb(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.weight = nn.Parameter(torch.empty(4 // ws, 4))

    def forward(self, x):
        if self.ws == 1:
            return F.linear(x, self.weight)
        return _ColLinear.apply(x, self.weight, self.ws, self.bug == "scale")


class _GatherRows(torch.autograd.Function):   # all-gather along dim 0 fwd, own rows bwd
    @staticmethod
    def forward(ctx, x, rank, ws):
        ctx.rank, ctx.ws = rank, ws
        return funcol.all_gather_tensor(x, 0, dist.group.WORLD)

    @staticmethod
    def backward(ctx, g):
        return g.chunk(ctx.ws, 0)[ctx.rank].contiguous(), None, None


class _Bcast(torch.autograd.Function):   # broadcast fwd; bwd: the ranks' gradients summed to src
    @staticmethod
    def forward(ctx, x, src, rank, keep):
        ctx.src, ctx.rank, ctx.keep = src, rank, keep
        return funcol.broadcast(x, src, dist.group.WORLD)

    @staticmethod
    def backward(ctx, g):       # a reduce to src: every rank's share of the gradient, held by src only
        s = funcol.all_reduce(g.contiguous(), "sum", dist.group.WORLD)
        if ctx.keep:
            return s, None, None, None  # BUG (bsrc): every rank keeps the summed gradient (an all-reduce)
        return (s if ctx.rank == ctx.src else torch.zeros_like(s)), None, None, None


class _RScatter(torch.autograd.Function):  # reduce-scatter fwd (dim 0, op), all-gather bwd
    @staticmethod
    def forward(ctx, x, op):
        return funcol.reduce_scatter_tensor(x, op, 0, dist.group.WORLD)

    @staticmethod
    def backward(ctx, g):
        return funcol.all_gather_tensor(g.contiguous(), 0, dist.group.WORLD), None


class Coll(nn.Module):
    def __init__(self, rank, ws, kind, bug):
        super().__init__()
        self.rank, self.ws, self.kind, self.bug = rank, ws, kind, bug
        if kind == "a2a":
            self.p = nn.Parameter(torch.empty(6, 3))
        if kind == "grev" and ws > 1:     # dist.new_group is collective: made here, not in forward
            self.g = group(list(range(ws)) if bug == "fwd" else list(reversed(range(ws))))

    def forward(self, x, y=None):
        k, ws, r = self.kind, self.ws, self.rank
        if k == "bsrc":
            if ws == 1:
                return x[:2] * 2
            src = 1 if self.bug == "src" else 0  # BUG (bsrc): broadcast from rank 1
            return _Bcast.apply(x, src, r, self.bug == "keep") * 2
        if k == "msrc":     # the same, doubled before the broadcast
            if ws == 1:
                return x[:2] * 2
            src = 1 if self.bug == "src" else 0  # BUG (msrc): the doubled rows sent from rank 1
            return _Bcast.apply(x * 2, src, r, self.bug == "keep")
        if k == "rsop":
            if ws == 1:
                return x @ y
            op = "max" if self.bug == "max" else "sum"  # BUG (rsop): the reduce-scatter's op
            return _RScatter.apply((x @ y).contiguous(), op)
        if k == "agv":
            if ws == 1:
                return x * 2
            g = _GatherRows.apply((x * 2).contiguous(), r, ws)
            if self.bug == "view":
                return g.view(x.shape[0], -1)  # BUG (agv): the gathered rows viewed, not put side by side
            return torch.cat(g.chunk(ws, 0), 1)
        if k == "grev":
            if ws == 1:
                return x * 2
            # all-gather fwd, reduce-scatter bwd over the same group (or list of ranks: funcol
            # resolves a list to a group itself)
            return gather((x * 2).contiguous(), 0, ws, list(reversed(range(ws))) if self.bug == "list" else self.g)
        if k == "a2a":
            if ws == 1:
                return (x * self.p).sum(0)
            ins, outs = ([2, 1], [2, 0]) if r == 0 else ([0, 3], [1, 3])
            y = funcol.all_to_all_single(x.contiguous(), outs, ins, dist.group.WORLD)
            if r == 0:
                p = self.p[0:2]
            elif self.bug == "order":
                p = torch.cat([self.p[3:6], self.p[2:3]])  # BUG (a2a): rank 1 takes its own rows first
            else:
                p = self.p[2:6]
            return reduce_from((y * p).sum(0), ws)
        raise ValueError(k)


class Elem(nn.Module):
    def __init__(self, rank, ws, kind, bug):
        super().__init__()
        self.rank, self.ws, self.kind, self.bug = rank, ws, kind, bug

    def forward(self, x, y=None):
        k, ws = self.kind, self.ws
        bug = self.bug if ws > 1 else None     # the sequential program is the correct one
        if k == "nzero":
            y = x * (x > 0).to(x.dtype)
            if bug == "acc":
                acc = 0.0
                y = acc + y  # BUG (nzero): an accumulator started at 0.0 (-0.0 + 0.0 = +0.0)
            # a gate taken as a constant of the step (detached): through 1 / -0.0 its own gradient
            # is 0 * inf; it is 1 where x < 0 (sigmoid(+inf)), 0 if that zero turns +0.0
            return x * torch.sigmoid(-1 / y.detach())
        if k == "floor":
            if bug == "trunc":
                return torch.div(x, 3, rounding_mode="trunc")  # BUG (floor): trunc, not floor
            return x // 3
        if k == "unfold":
            if bug == "view":
                return x.view(x.shape[0] // 2, 3, 2)  # BUG (unfold): a view for the window
            return x.unfold(0, 2, 2)
        if k == "scat":
            src, idx = x.t(), y.t()
            out = src.new_zeros(3, 4)
            if bug == "scatter":
                out = out.scatter(1, idx, src)  # BUG (scat): scatter, not scatter_add
            else:
                out = out.scatter_add(1, idx, src)
            return reduce_from(out, ws)
        if k == "inpl":
            y = x.clone()
            if bug == "narrow" and self.rank == 0:
                y[:, :2].mul_(2)  # BUG (inpl): rank 0 writes through its first two columns only
            else:
                y.view(-1).mul_(2)
            return y
        if k == "astr":
            n = x.shape[0]
            st = (3, 1) if bug == "rows" else (6, 1)  # BUG (astr): the strides of the first rows
            return x.contiguous().as_strided((n // 2, 3), st)
        raise ValueError(k)


class _Rows(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, ids, copy):
        ctx.save_for_backward(ids)
        ctx.n, ctx.copy = x.shape[0], copy
        return x.index_select(0, ids)

    @staticmethod
    def backward(ctx, g):
        ids, = ctx.saved_tensors
        z = g.new_zeros(ctx.n, g.shape[1])
        if ctx.copy:
            return z.index_copy(0, ids, g), None, None  # BUG (isel): index_copy keeps one gradient of a duplicate
        return z.index_add(0, ids, g), None, None


class Isel(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug

    def forward(self, x, ids):
        if self.ws == 1:
            return x.index_select(0, ids)
        return _Rows.apply(x, ids, self.bug == "copy")


SCAT_IDX = torch.tensor([[0, 1, 0], [0, 3, 2], [2, 1, 0], [3, 3, 1], [0, 2, 2], [1, 0, 3], [2, 2, 2], [0, 1, 3]])
FLOOR_IDS = torch.tensor([[-7, 5, -1], [4, -3, 8], [-6, 2, 0], [7, -8, 1]])


def make_build(kind, bug=None):
    def build(rank, ws):
        if kind in ("bpad", "fpad", "gpad"):
            n = B // ws
            return ShiftPad(ws, kind, bug), {"x": torch.randn(n, T, H, requires_grad=True),
                                             "ids": IDS[rank * n:(rank + 1) * n].clone()}
        if kind == "mpad":
            n = 8 // ws
            return MaskPad(ws, bug), {"x": torch.randn(n, H, requires_grad=True),
                                      "target": TARGETS[rank * n:(rank + 1) * n].clone(),
                                      "mask": MASK[rank * n:(rank + 1) * n].clone()}
        if kind == "twice":
            return Twice(ws, bug), {"x": torch.randn(4 // ws, 4, requires_grad=True)}
        if kind == "detach":
            return Detach(ws, bug), {"x": torch.randn(4, 8 // ws, requires_grad=True)}
        if kind == "fnb":
            return Fnb(ws, bug), {"x": torch.randn(3, 4, requires_grad=True)}
        if kind in ("bsrc", "msrc", "agv", "grev"):
            shape = {"bsrc": (4 // ws, 3), "msrc": (4 // ws, 3), "agv": (2, 6 // ws), "grev": (4 // ws, 3)}[kind]
            return Coll(rank, ws, kind, bug), {"x": torch.randn(*shape, requires_grad=True)}
        if kind == "rsop":
            return Coll(rank, ws, kind, bug), {"x": torch.randn(4, 4 // ws, requires_grad=True),
                                               "y": torch.randn(4 // ws, 4, requires_grad=True)}
        if kind == "a2a":
            return Coll(rank, ws, kind, bug), {"x": torch.randn(6 // ws, 3)}
        if kind in ("nzero", "inpl"):
            return Elem(rank, ws, kind, bug), {"x": torch.randn(4 // ws, 3, requires_grad=True)}
        if kind == "floor":
            return Elem(rank, ws, kind, bug), {"x": FLOOR_IDS[rank * 4 // ws:(rank + 1) * 4 // ws].clone()}
        if kind in ("unfold", "astr"):
            return Elem(rank, ws, kind, bug), {"x": torch.randn(8 // ws, 3, requires_grad=kind == "unfold")}
        if kind == "scat":
            n = 8 // ws
            return Elem(rank, ws, kind, bug), {"x": torch.randn(n, 3), "y": SCAT_IDX[rank * n:(rank + 1) * n].clone()}
        if kind == "isel":
            return Isel(ws, bug), {"x": torch.randn(4, 6 // ws, requires_grad=True),
                                   "ids": torch.tensor([0, 0, 3, 3, 1])}
        raise ValueError(kind)
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_adv5.py:<name>`, and `entangle capture tests/corpus/programs/_adv5.py:<name>` captures one).
adv5_a2a_correct = make_build('a2a')
adv5_a2a_order = make_build('a2a', 'order')
adv5_agv_correct = make_build('agv')
adv5_agv_view = make_build('agv', 'view')
adv5_astr_correct = make_build('astr')
adv5_astr_rows = make_build('astr', 'rows')
adv5_bpad_batch = make_build('bpad', 'batch')
adv5_bpad_correct = make_build('bpad')
adv5_bsrc_correct = make_build('bsrc')
adv5_bsrc_keep = make_build('bsrc', 'keep')
adv5_bsrc_src = make_build('bsrc', 'src')
adv5_detach_correct = make_build('detach')
adv5_detach_detach = make_build('detach', 'detach')
adv5_floor_correct = make_build('floor')
adv5_floor_trunc = make_build('floor', 'trunc')
adv5_fnb_correct = make_build('fnb')
adv5_fnb_scale = make_build('fnb', 'scale')
adv5_fpad_batch = make_build('fpad', 'batch')
adv5_fpad_correct = make_build('fpad')
adv5_gpad_batch = make_build('gpad', 'batch')
adv5_gpad_correct = make_build('gpad')
adv5_grev_fwd = make_build('grev', 'fwd')
adv5_grev_list = make_build('grev', 'list')
adv5_grev_rev = make_build('grev')
adv5_inpl_correct = make_build('inpl')
adv5_inpl_narrow = make_build('inpl', 'narrow')
adv5_isel_copy = make_build('isel', 'copy')
adv5_isel_correct = make_build('isel')
adv5_mpad_batch = make_build('mpad', 'batch')
adv5_mpad_correct = make_build('mpad')
adv5_msrc_correct = make_build('msrc')
adv5_msrc_keep = make_build('msrc', 'keep')
adv5_msrc_src = make_build('msrc', 'src')
adv5_nzero_acc = make_build('nzero', 'acc')
adv5_nzero_correct = make_build('nzero')
adv5_rsop_correct = make_build('rsop')
adv5_rsop_max = make_build('rsop', 'max')
adv5_scat_correct = make_build('scat')
adv5_scat_scatter = make_build('scat', 'scatter')
adv5_twice_correct = make_build('twice')
adv5_twice_once = make_build('twice', 'once')
adv5_unfold_correct = make_build('unfold')
adv5_unfold_view = make_build('unfold', 'view')
