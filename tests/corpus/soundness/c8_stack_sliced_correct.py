"""CORRECT: 8 blocks whose fc1 weight is replicated and sliced by each rank at its own rows."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import c8_blocks as S  # noqa: E402


def build(rank, world_size):
    return S.build_stack(rank, world_size, S.SlicedBlock)
