"""Layer memoization (check/blocks.py, docs/memoization.md): a stack of 8 blocks is proved once and
reused, and nothing that is not exactly block 0 renamed is reused -- a wrong block fails at its own
operator, a block whose parameters the spec relates differently or whose input boundary holds
another relation is checked on its own.  The programs are class 8 of the soundness corpus, their
labels confirmed on gloo (tests/corpus/soundness/run_gloo.py; `pytest -m gloo`)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from entangle_py.check import blocks as B
from entangle_py.check import spec as S
from entangle_py.check.checker import Checker
from entangle_py.config import Policy
from entangle_py.frontend.capture import capture

SOUND = Path(__file__).resolve().parent / "corpus" / "soundness"
sys.path.insert(0, str(SOUND))
import c8_blocks  # noqa: E402

WRONG = c8_blocks.WRONG


@pytest.fixture(scope="module")
def captured():
    """Each c7 script captured once: sequential and on 2 ranks."""
    cache = {}

    def get(script):
        if script not in cache:
            path = str(SOUND / f"{script}.py")
            cache[script] = (capture(path, 1), capture(path, 2))
        return cache[script]
    return get


def check(captured, name, script=None, memoize=True):
    seq, dist = captured(script or name)
    return Checker(seq, dist, S.load_spec(str(SOUND / f"{name}.toml")), policy=Policy(memoize=memoize)).run()


def block_of(res, seq) -> int:
    """The block of the stack the failing G_s operator is in."""
    st = B.find_stack(seq.ranks[0])
    ops = [n.name for n in B.operators(seq.ranks[0])]
    return (ops.index(res.failure.node) - st.start) // st.period


# (name, script, verdict, blocks recognised, blocks reused, the block it fails in, the code of the
# failing line).  Recognition proposes blocks alike in G_s and on every rank; a wrong block 5 that
# differs in its operators (a missing collective, another slice offset, a constant) ends the stack
# there; one that differs only in its facts (a parameter's relation, its input's) is recognised and
# not reused.
CASES = [
    ("c8_stack_correct", None, "refines", 8, 7, None, None),
    ("c8_stack_sliced_correct", None, "refines", 8, 7, None, None),
    # one constant differs in block 5 (in both programs): blocks 5-7 are checked on their own
    ("c8_stack_tanh_correct", None, "refines", WRONG, WRONG - 1, None, None),
    # block 5's bias add, on partial sums no rank reduces: the bug's own line
    ("c8_stack_noreduce_wrong", None, "fails", WRONG, WRONG - 1, WRONG, "# BUG: no all-reduce"),
    ("c8_stack_sliced_offset_wrong", None, "fails", WRONG, WRONG - 1, WRONG, "F.gelu(F.linear(x, w1, self.b1))"),
    # the spec relates block 5's bias differently: its facts are not block 0's renamed
    ("c8_stack_param_wrong", "c8_stack_correct", "fails", 8, WRONG - 1, WRONG, "+ self.b2"),
    # every block alike, but block 1 reads a partial sum where block 0 read a replicated value
    ("c8_stack_boundary_wrong", None, "fails", 8, 0, 1, "F.gelu(F.linear(x, self.w1, self.b1))"),
]


@pytest.mark.parametrize("name,script,verdict,count,reused,block,code", CASES, ids=[c[0] for c in CASES])
def test_memoized_verdict_and_location(captured, name, script, verdict, count, reused, block, code):
    res = check(captured, name, script)
    assert res.status == verdict, res.failure
    assert res.blocks == {"proved": 1, "reused": reused, "count": count, "period": res.blocks["period"]}
    if block is not None:
        seq, _ = captured(script or name)
        assert block_of(res, seq) == block
        assert code in res.failure.source, res.failure.source
        # the same operator as without memoization
        plain = check(captured, name, script, memoize=False)
        assert (plain.status, plain.failure.node) == (res.status, res.failure.node)
        assert plain.blocks == {}


def test_reused_operators_have_the_renamed_relation(captured):
    """Block k's operators carry block 0's relations with block k's names, and the JSON report
    says they were reused (not proved) and from which operator."""
    res = check(captured, "c8_stack_correct")
    seq, _ = captured("c8_stack_correct")
    st = B.find_stack(seq.ranks[0])
    ops = B.operators(seq.ranks[0])
    last = st.block(ops, 7)
    reused = [res.operators[n.name] for n in last if n.name in res.operators]
    assert reused and all(s["status"] == "reused" for s in reused)
    assert {s["reused_from"] for s in reused} <= {n.name for n in st.block(ops, 0)}
    out_rel = res.op_relations[last[-1].name]
    assert "all_reduce_7" in out_rel or "add_7" in out_rel, out_rel


def test_find_stack_and_block_map(captured):
    seq, dist = captured("c8_stack_correct")
    s = B.find_stack(seq.ranks[0])
    assert s.count == 8
    for g in dist.ranks:
        d = B.find_stack(g)
        assert d.count == 8 and d.period == s.period + 2     # all_reduce and wait_tensor
        m = B.block_map(g, d, 3)
        assert len(set(m.values())) == len(m)


def test_renaming_is_textual_and_leaves_shared_names():
    ren = B.Renaming({"r0.mm": "r0.mm_3"}, {"param:layers.0.w": "param:layers.3.w"}, {"$v1": "$v9"})
    text = '(union $v1 (binary "add" (Gd "r0.mm") (Gs "param:layers.0.w")))'
    assert ren(text) == '(union $v9 (binary "add" (Gd "r0.mm_3") (Gs "param:layers.3.w")))'
    assert ren('(Gd "r1.mask")') == '(Gd "r1.mask")'
    assert not B.Renaming({"a": "c", "b": "c"}, {}, {}).injective()


def test_a_stack_is_memoized_only_where_reuse_skips_enough_operators(captured):
    seq, dist = captured("c8_stack_correct")
    p = B.plan(seq.ranks[0], dist.ranks)
    assert p.count == 8
    assert B.plan(seq.ranks[0], dist.ranks, min_ops=7 * p.seq.period) is not None
    assert B.plan(seq.ranks[0], dist.ranks, min_ops=7 * p.seq.period + 1) is None
