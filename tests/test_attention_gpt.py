"""The attention of the real Megatron GPT graphs (third-party data, TP2 with heads split across
ranks) refines between the QKV projection output and the row-parallel output projection.

The layer norm and embedding before the attention are not covered here, so both graphs are cut
at ``add_1`` (the QKV projection plus bias, [S, B, 3*H*E], heads sharded on dim 2) and at the
``empty`` buffer fed to ``baddbmm`` with beta=0; ``view_17`` (the output projection before the
reduce-scatter) must then be the sum of the ranks' partial products.
"""
from pathlib import Path

import pytest

from entangle_py.ir import graph as G
from entangle_py.check import spec as S
from entangle_py.check.checker import Checker

ROOT = Path(__file__).resolve().parents[1]
GPT = ROOT.parent / "shared" / "external" / "entangle-data" / "gpt"

pytestmark = pytest.mark.skipif(not GPT.exists(), reason=f"third-party graphs not present at {GPT}")

CUTS = ("add_1", "empty")
OUT = "view_17"


def _cut(bundle: G.Bundle, cuts, outs) -> G.Bundle:
    """Each rank graph restricted to what ``outs`` need, with ``cuts`` turned into inputs."""
    ranks = []
    for g in bundle.ranks:
        keep, stack = set(), [o for o in outs if g.has(o)]
        while stack:
            n = stack.pop()
            if n in keep:
                continue
            keep.add(n)
            if n not in cuts:
                stack.extend(g.node(n).refs())
        nodes = [G.Node(n.name, "placeholder", (), {}, n.val, n.source, n.module) if n.name in cuts else n
                 for n in g.nodes if n.name in keep]
        inputs = [p for p in g.inputs if p.node in keep] + [G.Port(c, c) for c in cuts if c in keep]
        ranks.append(G.RankGraph(g.rank, nodes, inputs, [G.Port(o, o) for o in outs if o in keep],
                                 g.groups, g.symbols, g.guards))
    return G.Bundle(ranks, bundle.kind, bundle.meta)


@pytest.fixture(scope="module")
def graphs():
    from entangle_py.frontend.fx_import import import_fx
    seq = _cut(import_fx([str(GPT / "paral1_layer1" / "fw.g0.r0.py")]), CUTS, [OUT])
    dist = _cut(import_fx([str(GPT / "paral2_layer1" / f"fw.g0.r{r}.py") for r in (0, 1)]), CUTS, [OUT])
    return seq, dist


def _spec(add_1="shard(2)", proj="shard(1)"):
    return S.parse_spec({"inputs": {"add_1": add_1, "empty": "shard(0)", "primals_6": proj,
                                    "primals_19": "replicate"},
                         "expect": {OUT: "partial"},
                         # the dumps have training-mode dropout and no evidence of the ranks'
                         # generators: the coupling of the draws is the user's assumption
                         "assume": {"same_rng": True}})


def test_gpt_attention_refines_to_partial_sum(graphs):
    seq, dist = graphs
    ops = {n.target for n in seq.ranks[0].nodes}
    assert {"aten.baddbmm.default", "aten.masked_fill.Scalar", "aten._softmax.default", "aten.bmm.default",
            "aten.permute.default", "aten.split_with_sizes.default"} <= ops
    res = Checker(seq, dist, _spec()).run()
    assert res.status == "refines", res.failure
    assert res.expectations == [(OUT, "partial", res.relations[OUT], True)]
    assert res.relations[OUT] == "sum(r0.view_17, r1.view_17)"   # the ranks' partial products


@pytest.mark.parametrize("which", ["heads", "projection"])
def test_gpt_attention_with_ranks_swapped_fails_at_output_projection(graphs, which):
    """Heads in the other rank order on one side only: the row-parallel product pairs each rank's
    attention output with the other rank's weight rows."""
    seq, dist = graphs
    spec = _spec(add_1="concat(r1.add_1, r0.add_1, dim=2)") if which == "heads" else \
        _spec(proj="concat(r1.primals_6, r0.primals_6, dim=1)")
    res = Checker(seq, dist, spec).run()
    assert res.status == "fails"
    assert res.failure.node == "mm_1" and res.failure.target == "aten.mm.default"


def test_gpt_attention_softmax_over_wrong_dim_fails_there(graphs):
    """Ranks normalising the scores over the query dim instead of the key dim: no clean mapping
    for the sequential softmax."""
    seq, dist = graphs
    ranks = []
    for g in dist.ranks:
        nodes = [G.Node(n.name, n.target, (n.args[0], -2) + tuple(n.args[2:]), n.kwargs, n.val, n.source, n.module)
                 if n.name == "_softmax" else n for n in g.nodes]
        ranks.append(G.RankGraph(g.rank, nodes, g.inputs, g.outputs, g.groups, g.symbols, g.guards))
    res = Checker(seq, G.Bundle(ranks, dist.kind, dist.meta), _spec()).run()
    assert res.status == "fails"
    assert res.failure.node == "_softmax"


def test_gpt_attention_with_ranks_swapped_on_both_sides_refines(graphs):
    """Heads AND the projection's rows in the other rank order: a correct program.  Its dropout's
    draws are coupled in the order the heads are laid out (any order couples independent draws;
    check/random.py Coupling.ordered), so the swap is followed through the dropout."""
    seq, dist = graphs
    spec = _spec(add_1="concat(r1.add_1, r0.add_1, dim=2)", proj="concat(r1.primals_6, r0.primals_6, dim=1)")
    res = Checker(seq, dist, spec).run()
    assert res.status == "refines", res.failure
    assert [d["coupling"] for d in res.random_draws] == ["concat(r1.native_dropout_1[1], r0.native_dropout_1[1], dim=1)"]
