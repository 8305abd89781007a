"""CORRECT: 8 Megatron MLP blocks (column-parallel fc1, gelu, row-parallel fc2, all-reduce, bias): the memoized check proves block 0 and reuses it for the other 7."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import c8_blocks as S  # noqa: E402


def build(rank, world_size):
    return S.build_stack(rank, world_size, S.Block)
