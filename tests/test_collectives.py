"""Collective lowering is faithful: the clean term the checker gives each rank's result, evaluated
with torch on the inputs, equals what the simulated collective (interp) computes."""
import pytest
import torch

from entangle_py.oracle import interp
from entangle_py.check import spec as S
from entangle_py.semantics import terms
from entangle_py.check.distributed import DistProgram
from entangle_py.check.names import Names
from entangle_py.check.sizes import Sizes
from entangle_py.check.window import Window
from entangle_py.engine.egraph import Engine
from entangle_py.lemmas import load_library
from test_interp import R, T, _coll_bundle, gen, op, rnd


def _lowered_terms(bundle):
    """For each rank: a term of its output 'w' over the ranks' inputs (Gd leaves of 'x' only)."""
    names = [Names(g) for g in bundle.ranks]
    sizes = Sizes(bundle.ranks[0], bundle, names[0], names, {})
    dist = DistProgram(bundle, names, S.Spec(), sizes).run()
    assert not dist.no_semantics, dist.no_semantics
    engine = Engine(load_library(), dims=sizes.solver)
    engine.add(*Window(dist.dfacts, depth=1).everything())
    out = []
    for r in range(bundle.world_size):
        variants = engine.variants(dist.dvar[r]["w"], 16)
        only_inputs = [t for t in variants if _leaves(t) and all(n.endswith(".x") for n in _leaves(t))]
        assert only_inputs, variants
        out.append(only_inputs[0])
    return out


def _leaves(t):
    if not isinstance(t, tuple):
        return []
    if isinstance(t[0], terms.Var) and t[0].name == "Gd":
        return [t[1]]
    return [x for a in t[1:] for x in _leaves(a)]


def _evaluate(t, xs):
    def sub(u):
        if isinstance(u, tuple) and isinstance(u[0], terms.Var) and u[0].name == "Gd":
            return terms.Var("x" + u[1].split(".")[0][1:])
        return tuple(sub(a) for a in u) if isinstance(u, tuple) else u
    return terms.evaluate(sub(t), {f"x{r}": x for r, x in enumerate(xs)})


CASES = {
    "all_reduce_sum": lambda w: (lambda r: op("c", "_c10d_functional.all_reduce.default", R("x"), "sum", "g",
                                              val=T(3, 2)), [(3, 2)] * w, (3, 2)),
    "all_reduce_max": lambda w: (lambda r: op("c", "_c10d_functional.all_reduce.default", R("x"), "max", "g",
                                              val=T(3, 2)), [(3, 2)] * w, (3, 2)),
    "all_gather": lambda w: (lambda r: op("c", "_c10d_functional.all_gather_into_tensor.default", R("x"), w, "g",
                                          val=T(2 * w, 3)), [(2, 3)] * w, (2 * w, 3)),
    "reduce_scatter": lambda w: (lambda r: op("c", "_c10d_functional.reduce_scatter_tensor.default", R("x"), "sum",
                                              w, "g", val=T(2, 3)), [(2 * w, 3)] * w, (2, 3)),
    "all_to_all_even": lambda w: (lambda r: op("c", "_c10d_functional.all_to_all_single.default", R("x"), None, None,
                                               "g", val=T(2 * w, 3)), [(2 * w, 3)] * w, (2 * w, 3)),
    "all_to_all_uneven": lambda w: (lambda r: op("c", "_c10d_functional.all_to_all_single.default", R("x"),
                                                 [r + 1] * w, [j + 1 for j in range(w)], "g", val=T(w * (r + 1), 2)),
                                    [(sum(range(1, w + 1)), 2)] * w, lambda r: (w * (r + 1), 2)),
    "broadcast": lambda w: (lambda r: op("c", "_c10d_functional.broadcast.default", R("x"), 1, "g", val=T(3)),
                            [(3,)] * w, (3,)),
}


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("case", sorted(CASES))
def test_collective_lowering_matches_simulation(case, world):
    make, in_shapes, out_shape = CASES[case](world)
    b = _coll_bundle(world, make, None, out_shape, in_shapes=in_shapes)
    g = gen(7)
    xs = [rnd(*s, g=g) for s in in_shapes]
    want = [e["w"] for e in interp.run_bundle(b, [{"x": x} for x in xs])]
    for r, t in enumerate(_lowered_terms(b)):
        assert torch.allclose(_evaluate(t, xs), want[r], rtol=1e-12, atol=1e-12), (case, r, t)


@pytest.mark.parametrize("everywhere", [False, True])
@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("kind", ["sum", "avg", "reduce_scatter"])
def test_a_part_of_float_zeros_is_left_out_of_the_sum(kind, world, everywhere):
    # DDP's reduction of zeros for a parameter a rank has no gradient of: the sum over ranks is the
    # other ranks' parts (x + 0.0 == x), and its term names only their inputs; zeros on every rank
    # (a parameter unused everywhere) sum to one rank's zeros
    from test_interp import F, ph
    from entangle_py.ir import graph as G

    def make(r):
        src = R("z") if r == 1 or everywhere else R("x")
        if kind == "reduce_scatter":
            c = op("c", "_c10d_functional.reduce_scatter_tensor.default", src, "sum", world, "g", val=T(2, 3))
        else:
            c = op("c", "_c10d_functional.all_reduce.default", src, kind, "g", val=T(2 * world, 3))
        return c
    shape = (2 * world, 3)
    b = _coll_bundle(world, make, shape, (2, 3) if kind == "reduce_scatter" else shape)
    for g in b.ranks:
        if g.rank == 1 or everywhere:
            g.nodes.insert(1, op("z", "aten.zeros.default", list(shape), dtype=G.TorchConst("dtype", F), val=T(*shape)))
            g.__post_init__()
    gen_ = gen(3)
    xs = [rnd(*shape, g=gen_) for _ in range(world)]
    want = [e["w"] for e in interp.run_bundle(b, [{"x": x} for x in xs])]
    if everywhere:     # one rank's zeros: no sum over ranks in any term of the result
        assert all(w.abs().max() == 0 for w in want)
        names = [Names(g) for g in b.ranks]
        sizes = Sizes(b.ranks[0], b, names[0], names, {})
        dist = DistProgram(b, names, S.Spec(), sizes).run()
        engine = Engine(load_library(), dims=sizes.solver)
        engine.add(*Window(dist.dfacts, depth=1).everything())

        def heads(t):
            if isinstance(t, tuple):
                yield t[0].name if isinstance(t[0], terms.Var) else t[0]
                for a in t[1:]:
                    yield from heads(a)
        for r in range(world):
            variants = engine.variants(dist.dvar[r]["w"], 16)
            assert variants and all("rsum" not in set(heads(t)) for t in variants), variants
        return
    for r, t in enumerate(_lowered_terms(b)):
        assert "r1.x" not in _leaves(t), t
        assert torch.allclose(_evaluate(t, xs), want[r], rtol=1e-12, atol=1e-12), (kind, r, t)
