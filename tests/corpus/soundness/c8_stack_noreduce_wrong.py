"""WRONG: 8 blocks, block 5 omits its all-reduce (its partial sums go on as if they were the value); the other 7 are the correct twin's."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import c8_blocks as S  # noqa: E402


def build(rank, world_size):
    return S.build_stack(rank, world_size, S.Block, S.NoReduceBlock)
