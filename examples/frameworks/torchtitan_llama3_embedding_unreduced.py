"""Bug: the vocabulary-parallel embedding's sharding entry without its output redistribution:
each rank's lookup (zeros for ids outside its rows) goes on as if it were the embedding.  See
torchtitan_llama3.py; spec torchtitan_llama3.toml."""
import dataclasses

import torchtitan_llama3


def plan(cfg):
    emb = cfg.tok_embeddings
    emb.sharding_config = dataclasses.replace(emb.sharding_config, out_dst_shardings=None)  # BUG (embedding_unreduced): never all-reduced


build = torchtitan_llama3.make_build(plan=plan)
