"""Megatron's VocabParallelEmbedding.forward, as megatron.core.tensor_parallel.layers writes it:
ids outside the rank's vocabulary range are masked, the offset subtracted, the masked ids
looked up as 0 and their rows zeroed, and the ranks' outputs all-reduced."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

NUM_EMBEDDINGS, EMBEDDING_DIM, BATCH, SEQ = 8, 4, 4, 8


class VocabParallelEmbedding(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.world_size = world_size
        self.num_embeddings_per_partition = NUM_EMBEDDINGS // world_size
        self.vocab_start_index = rank * self.num_embeddings_per_partition
        self.vocab_end_index = self.vocab_start_index + self.num_embeddings_per_partition
        self.weight = nn.Parameter(torch.empty(self.num_embeddings_per_partition, EMBEDDING_DIM))

    def forward(self, input_):
        if self.world_size > 1:
            # Build the mask.
            input_mask = (input_ <= self.vocab_start_index) | (input_ >= self.vocab_end_index)  # BUG: the first id of each range masked too
            # Mask the input.
            masked_input = input_.clone() - self.vocab_start_index
            masked_input[input_mask] = 0
        else:
            masked_input = input_
        output_parallel = F.embedding(masked_input, self.weight)
        if self.world_size > 1:
            output_parallel[input_mask, :] = 0.0
            output = funcol.all_reduce(output_parallel, "sum", dist.group.WORLD)
        else:
            output = output_parallel
        return output


def build(rank, world_size):
    model = VocabParallelEmbedding(rank, world_size)
    return model, {"input_": torch.randint(0, NUM_EMBEDDINGS, (BATCH, SEQ))}
