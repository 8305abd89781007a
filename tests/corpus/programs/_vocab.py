"""Vocabulary parallelism (Megatron VocabParallelEmbedding / vocab_parallel_cross_entropy).

* ``embed``: the table [V, H] is sharded along the vocabulary; each rank masks the ids it does not
  own, looks up (ids - start), zeroes the masked rows and all-reduces.  Bug ``wrong_offset``: the
  shard's end is computed inclusive-as-exclusive (``start + per_rank - 1``), so the last id of
  every shard is masked out on every rank (an off-by-one in the vocab range).
* ``ce``: logits [N, V] sharded along the vocabulary; cross-entropy with the max and the sum of
  exponentials all-reduced and the target logit fetched by the owning rank.  Bug
  ``local_sumexp``: the sum of exponentials is not all-reduced (each rank normalises over its
  own vocabulary shard).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import reduce_from, reduce_max

VOCAB, HIDDEN, N = 14, 5, 6


class VocabEmbedding(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        per_rank = VOCAB // ws
        self.ws = ws
        self.start = rank * per_rank
        self.end = self.start + per_rank
        if bug == "wrong_offset" and ws > 1:
            self.end = self.start + per_rank - 1  # BUG: the last id of every shard is treated as foreign
        self.weight = nn.Parameter(torch.empty(per_rank, HIDDEN))

    def forward(self, ids):
        if self.ws == 1:
            return F.embedding(ids, self.weight)
        mask = (ids < self.start) | (ids >= self.end)
        local = (ids - self.start).masked_fill(mask, 0)
        out = F.embedding(local, self.weight).masked_fill(mask.unsqueeze(-1), 0.0)
        return reduce_from(out, self.ws)


class VocabCrossEntropy(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.ws, self.bug = ws, bug
        self.start = rank * (VOCAB // ws)
        self.end = self.start + VOCAB // ws

    def forward(self, logits, target):
        if self.ws == 1:
            return F.cross_entropy(logits, target)
        m = reduce_max(logits.max(-1, keepdim=True).values.detach(), self.ws)
        z = logits - m
        sumexp = z.exp().sum(-1)
        if self.bug == "local_sumexp":
            sumexp = sumexp  # BUG: the sum of exponentials is never all-reduced over the vocabulary
        else:
            sumexp = reduce_from(sumexp, self.ws)
        mask = (target < self.start) | (target >= self.end)
        local = (target - self.start).masked_fill(mask, 0)
        picked = z.gather(1, local.unsqueeze(1)).squeeze(1).masked_fill(mask, 0.0)
        picked = reduce_from(picked, self.ws)
        return (sumexp.log() - picked).mean()


def _ids(*shape):
    # every id of the vocabulary occurs (deterministic, so the labels do not depend on the draw)
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(n) * 3 % VOCAB).view(*shape)


def make_build(kind, bug=None):
    def build(rank, world_size):
        if kind == "embed":
            return VocabEmbedding(rank, world_size, bug), {"ids": _ids(3, 7)}
        logits = torch.randn(N, VOCAB // world_size, requires_grad=True)
        return VocabCrossEntropy(rank, world_size, bug), {"logits": logits, "target": _ids(N)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_vocab.py:<name>`, and `entangle capture tests/corpus/programs/_vocab.py:<name>` captures one).
vocab_cross_entropy_correct = make_build('ce')
vocab_cross_entropy_local_sumexp = make_build('ce', bug='local_sumexp')
vocab_embedding_correct = make_build('embed')
vocab_embedding_wrong_offset = make_build('embed', bug='wrong_offset')
