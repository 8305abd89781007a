"""WRONG: 8 isomorphic blocks, none of which all-reduces: block 0 is right for its replicated input (its output is the ranks' sum), but block 1 onwards reads that partial sum as if it were the value.  Every block is the same: only the relation at the blocks' boundary differs (block 0 reads a replicated value, the others a partial one)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import c8_blocks as S  # noqa: E402


def build(rank, world_size):
    return S.build_stack(rank, world_size, S.PartialBlock)
