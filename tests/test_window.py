"""The exploration window and retiring proven facts change what a check costs, never its verdict.

Every shipped example is checked twice: with the default limits, and with a window one operator
deep and a fresh e-graph before every G_s operator (window_nodes=0).  Status, failing operator,
relations and expectations must agree.
"""
from pathlib import Path

import pytest

from entangle_py.config import Policy
from entangle_py.pipeline import check_files
from entangle_py.check.window import DistFacts, Window

GRAPHS = Path(__file__).resolve().parents[1] / "graphs"
EXAMPLES = sorted(d.name for d in GRAPHS.iterdir() if (d / "seq.pt").exists())


def _outcome(res):
    return (res.status, res.failure and (res.failure.node, res.failure.reason), res.relations,
            res.expectations)


@pytest.mark.parametrize("name", EXAMPLES)
def test_narrow_window_and_retiring_keep_the_verdict(name):
    d = GRAPHS / name
    spec = str(d / "spec.toml") if (d / "spec.toml").exists() else None
    wide, _ = check_files(str(d / "seq.pt"), str(d / "dist.pt"), spec)
    narrow, ch = check_files(str(d / "seq.pt"), str(d / "dist.pt"), spec,
                             policy=Policy(window_depth=1, window_nodes=0))
    assert narrow.retired > 0 or narrow.ops_checked == 1    # before every operator but the first
    assert narrow.rechecked == (narrow.status != "refines")
    assert _outcome(narrow) == _outcome(wide)


def test_examples_are_all_compared():
    assert {"mlp_tp2", "mlp_tp2_missing_allreduce", "mlp_tp4_joint", "attention_tp2"} <= set(EXAMPLES)


def _chain(layers):
    """x -> h1 = f(x, t(w1)) -> h2 = f(h1, t(w2)) -> ... on one rank, as egglog facts."""
    facts = DistFacts()
    leaf = lambda k: f'(Gd "{k}")'
    facts.declare("x", [f"(set (ndim {leaf('x')}) 2)"])
    prev = "x"
    for i in range(1, layers + 1):
        for k in (f"w{i}", f"t{i}", f"h{i}"):
            facts.declare(k, [f"(set (ndim {leaf(k)}) 2)"])
        facts.define(f"t{i}", f"(union {leaf(f't{i}')} (transpose {leaf(f'w{i}')} 0 1))")
        facts.define(f"h{i}", f"(union {leaf(f'h{i}')} (mm {leaf(prev)} {leaf(f't{i}')}))")
        prev = f"h{i}"
    return facts


def _taken(window, seeds):
    cmds = window.explore(seeds)
    return {c.split('"')[1] for c in cmds if c.startswith("(union")}


def test_explore_goes_depth_operators_downstream_pulling_weight_preprocessing():
    w = Window(_chain(6), depth=2)
    # h1 and h2 are within 2 operators of x; each pulls its weight's transpose; h3 is too far
    assert _taken(w, {"x"}) == {"t1", "h1", "t2", "h2"}
    assert _taken(w, {"x"}) == set()                   # already in the e-graph
    assert _taken(w, {"h2"}) == {"t3", "h3", "t4", "h4"}


def test_weights_alone_do_not_open_far_layers():
    """Every weight is related from the start; a layer still waits for its activation."""
    w = Window(_chain(6), depth=3)
    assert _taken(w, {f"w{i}" for i in range(1, 7)} | {"x"}) == {"t1", "h1", "t2", "h2", "t3", "h3",
                                                               "t4", "t5", "t6"}


def test_data_movement_spends_no_depth():
    """A redistribution (view, slices, a concat, a reduce-scatter: clean definitions) between two
    compute operators does not use up the window: the consumer after it comes in at depth 1."""
    facts = _chain(3)
    leaf = lambda k: f'(Gd "{k}")'
    prev = "h3"
    for i, k in enumerate(("v", "s", "c", "rs")):
        facts.declare(k, [f"(set (ndim {leaf(k)}) 2)"])
        term = {"v": f"(view {leaf(prev)} (DCons (DLit 4) (DCons (DLit 2) (DNil))))",
                "s": f"(slice {leaf(prev)} 0 (DLit 0) (DLit 2))",
                "c": f"(concat (Cons {leaf(prev)} (Nil)) 0)",
                "rs": f"(rsum (Cons {leaf(prev)} (Nil)))"}[k]
        facts.define(k, f"(union {leaf(k)} {term})")
        prev = k
    facts.declare("y", [f"(set (ndim {leaf('y')}) 2)"])
    facts.define("y", f"(union {leaf('y')} (mm {leaf('rs')} {leaf('t3')}))")
    facts.declare("z", [f"(set (ndim {leaf('z')}) 2)"])
    facts.define("z", f"(union {leaf('z')} (mm {leaf('y')} {leaf('t3')}))")
    w = Window(facts, depth=1)
    # the seed h3, the chain, y (with the weight it reads); z is a second compute operator
    assert _taken(w, {"h3"}) == {"h3", "v", "s", "c", "rs", "y", "t3"}
    # near the inputs data movement is a weight's preprocessing, pulled in by its consumer: a
    # weight's transpose spends its level as before (test_weights_alone_do_not_open_far_layers)


def test_everything_inserts_the_rest_once():
    w = Window(_chain(3), depth=1)
    first = _taken(w, {"x"})
    rest = {c.split('"')[1] for c in w.everything() if c.startswith("(union")}
    assert first | rest == {"t1", "h1", "t2", "h2", "t3", "h3"} and not first & rest
    assert w.complete and w.everything() == []
