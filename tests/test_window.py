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


def _two_ranks():
    """On each rank r: x -> h1 = f(x, t(w1)) -> h2 = f(h1, t(w2)); a mask m = arange on its own;
    and a branch y -> g = f(y, t(w1)) that does not meet x."""
    facts = DistFacts()
    leaf = lambda k: f'(Gd "{k}")'
    for r in (0, 1):
        k = lambda n: f"r{r}.{n}"
        for n in ("x", "y", "w1", "w2", "t1", "t2", "h1", "h2", "g", "m"):
            facts.declare(k(n), [f"(set (ndim {leaf(k(n))}) 2)"])
        facts.define(k("t1"), f"(union {leaf(k('t1'))} (transpose {leaf(k('w1'))} 0 1))")
        facts.define(k("t2"), f"(union {leaf(k('t2'))} (transpose {leaf(k('w2'))} 0 1))")
        facts.define(k("h1"), f"(union {leaf(k('h1'))} (mm {leaf(k('x'))} {leaf(k('t1'))}))")
        facts.define(k("h2"), f"(union {leaf(k('h2'))} (mm {leaf(k('h1'))} {leaf(k('t2'))}))")
        facts.define(k("g"), f"(union {leaf(k('g'))} (mm {leaf(k('y'))} {leaf(k('t1'))}))")
        facts.define(k("m"), f"(union {leaf(k('m'))} (arange 0 1 (DLit 4)))")
    return facts


def test_around_takes_what_a_value_related_to_the_seeds_can_equal():
    """A deferred operator's second attempt: the tensors connected to its inputs' related ones,
    on every rank (what they are computed from, what is computed from them), and what the ranks
    compute from constants -- not another branch of the program."""
    w = Window(_two_ranks(), depth=1)
    took = {c.split('"')[1] for c in w.around({"r0.h1"}) if c.startswith("(union")}
    assert took == {f"r{r}.{n}" for r in (0, 1) for n in ("t1", "h1", "t2", "h2", "m")}
    assert not w.complete and w.around({"r0.h1"}) == []


@pytest.mark.parametrize("text", [
    '(Gd "r0.x")', '(concat (Cons (Gd "r0.x") (Cons (Gd "r1.x") (Nil))) 0)',
    '(view (Gd "r0.a") (DCons (DLit 4) (DNil)))', '(mm (Gd "r0.a") (Gd "r0.b"))',
    '(rsum (Cons (Gd "r0.(mm x") (Cons (Gd "r1.\\"(mm") (Nil))))',      # a name that reads as an op
    '(concat (Cons (mm (Gd "r0.a") (Gd "r0.b")) (Nil)) 1)', '(slice (Gd "r0.a") 0 0 2 1)', '3', '"(mm"',
])
def test_cleanliness_read_from_text_is_cleanliness_of_the_parsed_term(text):
    from entangle_py.semantics.terms import is_clean, is_clean_text, parse_sexpr
    assert is_clean_text(text) == is_clean(parse_sexpr(text))


def test_data_movement_is_the_definitions_whose_terms_are_clean():
    facts = DistFacts()
    for k in ("r0.a", "r0.b", "r0.c", "r0.d"):
        facts.declare(k, [])
    facts.define("r0.c", '(union (Gd "r0.c") (concat (Cons (Gd "r0.a") (Cons (Gd "r0.b") (Nil))) 0))')
    facts.define("r0.d", '(union (Gd "r0.d") (mm (Gd "r0.a") (Gd "r0.c")))')
    from entangle_py.check.window import data_movement
    assert data_movement(facts) == {"r0.c"}
