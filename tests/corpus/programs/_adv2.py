"""Adversarial programs (helper-adv2) on the newer lowerings and lemmas: positions (arange), strided
slices, slice_scatter and a custom kernel writing a slice of a buffer, top-k routing, flip,
cross-entropy (ignore_index, reductions), vocab-parallel cross-entropy, constant_pad_nd, repeat,
layer norm (eps, dims, mean/rstd outputs, gradients), embedding backward (padding_idx), reduce
-scatter written as an all-reduce and a slice, and a half-precision all-reduce.  Every kind has a
correct twin; ``bug`` picks the wrong variant (the ``# BUG`` lines).  Two ranks.

* ``pos``: x [2, S/W, 3] sharded along the sequence, scaled by its GLOBAL positions
  (arange(s) + rank * s).  Bugs: ``off1`` offset rank * (s + 1); ``strided`` positions
  arange(rank, S, W) (round-robin) for contiguous shards.  Twin ``start``: arange(lo, hi).
* ``strided``: out = x[:, ::2] @ w with w row-sharded; rank r reads x[:, 6r:6r+6:2].  Bugs:
  ``phase`` x[:, 6r+1::2] (odd columns); ``window`` x[:, 3r:3r+6:2] (half the rank offset).
  Twin ``two_step``: x[:, ::2][:, 3r:3r+3].
* ``scatter``: x [4, H] row-sharded; every rank writes its rows' result into its slice of a zero
  [4, H] buffer and all-reduces.  ``kernel``: vLLM rms_norm into out[lo:lo+n]; ``sscat``:
  slice_scatter of tanh(x).  Bugs: ``swap`` the other rank's slice; ``overlap`` lo = r (n - 1).
* ``topk``: router logits [4, 2] row-sharded (tokens); softmax of the top-2 values and their
  indices.  Bugs: ``dim0`` topk along the token dim (same shape [2, 2]); ``smallest``
  largest=False on the ranks.
* ``flip``: x [4, 3] row-sharded; out = flip(x, [0]) gathered.  Correct: each rank flips its rows,
  the gathered blocks are taken in reverse rank order.  Bugs: ``no_swap`` blocks in rank order;
  ``dim`` the rank flips its columns.
* ``xent``: data-parallel cross-entropy (mean), logits and targets row-sharded: local mean,
  all-reduced, divided by W.  Bugs: ``ignore0`` the ranks ignore class 0; ``local_n`` local
  sum all-reduced, divided by the LOCAL batch size.  Twin ``ignore_m1``: ignore_index=-1 on the
  ranks (no target is -1).
* ``vpick``: vocab-parallel cross-entropy; bug ``unmasked``: the picked target logit is not
  zeroed on ranks that do not own the target (rank's column 0 added).
* ``pad``: a causal shift of rows (F.pad one zero row at the top, drop the last) of row-sharded
  x: all-gather, shift, own chunk.  Bugs: ``local`` the shift on the local rows (the halo row from
  the previous rank lost); ``width2`` pad two rows, drop two.
* ``repeat``: GQA scores q @ k^T per head, heads sharded (4 query heads, 2 KV heads).  KV heads
  expanded with repeat_interleave (correct) or ``tile`` (k.repeat: the seq program pairs heads
  0, 2 with KV head 0, the ranks pair 0, 1).
* ``ln``: layer norm over row-sharded x [4, 2, 6], returning native_layer_norm's (out, rstd).
  Bugs: ``eps`` the ranks use eps 1e-2; ``dims`` normalised over (seq, hidden) of the shard.
  ``ln_hidden``: hidden-sharded x; bug ``local`` normalises each hidden shard alone.
  ``lng`` (joint, the normalised rows only): bug ``bias_grad`` the bias gradient is not
  all-reduced.
* ``emb``: vocab-parallel embedding, joint, the seq table with padding_idx 0 (its gradient row
  stays zero): only rank 0 owns id 0.  Bug ``pad_all``: every rank passes padding_idx=0 (rank 1's
  local row 0 is global id 7: its gradient is dropped).
* ``rs``: row-parallel product reduce-scattered along dim 1 by an all-reduce and a slice of the
  rank's columns (an all-reduce whose backward is an all-reduce: the ranks go on with different
  columns, so their gradients differ).  Bug ``other``: the other rank's columns.
* ``half``: row-parallel linear whose partial sums are all-reduced in float16.  Bug ``half``.
* ``topkx``: router logits [4, 4] sharded along the EXPERTS (dim 1); top-2 values of each row.
  Correct: all-gather the logits, then top-2.  Bug ``local``: top-1 of each rank's experts,
  all-gathered (the top-2 of a row is not one per shard).
* ``zslice`` (joint): replicated x [3, 6]; rank r multiplies its columns x[:, 3r:3r+3] by its row
  block of w; x's gradient is the ranks' zero-padded slice gradients summed (copy_to).  Bug
  ``no_reduce``: x's gradient never all-reduced.
* ``select``: x [4, 6] sharded along dim 1; out = x.select(0, -1) * 2 + x[0].  Bug ``index``:
  the ranks select row -2.
* ``all``: x [4, 6] hidden-sharded; rows kept where every element is > -1 (torch.all over the
  hidden dim, combined over ranks by an all-reduce min).  Bug ``local``: the local all only.
* ``emb_off`` (joint): vocab-parallel embedding; bug ``offset``: rank 1's vocab range starts one
  id early (id 6 looked up twice, id 13 never).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import _vllm_ops  # noqa: F401  (registers torch.ops._C.*)
from _common import all_reduce, copy_to, gather, reduce_from, reduce_max

S, H = 6, 3


class Pos(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug

    def forward(self, x):
        s, r = x.shape[1], self.rank
        lo, k = r * s, 1
        if self.bug == "off1":
            lo = r * (s + 1)  # BUG (pos): the rank's position offset
        elif self.bug == "strided":
            lo, k = r, self.ws  # BUG (pos): the rank's position offset
        pos = torch.arange(lo, lo + k * s, k) if self.bug in ("start", "strided") else torch.arange(s) + lo
        return x * pos.to(x.dtype)[None, :, None] + (pos[None, :, None] > 2).to(x.dtype)


class Strided(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        self.w = nn.Parameter(torch.empty(6 // ws, 4))

    def forward(self, x):
        r, n = self.rank, 6 // self.ws
        if self.bug == "phase" and self.ws > 1:
            xs = x[:, 2 * n * r + 1:2 * n * (r + 1):2]  # BUG (strided): the columns this rank reads
        elif self.bug == "window" and self.ws > 1:
            xs = x[:, n * r:n * r + 2 * n:2]  # BUG (strided): the columns this rank reads
        elif self.bug == "two_step":
            xs = x[:, ::2][:, n * r:n * (r + 1)]
        else:
            xs = x[:, 2 * n * r:2 * n * (r + 1):2]
        return reduce_from(xs @ self.w, self.ws)


class Scatter(nn.Module):
    def __init__(self, rank, ws, kind, bug):
        super().__init__()
        self.rank, self.ws, self.kind, self.bug = rank, ws, kind, bug
        self.norm = nn.Parameter(torch.empty(H))

    def forward(self, x):
        n, r = x.shape[0], self.rank
        out = torch.zeros(n * self.ws, H, dtype=x.dtype)
        lo = {"swap": (self.ws - 1 - r) * n, "overlap": r * (n - 1)}.get(self.bug, r * n)  # BUG (scatter): the slice of the buffer this rank writes
        if self.kind == "kernel":
            torch.ops._C.rms_norm(out[lo:lo + n], x, self.norm, 1e-6)
        else:
            out = torch.slice_scatter(out, torch.tanh(x) * self.norm, 0, lo, lo + n)
        return reduce_from(out, self.ws)


class TopK(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug

    def forward(self, logits):
        dist = self.ws > 1
        dim = 0 if self.bug == "dim0" and dist else -1  # BUG (topk): top-k along another dim, or the smallest
        largest = not (self.bug == "smallest" and dist)  # BUG (topk): top-k along another dim, or the smallest
        v, i = torch.topk(logits, 2, dim=dim, largest=largest)
        return v.softmax(-1), i


class Flip(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug

    def forward(self, x):
        if self.ws == 1:
            return torch.flip(x, [0])
        n = x.shape[0]
        g = gather(torch.flip(x, [1] if self.bug == "dim" else [0]), 0, self.ws)  # BUG (flip): the flipped dim
        order = range(self.ws) if self.bug == "no_swap" else reversed(range(self.ws))  # BUG (flip): the block order
        blocks = [g[r * n:(r + 1) * n] for r in order]
        return torch.cat(blocks, 0)


class XEnt(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug

    def forward(self, logits, target):
        if self.ws == 1:
            return F.cross_entropy(logits, target)
        if self.bug == "local_n":
            loss = reduce_from(F.cross_entropy(logits, target, reduction="sum"), self.ws) / target.shape[0]  # BUG (xent): divided by the local batch
            return loss
        ignore = {"ignore0": 0, "ignore_m1": -1}.get(self.bug, -100)  # BUG (xent): the ignored class
        return reduce_from(F.cross_entropy(logits, target, ignore_index=ignore), self.ws) / self.ws


class VPick(nn.Module):
    VOCAB = 8

    def __init__(self, rank, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.start = rank * (self.VOCAB // ws)
        self.end = self.start + self.VOCAB // ws

    def forward(self, logits, target):
        if self.ws == 1:
            return F.cross_entropy(logits, target, reduction="sum")
        z = logits
        sumexp = reduce_from(z.exp().sum(-1), self.ws)
        mask = (target < self.start) | (target >= self.end)
        local = (target - self.start).masked_fill(mask, 0)
        picked = z.gather(1, local.unsqueeze(1)).squeeze(1)
        if self.bug != "unmasked":
            picked = picked.masked_fill(mask, 0.0)  # BUG (vpick): foreign targets' logit not zeroed
        picked = reduce_from(picked, self.ws)
        return (sumexp.log() - picked).sum()


class Pad(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug

    def forward(self, x):
        n = x.shape[0]
        if self.bug == "local" and self.ws > 1:
            return F.pad(x, (0, 0, 1, 0))[:-1]  # BUG (pad): the shift, its rows or width
        g = gather(x, 0, self.ws)
        w = 2 if self.bug == "width2" and self.ws > 1 else 1  # BUG (pad): the shift, its rows or width
        v = 1.0 if self.bug == "value" and self.ws > 1 else 0.0  # BUG (pad): the shift, its rows or width, or fill
        y = F.pad(g, (0, 0, w, 0), value=v)[:-w]
        return y[self.rank * n:(self.rank + 1) * n]


class Repeat(nn.Module):
    def __init__(self, bug):
        super().__init__()
        self.bug = bug

    def forward(self, q, k):
        g = q.shape[0] // k.shape[0]
        if self.bug == "tile":
            k = k.repeat(g, 1, 1)  # BUG (repeat): KV heads tiled, not interleaved
        else:
            k = k.repeat_interleave(g, dim=0)
        return q @ k.transpose(-2, -1)


class LN(nn.Module):
    def __init__(self, rank, ws, kind, bug):
        super().__init__()
        self.rank, self.ws, self.kind, self.bug = rank, ws, kind, bug
        d = 6 // ws if kind == "ln_hidden" else 6
        self.weight = nn.Parameter(torch.empty(d))
        self.bias = nn.Parameter(torch.empty(d))

    def forward(self, x):
        if self.kind == "ln_hidden":
            if self.bug == "local" and self.ws > 1:
                return F.layer_norm(x, x.shape[-1:], self.weight, self.bias)  # BUG (ln_hidden): a hidden shard normalised alone
            g = gather(x, 2, self.ws)
            n = x.shape[-1]
            y = F.layer_norm(g, g.shape[-1:])[..., self.rank * n:(self.rank + 1) * n]
            return y * self.weight + self.bias
        w = copy_to(self.weight, self.ws)
        b = self.bias if self.bug == "bias_grad" else copy_to(self.bias, self.ws)  # BUG (ln): eps, dims or a gradient
        if self.bug == "dims":
            y = F.layer_norm(x, x.shape) * w + b  # BUG (ln): eps, dims or a gradient
            return y, y.sum(-1, keepdim=True)
        eps = 1e-2 if self.bug == "eps" and self.ws > 1 else 1e-5  # BUG (ln): another eps
        out, mean, rstd = torch.native_layer_norm(x, [6], w, b, eps)
        return out if self.kind == "lng" else (out, rstd)


class Emb(nn.Module):
    VOCAB = 14

    def __init__(self, rank, ws, bug):
        super().__init__()
        per = self.VOCAB // ws
        self.rank, self.ws, self.bug = rank, ws, bug
        self.start, self.end = rank * per, rank * per + per
        self.weight = nn.Parameter(torch.empty(per, 4))

    def forward(self, ids):
        if self.ws == 1:
            return F.embedding(ids, self.weight, padding_idx=0)
        mask = (ids < self.start) | (ids >= self.end)
        local = (ids - self.start).masked_fill(mask, 0)
        pad = 0 if self.rank == 0 or self.bug == "pad_all" else None  # BUG (emb): padding_idx on every rank
        out = F.embedding(local, self.weight, padding_idx=pad).masked_fill(mask.unsqueeze(-1), 0.0)
        return reduce_from(out, self.ws)


class EmbOff(Emb):
    def __init__(self, rank, ws, bug):
        super().__init__(rank, ws, bug)
        if bug == "offset" and rank > 0:
            self.start, self.end = self.start - 1, self.end - 1  # BUG (emb_off): rank 1's vocab range

    def forward(self, ids):
        if self.ws == 1:
            return F.embedding(ids, self.weight)
        mask = (ids < self.start) | (ids >= self.end)
        local = (ids - self.start).masked_fill(mask, 0)
        return reduce_from(F.embedding(local, self.weight).masked_fill(mask.unsqueeze(-1), 0.0), self.ws)


class RS(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        self.w = nn.Parameter(torch.empty(6 // ws, 4))

    def forward(self, x):
        y = all_reduce(x @ self.w, self.ws)   # each rank keeps its own columns: all-reduce backward too
        n = y.shape[1] // self.ws
        r = self.ws - 1 - self.rank if self.bug == "other" else self.rank  # BUG (rs): the rank's columns
        return y[:, r * n:(r + 1) * n]


class Half(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.w = nn.Parameter(torch.empty(4, 6 // ws))

    def forward(self, x):
        y = F.linear(x, self.w)
        if self.bug == "half" and self.ws > 1:
            return reduce_from(y.to(torch.float16), self.ws).to(y.dtype)  # BUG (half): partial sums all-reduced in float16
        return reduce_from(y, self.ws)


class TopKX(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug

    def forward(self, logits):
        if self.bug == "local" and self.ws > 1:
            return gather(torch.topk(logits, 1, dim=-1).values, 1, self.ws)  # BUG (topkx): top-1 per expert shard
        return torch.topk(gather(logits, 1, self.ws), 2, dim=-1).values


class ZSlice(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        self.w = nn.Parameter(torch.empty(6 // ws, 4))

    def forward(self, x):
        n = 6 // self.ws
        xc = x if self.bug == "no_reduce" else copy_to(x, self.ws)  # BUG (zslice): x's gradient not all-reduced
        return reduce_from(xc[:, self.rank * n:(self.rank + 1) * n] @ self.w, self.ws)


class Select(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug

    def forward(self, x):
        i = -2 if self.bug == "index" and self.ws > 1 else -1  # BUG (select): the selected row
        return x.select(0, i) * 2 + x[0]


class All(nn.Module):
    def __init__(self, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug

    def forward(self, x):
        ok = (x > -1).all(-1, keepdim=True).to(x.dtype)
        if self.ws > 1 and self.bug != "local":
            ok = 1 - reduce_max(1 - ok, self.ws)  # BUG (all): the ranks' verdicts combined (a min by a max)
        return x * ok


def _targets(n, c):
    return (torch.arange(n) * 3 % c)


def make_build(kind, bug=None):
    def build(rank, ws):
        if kind == "pos":
            return Pos(rank, ws, bug), {"x": torch.randn(2, S // ws, H, requires_grad=True)}
        if kind == "strided":
            return Strided(rank, ws, bug), {"x": torch.randn(3, 12, requires_grad=True)}
        if kind in ("kernel", "sscat"):
            return Scatter(rank, ws, kind, bug), {"x": torch.randn(4 // ws, H)}
        if kind == "topk":
            return TopK(ws, bug), {"logits": torch.randn(4 // ws, 2, requires_grad=True)}
        if kind == "flip":
            return Flip(ws, bug), {"x": torch.randn(4 // ws, 3, requires_grad=True)}
        if kind == "xent":
            return XEnt(ws, bug), {"logits": torch.randn(8 // ws, 5, requires_grad=True), "target": _targets(8, 5)[:8 // ws]}
        if kind == "vpick":
            return VPick(rank, ws, bug), {"logits": torch.randn(6, VPick.VOCAB // ws, requires_grad=True),
                                          "target": _targets(6, VPick.VOCAB)}
        if kind == "pad":
            return Pad(rank, ws, bug), {"x": torch.randn(6 // ws, 3, requires_grad=True)}
        if kind == "repeat":
            return Repeat(bug), {"q": torch.randn(4 // ws, 3, 2, requires_grad=True),
                                 "k": torch.randn(2 // ws, 3, 2, requires_grad=True)}
        if kind in ("ln", "lng", "ln_hidden"):
            shape = (4, 2, 6 // ws) if kind == "ln_hidden" else (4 // ws, 2, 6)
            return LN(rank, ws, kind, bug), {"x": torch.randn(*shape, requires_grad=True)}
        if kind == "emb":
            return Emb(rank, ws, bug), {"ids": _targets(10, Emb.VOCAB).view(2, 5)}
        if kind == "rs":
            return RS(rank, ws, bug), {"x": torch.randn(3, 6 // ws)}
        if kind == "half":
            return Half(ws, bug), {"x": torch.randn(3, 6 // ws, requires_grad=True)}
        if kind == "topkx":
            return TopKX(ws, bug), {"logits": torch.randn(4, 4 // ws, requires_grad=True)}
        if kind == "zslice":
            return ZSlice(rank, ws, bug), {"x": torch.randn(3, 6, requires_grad=True)}
        if kind == "select":
            return Select(ws, bug), {"x": torch.randn(4, 6 // ws, requires_grad=True)}
        if kind == "all":
            return All(ws, bug), {"x": torch.randn(4, 6 // ws, requires_grad=True)}
        if kind == "emb_off":
            return EmbOff(rank, ws, bug), {"ids": _targets(10, Emb.VOCAB).view(2, 5)}
        raise ValueError(kind)
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_adv2.py:<name>`, and `entangle capture tests/corpus/programs/_adv2.py:<name>` captures one).
adv2_all_correct = make_build('all')
adv2_all_local = make_build('all', bug='local')
adv2_emb_correct = make_build('emb')
adv2_emb_off_correct = make_build('emb_off')
adv2_emb_off_offset = make_build('emb_off', bug='offset')
adv2_emb_pad_all = make_build('emb', bug='pad_all')
adv2_flip_correct = make_build('flip')
adv2_flip_dim = make_build('flip', bug='dim')
adv2_flip_no_swap = make_build('flip', bug='no_swap')
adv2_half_correct = make_build('half')
adv2_half_half = make_build('half', bug='half')
adv2_kernel_correct = make_build('kernel')
adv2_kernel_overlap = make_build('kernel', bug='overlap')
adv2_kernel_swap = make_build('kernel', bug='swap')
adv2_ln_correct = make_build('ln')
adv2_ln_dims = make_build('ln', bug='dims')
adv2_ln_eps = make_build('ln', bug='eps')
adv2_ln_hidden_correct = make_build('ln_hidden')
adv2_ln_hidden_local = make_build('ln_hidden', bug='local')
adv2_lng_bias_grad = make_build('lng', bug='bias_grad')
adv2_lng_correct = make_build('lng')
adv2_pad_correct = make_build('pad')
adv2_pad_local = make_build('pad', bug='local')
adv2_pad_value = make_build('pad', bug='value')
adv2_pad_width2 = make_build('pad', bug='width2')
adv2_pos_correct = make_build('pos')
adv2_pos_off1 = make_build('pos', bug='off1')
adv2_pos_start = make_build('pos', bug='start')
adv2_pos_strided = make_build('pos', bug='strided')
adv2_repeat_correct = make_build('repeat')
adv2_repeat_tile = make_build('repeat', bug='tile')
adv2_rs_correct = make_build('rs')
adv2_rs_other = make_build('rs', bug='other')
adv2_select_correct = make_build('select')
adv2_select_index = make_build('select', bug='index')
adv2_sscat_correct = make_build('sscat')
adv2_sscat_overlap = make_build('sscat', bug='overlap')
adv2_sscat_swap = make_build('sscat', bug='swap')
adv2_strided_correct = make_build('strided')
adv2_strided_phase = make_build('strided', bug='phase')
adv2_strided_two_step = make_build('strided', bug='two_step')
adv2_strided_window = make_build('strided', bug='window')
adv2_topk_correct = make_build('topk')
adv2_topk_dim0 = make_build('topk', bug='dim0')
adv2_topk_smallest = make_build('topk', bug='smallest')
adv2_topkx_correct = make_build('topkx')
adv2_topkx_local = make_build('topkx', bug='local')
adv2_vpick_correct = make_build('vpick')
adv2_vpick_unmasked = make_build('vpick', bug='unmasked')
adv2_xent_correct = make_build('xent')
adv2_xent_ignore0 = make_build('xent', bug='ignore0')
adv2_xent_ignore_m1 = make_build('xent', bug='ignore_m1')
adv2_xent_local_n = make_build('xent', bug='local_n')
adv2_zslice_correct = make_build('zslice')
adv2_zslice_no_reduce = make_build('zslice', bug='no_reduce')
