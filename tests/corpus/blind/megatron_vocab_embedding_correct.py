"""Megatron-LM VocabParallelEmbedding (megatron/core/tensor_parallel/layers.py).

The table is split along the vocabulary; a rank looks up the ids in its range [start, end),
zeroes the rows of the others, and the partial embeddings are all-reduced.
"""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

VOCAB, DIM, BATCH, SEQ = 16, 4, 2, 8


class _ReduceFromModelParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_):
        input_ = input_.clone()
        dist.all_reduce(input_)
        return input_

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


def vocab_range_from_per_partition_vocab_size(per_partition_vocab_size, rank):
    index_f = rank * per_partition_vocab_size
    index_l = index_f + per_partition_vocab_size
    return index_f, index_l


class VocabParallelEmbedding(nn.Module):
    def __init__(self, num_embeddings, embedding_dim, rank, world_size):
        super().__init__()
        self.world_size = world_size
        self.num_embeddings_per_partition = num_embeddings // world_size
        self.vocab_start_index, self.vocab_end_index = vocab_range_from_per_partition_vocab_size(
            self.num_embeddings_per_partition, rank)
        self.weight = nn.Parameter(torch.empty(self.num_embeddings_per_partition, embedding_dim))

    def forward(self, input_):
        if self.world_size > 1:
            input_mask = (input_ < self.vocab_start_index) | (input_ >= self.vocab_end_index)
            masked_input = input_.clone() - self.vocab_start_index
            masked_input[input_mask] = 0
        else:
            masked_input = input_
        output_parallel = F.embedding(masked_input, self.weight)
        if self.world_size > 1:
            output_parallel[input_mask, :] = 0.0
            return _ReduceFromModelParallelRegion.apply(output_parallel)
        return output_parallel


class Embedding(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.word_embeddings = VocabParallelEmbedding(VOCAB, DIM, rank, world_size)

    def forward(self, input_ids):
        return self.word_embeddings(input_ids).transpose(0, 1).contiguous()


def build(rank, world_size):
    return Embedding(rank, world_size), {"input_ids": torch.zeros(BATCH, SEQ, dtype=torch.long)}
