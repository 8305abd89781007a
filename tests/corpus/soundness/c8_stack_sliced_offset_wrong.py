"""WRONG: c8_stack_sliced_correct, but block 5 slices fc1's weight at the other rank's rows."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import c8_blocks as S  # noqa: E402


def build(rank, world_size):
    return S.build_stack(rank, world_size, S.SlicedBlock, S.ShiftedSliceBlock)
