"""CORRECT: c8_stack_correct with block 5's gelu the tanh approximation, in both programs: one constant
differs, so block 5 is not block 0's and is checked on its own (blocks 6 and 7 too)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import c8_blocks as S  # noqa: E402


def build(rank, world_size):
    return S.build_stack(rank, world_size, S.Block, S.TanhBlock)
