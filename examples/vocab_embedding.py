"""Vocabulary-parallel embedding (Megatron-LM's VocabParallelEmbedding).

The embedding table [VOCAB, HIDDEN] is sharded along the vocabulary: rank r holds rows
[start, end) = [r * VOCAB / W, (r + 1) * VOCAB / W).  Every rank sees all token ids and

    mask = (ids < start) | (ids >= end)      # tokens another rank owns
    local = (ids - start) with masked ids set to 0
    out_r = embedding(local, W_r) with masked rows set to 0
    out = all_reduce(out_r)                  # exactly one rank contributes each row

The graphs of different ranks differ: start and end are constants baked into each rank's graph.
At world_size 1 it is a plain embedding lookup.

Regenerate graphs/vocab_embedding_tp2::

    python examples/vocab_embedding.py
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from mlp import reduce_from_tp

# Pairwise distinct: VOCAB 20 (10 per rank at TP=2), HIDDEN 8, ids [2, 6].
BATCH, SEQ, VOCAB, HIDDEN = 2, 6, 20, 8


class VocabParallelEmbedding(nn.Module):
    def __init__(self, vocab, hidden, rank, world_size):
        super().__init__()
        if vocab % world_size:
            raise ValueError(f"vocabulary {vocab} is not divisible by world size {world_size}")
        per_rank = vocab // world_size
        self.world_size = world_size
        self.vocab_start = rank * per_rank
        self.vocab_end = (rank + 1) * per_rank
        self.weight = nn.Parameter(torch.empty(per_rank, hidden))

    def forward(self, ids):
        if self.world_size == 1:
            return F.embedding(ids, self.weight)
        mask = (ids < self.vocab_start) | (ids >= self.vocab_end)
        local = (ids - self.vocab_start).masked_fill(mask, 0)
        out = F.embedding(local, self.weight)
        out = out.masked_fill(mask.unsqueeze(-1), 0.0)
        return reduce_from_tp(out, self.world_size)


class Embedding(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.embedding = VocabParallelEmbedding(VOCAB, HIDDEN, rank, world_size)

    def forward(self, ids):
        return self.embedding(ids)


def build(rank, world_size):
    ids = torch.randint(0, VOCAB, (BATCH, SEQ))
    return Embedding(rank, world_size), {"ids": ids}


SPEC = """\
# Input relation of the vocabulary-parallel embedding (examples/vocab_embedding.py).
# The table is split along the vocabulary (dim 0); token ids are replicated.
# The sequential program is a plain lookup: relating it to the masked per-rank lookups needs every
# id in [0, vocab) (W[ids] wraps negative ids; the ranks mask them out): an assumption, not proven.
[assume]
valid_indices = true

[inputs]
"input:ids" = "replicate"
"param:embedding.weight" = "shard(0)"

[outputs]
check = ["out"]

[expect]
"out" = "replicate"
"""

GRAPHS = [
    ("vocab_embedding_tp2", 2, False, False, SPEC),
]

if __name__ == "__main__":
    from entangle_py.frontend.capture import regenerate_examples
    regenerate_examples(__file__, GRAPHS)
