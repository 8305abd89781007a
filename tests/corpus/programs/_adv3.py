"""Adversarial programs (helper-adv3) on the features landed with the bmm / permute / pick / all /
padding_idx / concat-regroup / size-1 reduction lemmas and the batched-receive capture check.  Every
kind has a correct twin; ``bug`` picks the wrong variant (the ``# BUG`` lines).  Two ranks.

* ``pp``: stage 0 sends h = relu(fc1 x); stage 1 (its own input u) fills a buffer with u, receives
  h into it and returns fc2(buf + old), old the buffer's contents BEFORE the receive (seq: fc2(h +
  u)).  Correct: old is a clone.  Bug ``view_old``: old = buf[:] is a view: it aliases the buffer,
  so after the receive it holds h (eager: fc2(2h)); the traced graph gives it the old u.
* ``ppv``: stage 1 receives into a view v = buf[:] of the buffer holding u.  Correct: fc2(buf + u)
  (eager: the view's write is buf's, so buf holds h).  Bug ``both``: fc2(v + buf) (eager 2h; the
  traced graph reads buf as u).
* ``emb`` (joint): vocab-parallel embedding (14 ids, 7 per rank), the seq table with padding_idx 10
  (rank 1's local row 3, mid-block).  Correct: rank 1 passes padding_idx 3; twin ``neg``: -4 (F.embedding
  makes it 7 - 4 = 3).  Bugs: ``wrong_rank`` rank 0 passes 3 (global row 3); ``neg_off`` rank 1
  passes -3 (row 4).
* ``emb0`` (joint): the same with padding_idx 3 (rank 0's row 3).  Twin ``neg`` rank 0 passes -4;
  bug ``wrong_rank``: rank 1 passes 3 (global row 10).
* ``xentu``: DP cross-entropy mean, 7 rows over 2 ranks (4 + 3).  Correct: local sums all-reduced
  over 7.  Bug ``mean_of_means``: local means all-reduced over W (unequal counts).
* ``xenti``: DP cross-entropy mean with ignore_index 0 that occurs (2 ignored on rank 0, none on
  rank 1).  Correct: summed losses over the all-reduced count.  Bug ``mean_of_means``.
* ``all``: rows kept where every element > -1, hidden-sharded.  Twin ``float``: the float mask's
  amin, combined as 1 - max(1 - ok).  Bugs: ``any`` the ranks take any(); ``sum`` combined by a sum.
* ``bmm``: scores q @ k^T per head (4 heads, square 3x3), heads sharded; ranks use torch.bmm.  Bugs:
  ``no_t`` k not transposed; ``flip`` the rank's k heads in reverse order.
* ``perm``: a hidden-sharded [4, 4, 4] cube gathered along dim 2 by permute(2, 0, 1), gather, and
  the inverse permute(1, 2, 0).  Bug ``same``: permuted back by (2, 0, 1) again (a 3-cycle twice).
* ``iscal``: x * (positions > 2) with sequence-sharded positions arange(s) + r s.  Bug ``rank_c``:
  the threshold 2 + r.
* ``cat``: a row-sharded x gathered, cut in blocks and concatenated back (nested last part, three
  blocks).  Bugs: ``overlap`` one block a row early; ``order`` two blocks swapped.
* ``red1``: x [4, 2] sharded along dim 1 (one column per rank); out = x.amax(1) / x.mean(1) /
  x.sum(1) keepdim.  Each rank's reduction is over its one column (size 1).  Bugs: ``amax_local``
  the rank's amax not combined; ``mean_no_div`` the ranks' means summed, not divided by W.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from _common import gather, reduce_from, reduce_max

IN, HID, OUT, BATCH = 4, 7, 3, 6


def _batch(ops):
    for req in dist.batch_isend_irecv(ops):
        req.wait()


class PP(nn.Module):
    def __init__(self, rank, ws, kind, bug):
        super().__init__()
        self.rank, self.ws, self.kind, self.bug = rank, ws, kind, bug
        if ws == 1 or rank == 0:
            self.fc1 = nn.Parameter(torch.empty(HID, IN))
        if ws == 1 or rank == 1:
            self.fc2 = nn.Parameter(torch.empty(OUT, HID))

    def forward(self, x, u):
        if self.ws == 1:
            return F.linear(F.relu(F.linear(x, self.fc1)) + u, self.fc2)
        if self.rank == 0:
            h = F.relu(F.linear(x, self.fc1))
            _batch([dist.P2POp(dist.isend, h, 1)])
            return h
        buf = u.clone()
        if self.kind == "pp":
            old = buf[:] if self.bug == "view_old" else buf.clone()  # BUG (pp): a view of the buffer kept as its old contents
            _batch([dist.P2POp(dist.irecv, buf, 0)])
            return F.linear(buf + old, self.fc2)
        v = buf[:]
        _batch([dist.P2POp(dist.irecv, v, 0)])
        h = v + buf if self.bug == "both" else buf + u  # BUG (ppv): the buffer read as if it held u
        return F.linear(h, self.fc2)


class Emb(nn.Module):
    VOCAB = 14

    def __init__(self, rank, ws, bug, pad=10):
        super().__init__()
        self.PAD = pad
        per = self.VOCAB // ws
        self.rank, self.ws, self.bug = rank, ws, bug
        self.start, self.end = rank * per, rank * per + per
        self.weight = nn.Parameter(torch.empty(per, 4))

    def forward(self, ids):
        if self.ws == 1:
            return F.embedding(ids, self.weight, padding_idx=self.PAD)
        mask = (ids < self.start) | (ids >= self.end)
        local = (ids - self.start).masked_fill(mask, 0)
        own = self.start <= self.PAD < self.end
        pads = {"neg": -4 if own else None, "wrong_rank": 3 if (self.rank == 0) == (self.PAD >= self.end - self.start) else None, "neg_off": -3 if own else None}
        pad = pads.get(self.bug, self.PAD - self.start if own else None)  # BUG (emb): the rank and row of padding_idx
        out = F.embedding(local, self.weight, padding_idx=pad).masked_fill(mask.unsqueeze(-1), 0.0)
        return reduce_from(out, self.ws)


class XEnt(nn.Module):
    def __init__(self, ws, kind, bug):
        super().__init__()
        self.ws, self.kind, self.bug = ws, kind, bug
        self.ignore = 0 if kind == "xenti" else -100

    def forward(self, logits, target):
        if self.ws == 1:
            return F.cross_entropy(logits, target, ignore_index=self.ignore)
        if self.bug == "mean_of_means":
            return reduce_from(F.cross_entropy(logits, target, ignore_index=self.ignore), self.ws) / self.ws  # BUG (xent): the mean of the ranks' means
        total = reduce_from(F.cross_entropy(logits, target, ignore_index=self.ignore, reduction="sum"), self.ws)
        if self.kind == "xentu":
            return total / 7
        count = reduce_from((target != self.ignore).sum().to(logits.dtype), self.ws)
        return total / count


class All(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug

    def forward(self, x):
        if self.ws == 1:
            return x * (x > -1).all(-1, keepdim=True).to(x.dtype)
        if self.bug == "float":
            ok = (x > -1).to(x.dtype).amin(-1, keepdim=True)
        else:
            ok = ((x > -1).any(-1, keepdim=True) if self.bug == "any" else (x > -1).all(-1, keepdim=True)).to(x.dtype)  # BUG (all): any() for all()
        if self.bug == "sum":
            ok = 1 - reduce_from(1 - ok, self.ws)  # BUG (all): the ranks' verdicts combined by a sum
        else:
            ok = 1 - reduce_max(1 - ok, self.ws)
        return x * ok


class Bmm(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug

    def forward(self, q, k):
        if self.ws == 1:
            return q @ k.transpose(-2, -1)
        kt = {"no_t": k, "flip": k.flip(0).transpose(1, 2)}.get(self.bug, k.transpose(1, 2))  # BUG (bmm): the rank's k operand
        return torch.bmm(q, kt)


class Perm(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug

    def forward(self, x):
        if self.ws == 1:
            return x * 2
        g = gather(x.permute(2, 0, 1).contiguous(), 0, self.ws)
        back = (2, 0, 1) if self.bug == "same" else (1, 2, 0)  # BUG (perm): the permute back
        return g.permute(*back) * 2


class IScal(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug

    def forward(self, x):
        s = x.shape[1]
        pos = torch.arange(s) + self.rank * s
        c = 2 + self.rank if self.bug == "rank_c" else 2  # BUG (iscal): the threshold of the mask
        return x * (pos > c).to(x.dtype)[None, :, None]


class Cat(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug

    def forward(self, x):
        if self.ws == 1:
            return x * 2
        g = gather(x, 0, self.ws)
        tail = {"overlap": [g[1:3], g[2:3]], "order": [g[3:], g[1:3]]}.get(self.bug, [g[1:3], g[3:]])  # BUG (cat): the blocks cut and their order
        return torch.cat([g[:1], torch.cat(tail, 0)], 0) * 2


class Red1(nn.Module):
    def __init__(self, ws, kind, bug):
        super().__init__()
        self.ws, self.kind, self.bug = ws, kind, bug

    def forward(self, x):
        if self.kind == "amax":
            m = x.amax(1, keepdim=True)
            return m if self.bug == "amax_local" else reduce_max(m, self.ws)  # BUG (red1): the ranks' maxima combined
        m = reduce_from(x.mean(1, keepdim=True), self.ws)
        return m if self.bug == "mean_no_div" else m / self.ws  # BUG (red1): the ranks' means combined


XENTI_TARGET = torch.tensor([0, 0, 1, 2, 3, 4, 1, 2])


def make_build(kind, bug=None):
    def build(rank, ws):
        if kind in ("pp", "ppv"):
            return PP(rank, ws, kind, bug), {"x": torch.randn(BATCH, IN), "u": torch.randn(BATCH, HID)}
        if kind in ("emb", "emb0"):
            return Emb(rank, ws, bug, 10 if kind == "emb" else 3), {"ids": (torch.arange(10) * 3 % 14).view(2, 5)}
        if kind == "xentu":
            n = [7] if ws == 1 else [4, 3]
            return XEnt(ws, kind, bug), {"logits": torch.randn(n[rank], 5, requires_grad=True),
                                         "target": (torch.arange(7) * 3 % 5)[:n[rank]]}
        if kind == "xenti":
            return XEnt(ws, kind, bug), {"logits": torch.randn(8 // ws, 5, requires_grad=True), "target": XENTI_TARGET[:8 // ws]}
        if kind == "all":
            return All(ws, bug), {"x": torch.randn(4, 6 // ws, requires_grad=True)}
        if kind == "bmm":
            return Bmm(ws, bug), {"q": torch.randn(4 // ws, 3, 3, requires_grad=True),
                                   "k": torch.randn(4 // ws, 3, 3, requires_grad=True)}
        if kind == "perm":
            return Perm(ws, bug), {"x": torch.randn(4, 4, 4 // ws, requires_grad=True)}
        if kind == "iscal":
            return IScal(rank, ws, bug), {"x": torch.randn(2, 6 // ws, 3, requires_grad=True)}
        if kind == "cat":
            return Cat(ws, bug), {"x": torch.randn(4 // ws, 3, requires_grad=True)}
        if kind in ("amax", "mean"):
            return Red1(ws, kind, bug), {"x": torch.randn(4, 2 // ws, requires_grad=True)}
        raise ValueError(kind)
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_adv3.py:<name>`, and `entangle capture tests/corpus/programs/_adv3.py:<name>` captures one).
adv3_all_any = make_build('all', bug='any')
adv3_all_correct = make_build('all')
adv3_all_float = make_build('all', bug='float')
adv3_all_sum = make_build('all', bug='sum')
adv3_amax_correct = make_build('amax')
adv3_amax_local = make_build('amax', bug='amax_local')
adv3_bmm_correct = make_build('bmm')
adv3_bmm_flip = make_build('bmm', bug='flip')
adv3_bmm_no_t = make_build('bmm', bug='no_t')
adv3_cat_correct = make_build('cat')
adv3_cat_order = make_build('cat', bug='order')
adv3_cat_overlap = make_build('cat', bug='overlap')
adv3_emb0_correct = make_build('emb0')
adv3_emb0_neg = make_build('emb0', bug='neg')
adv3_emb0_wrong_rank = make_build('emb0', bug='wrong_rank')
adv3_emb_correct = make_build('emb')
adv3_emb_neg = make_build('emb', bug='neg')
adv3_emb_neg_off = make_build('emb', bug='neg_off')
adv3_emb_wrong_rank = make_build('emb', bug='wrong_rank')
adv3_iscal_correct = make_build('iscal')
adv3_iscal_rank_c = make_build('iscal', bug='rank_c')
adv3_mean_correct = make_build('mean')
adv3_mean_no_div = make_build('mean', bug='mean_no_div')
adv3_perm_correct = make_build('perm')
adv3_perm_same = make_build('perm', bug='same')
adv3_pp_correct = make_build('pp')
adv3_pp_view_old = make_build('pp', bug='view_old')
adv3_ppv_both = make_build('ppv', bug='both')
adv3_ppv_correct = make_build('ppv')
adv3_xenti_correct = make_build('xenti')
adv3_xenti_mean_of_means = make_build('xenti', bug='mean_of_means')
adv3_xentu_correct = make_build('xentu')
adv3_xentu_mean_of_means = make_build('xentu', bug='mean_of_means')
