"""Rank classes (entangle_py/ir/rank_classes.py): ranks that run one graph up to their rank
constants are one class; a replica that differs -- reads a stale copy of its weight, scales where
the others do not -- is a class of its own, named where it departs, and its check still fails
(classes are detection only: every rank is checked)."""
from __future__ import annotations

import json

import pytest

from entangle_py.ir import graph as G
from entangle_py.ir.rank_classes import _affine, canonical_form, rank_classes

# Data parallel over 4 replicas: the batch sharded, the weight replicated, the output sharded
# like the batch; no collective.  {ODD} is what replica 2 does differently.
PROGRAM = '''
import torch
import torch.nn as nn

B, K, F = 8, 6, 5


class Replica(nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.rank = rank
        self.weight = nn.Parameter(torch.empty(F, K))

    def forward(self, x, update):
        new = self.weight - update      # this step's weight, returned as the step's new state
        w, scale = new, 1.0
        {ODD}
        return (x @ w.t()) * scale, new


def build(rank, world_size):
    return Replica(rank), {{"x": torch.randn(B // world_size, K), "update": torch.randn(F, K)}}
'''
ODD = {"same": "pass",
       "stale": "if self.rank == 2: w = self.weight    # BUG: replica 2 multiplies by the stale weight",
       "scaled": "if self.rank == 2: scale = 3.0       # BUG: replica 2 scales its output"}
SPEC = '''
[inputs]
"input:x" = "shard(0)"
"param:weight" = "replicate"
"input:update" = "replicate"
[outputs]
check = ["out:0", "out:1"]
[expect]
"out:0" = "shard(0)"
"out:1" = "replicate"
'''


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    from entangle_py.frontend.capture import capture
    d = tmp_path_factory.mktemp("rank_classes")
    (d / "spec.toml").write_text(SPEC)
    out = {}
    for name, odd in ODD.items():
        script = d / f"{name}.py"
        script.write_text(PROGRAM.format(ODD=odd))
        seq, dist = d / f"{name}.seq.pt", d / f"{name}.dist.pt"
        G.save(capture(str(script), 1), seq)
        G.save(capture(str(script), 4), dist)
        out[name] = (seq, dist)
    return d, out


def test_identical_replicas_are_one_class(captured):
    _, graphs = captured
    [only] = rank_classes(G.load(graphs["same"][1]))
    assert only.ranks == (0, 1, 2, 3) and only.differs is None
    assert only.varying == ()       # no literal differs; the ranks' generators differ, but no draw reads them


@pytest.mark.parametrize("name, where", [("stale", "operator 4 of rank 2: t = aten.t.default at "), ("scaled", "node mul arg 1 = 3.0 where rank 0 has 1.0")])
def test_a_replica_that_differs_is_a_class_of_its_own(captured, name, where):
    _, graphs = captured
    classes = rank_classes(G.load(graphs[name][1]))
    assert [c.ranks for c in classes] == [(0, 1, 3), (2,)], classes
    assert classes[1].differs and where in classes[1].differs, classes[1].differs


@pytest.mark.parametrize("name, code", [("same", 0), ("stale", 1), ("scaled", 1)])
def test_the_odd_replica_still_fails_and_the_report_lists_the_classes(captured, entangle, tmp_path, name, code):
    d, graphs = captured
    seq, dist = graphs[name]
    report = tmp_path / "r.json"
    p = entangle("check", seq, dist, "--spec", d / "spec.toml", "--json", report, "-v")
    assert p.returncode == code, p.stdout + p.stderr
    classes = json.loads(report.read_text())["rank_classes"]
    assert [c["ranks"] for c in classes] == ([[0, 1, 2, 3]] if name == "same" else [[0, 1, 3], [2]])
    assert "rank class {0, 1, 2, 3}" in p.stdout if name == "same" else "rank class {2}" in p.stdout


def test_rank_constants_affine_in_the_rank_stay_in_one_class(example):
    """The vocab-parallel embedding's shard bounds (0, 10 / 10, 20) are rank constants: one class,
    the bounds listed as constants differing."""
    _, dist, _ = example("vocab_embedding_tp2")
    [only] = rank_classes(G.load(dist))
    assert only.ranks == (0, 1)
    assert ("node ge arg 1", (10, 20)) in only.varying, only.varying


