"""Bug: a vocabulary-parallel embedding style of the user's own that returns each rank's lookup
(zeros for the ids outside its rows) without the all-reduce HF's ``EmbeddingParallel`` does.
See hf_llama.py; spec hf_llama.toml."""
from transformers.distributed.tensor_parallel import ALL_PARALLEL_STYLES, EmbeddingParallel

import hf_llama


class LocalEmbedding(EmbeddingParallel):
    def transform_output_post_forward(self, module, output, mesh):
        return output.to_local()  # BUG (embedding_unreduced): the partial lookup is never all-reduced


ALL_PARALLEL_STYLES.register("embedding_rowwise_local", LocalEmbedding(shard_dim=0))


def build(rank, world_size):
    return hf_llama.build(rank, world_size, plan={"model.embed_tokens": "embedding_rowwise_local"})
