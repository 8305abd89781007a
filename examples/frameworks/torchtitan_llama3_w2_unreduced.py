"""Bug: a sharding entry of the user's own for the feed-forward's ``w2``: rowwise, but without the
output redistribution (``out_dst_shardings=None``), so its partial sums reach the residual stream
unreduced.  See torchtitan_llama3.py; spec torchtitan_llama3.toml."""
import dataclasses

from torchtitan.models.common.decoder_sharding import rowwise_config

import torchtitan_llama3


def plan(cfg):
    for layer in cfg.layers:
        layer.feed_forward.w2.sharding_config = dataclasses.replace(rowwise_config(), out_dst_shardings=None)  # BUG (w2_unreduced): partial sums never reduced


build = torchtitan_llama3.make_build(plan=plan)