def test_affine():
    assert _affine([0, 1, 2, 3], [0, 10, 20, 30]) and _affine([0, 1, 2], [5, 5, 5])
    assert _affine([1, 3], [7.5, 2.5])
    assert not _affine([0, 1, 2, 3], [1, 1, 3, 1]) and not _affine([0, 1, 2], [0.0, float("nan"), 0.0])
    assert not _affine([0, 1, 2], [0, float("inf"), 0])


def test_form_ignores_names_but_not_wiring(example):
    """Node names are positions in the form: renaming every node keeps the form; rewiring one
    argument changes it."""
    import dataclasses
    _, dist, _ = example("mlp_tp2")
    g = G.load(dist).ranks[0]
    rename = {n.name: f"renamed_{i}" for i, n in enumerate(g.nodes)}

    def sub(v):
        if isinstance(v, G.Ref):
            return G.Ref(rename[v.name])
        return type(v)(sub(x) for x in v) if isinstance(v, (list, tuple)) else v
    renamed = dataclasses.replace(
        g, nodes=[dataclasses.replace(n, name=rename[n.name], args=sub(n.args)) for n in g.nodes],
        inputs=[dataclasses.replace(p, node=rename[p.node]) for p in g.inputs],
        outputs=[dataclasses.replace(p, node=rename[p.node]) for p in g.outputs])
    (form, consts), (form2, consts2) = canonical_form(renamed), canonical_form(g)
    assert form == form2 and [v for _, v in consts] == [v for _, v in consts2]
    k = next(i for i, n in enumerate(g.nodes) if len(list(n.refs())) >= 2)
    n = g.nodes[k]
    refs = [a for a in n.args if isinstance(a, G.Ref)]
    swapped = tuple(refs[1] if a == refs[0] else refs[0] if a == refs[1] else a for a in n.args)
    rewired = dataclasses.replace(g, nodes=g.nodes[:k] + [dataclasses.replace(n, args=swapped)] + g.nodes[k + 1:])
    assert canonical_form(rewired)[0] != canonical_form(g)[0]


# Replicated dropout: every replica draws the whole mask from its seeded generator; replica 2
# seeds with 1235 where the others seed with 1234 (its mask differs: the program is wrong).
SEEDED = '''
import torch
import torch.nn as nn
import torch.nn.functional as Fn


class Replica(nn.Module):
    def forward(self, x):
        return Fn.dropout(x, 0.5, training=True) * 2


def build(rank, world_size):
    torch.manual_seed(1234 + ({ODD} if rank == 2 else 0))
    return Replica(), {{"x": torch.randn(4, 6)}}
'''
SEEDED_SPEC = '[inputs]\n"input:x" = "replicate"\n[outputs]\ncheck = ["out"]\n[expect]\nout = "replicate"\n'


@pytest.mark.parametrize("odd, code", [(0, 0), (1, 1)], ids=["same-seed", "rank-dependent-seed"])
def test_a_rank_dependent_seed_is_a_differing_constant_and_fails(tmp_path, entangle, odd, code):
    from entangle_py.frontend.capture import capture
    script = tmp_path / "seeded.py"
    script.write_text(SEEDED.format(ODD=odd))
    (tmp_path / "spec.toml").write_text(SEEDED_SPEC)
    G.save(capture(str(script), 1), tmp_path / "seq.pt")
    G.save(capture(str(script), 4), tmp_path / "dist.pt")
    [only] = rank_classes(G.load(tmp_path / "dist.pt"))
    assert only.ranks == (0, 1, 2, 3)
    seeds = [v[1] for where, vals in only.varying if where == "random stream" for v in vals]
    assert seeds == ([] if odd == 0 else [1234, 1234, 1235, 1234]), only.varying
    p = entangle("check", tmp_path / "seq.pt", tmp_path / "dist.pt", "--spec", tmp_path / "spec.toml")
    assert p.returncode == code, p.stdout + p.stderr
