"""The simulated collectives (entangle_py/oracle/interp.py) against the real ones on gloo.

Each case runs a ``_c10d_functional`` op -- the op captures record -- on 2 and 3 gloo processes
(one spawn per world size), then runs a hand-built bundle holding the same op (same arguments,
the group table as capture records it: global ranks in group-rank order) through
``interp.run_bundle`` on the same inputs, and compares every rank's result.

Broadcast's ``src`` is a GROUP rank for ``_c10d_functional.broadcast`` (gloo on the group
[1, 2] of 3 ranks: src=0 sends global rank 1's tensor, src=2 is "invalid root rank"); the
reordered groups (``new_group([1, 0], sort_ranks=False)``) and the subgroup [1, 2] tell a group
rank from a global one.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

from entangle_py.ir import graph as G
from entangle_py.oracle import interp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "corpus"))
from soundness import gloo_ranks  # noqa: E402

NS = "_c10d_functional"

# group specs: None = the world; (ranks, sort) = dist.new_group(ranks, sort_ranks=sort)
WORLD_G = None


def _cases(world):
    """(name, op, group, args after the input (group name appended), in_shape(rank), out_shape(rank))."""
    w = world
    cases = [
        ("all_reduce_sum", "all_reduce", WORLD_G, ["sum"], lambda r: (3, 2), lambda r: (3, 2)),
        ("all_reduce_max", "all_reduce", WORLD_G, ["max"], lambda r: (3, 2), lambda r: (3, 2)),
        ("all_reduce_min", "all_reduce", WORLD_G, ["min"], lambda r: (3, 2), lambda r: (3, 2)),
        ("all_reduce_product", "all_reduce", WORLD_G, ["product"], lambda r: (3, 2), lambda r: (3, 2)),
        ("all_reduce_avg", "all_reduce", WORLD_G, ["avg"], lambda r: (3, 2), lambda r: (3, 2)),
        ("all_gather", "all_gather_into_tensor", WORLD_G, [w], lambda r: (2, 3), lambda r: (2 * w, 3)),
        ("reduce_scatter_sum", "reduce_scatter_tensor", WORLD_G, ["sum", w], lambda r: (2 * w, 3), lambda r: (2, 3)),
        ("all_to_all_even", "all_to_all_single", WORLD_G, [[2] * w, [2] * w], lambda r: (2 * w, 3), lambda r: (2 * w, 3)),
        # rank r sends j+1 rows to rank j and receives r+1 rows from every rank
        ("all_to_all_uneven", "all_to_all_single", WORLD_G,
         [lambda r: [r + 1] * w, lambda r: [j + 1 for j in range(w)]],
         lambda r: (sum(j + 1 for j in range(w)), 2), lambda r: (w * (r + 1), 2)),
        ("broadcast_world_src1", "broadcast", WORLD_G, [1], lambda r: (4,), lambda r: (4,)),
        ("broadcast_reordered_src0", "broadcast", ([1, 0], False), [0], lambda r: (4,), lambda r: (4,)),
        ("broadcast_reordered_src1", "broadcast", ([1, 0], False), [1], lambda r: (4,), lambda r: (4,)),
        ("all_gather_reordered", "all_gather_into_tensor", ([1, 0], False), [2], lambda r: (2, 3), lambda r: (4, 3)),
        ("reduce_scatter_reordered", "reduce_scatter_tensor", ([1, 0], False), ["sum", 2],
         lambda r: (4, 3), lambda r: (2, 3)),
    ]
    if world >= 3:
        cases += [
            ("broadcast_subgroup_src0", "broadcast", ([1, 2], True), [0], lambda r: (4,), lambda r: (4,)),
            ("broadcast_subgroup_src1", "broadcast", ([1, 2], True), [1], lambda r: (4,), lambda r: (4,)),
            ("broadcast_reordered3_src0", "broadcast", ([2, 0], False), [0], lambda r: (4,), lambda r: (4,)),
            ("all_gather_subgroup", "all_gather_into_tensor", ([2, 1], False), [2], lambda r: (2, 3),
             lambda r: (4, 3)),
        ]
    return cases


def _members(world, group):
    if group is None:
        return list(range(world))
    ranks, sort = group
    return sorted(ranks) if sort else list(ranks)


def _args(args, rank):
    return [a(rank) if callable(a) else a for a in args]


def _inputs(world):
    g = torch.Generator().manual_seed(world)
    out = {}
    for name, op, group, args, ishape, _ in _cases(world):
        xs = [torch.randn(ishape(r), generator=g, dtype=torch.float64) for r in range(world)]
        out[name] = xs
    return out


def _worker(rank, world, port, tmp):
    gloo_ranks.init(rank, world, port, timeout_s=30)
    import torch.distributed as dist
    inputs = torch.load(os.path.join(tmp, "in.pt"))
    pgs, results = {None: dist.group.WORLD}, {}
    for _, _, group, _, _, _ in _cases(world):   # every rank creates every group, in the same order
        key = None if group is None else (tuple(group[0]), group[1])
        if key not in pgs:
            pgs[key] = dist.new_group(group[0], sort_ranks=group[1])
    for name, op, group, args, _, _ in _cases(world):
        if rank not in _members(world, group):
            continue
        pg = pgs[None if group is None else (tuple(group[0]), group[1])]
        assert dist.get_process_group_ranks(pg) == _members(world, group), name
        try:
            y = getattr(torch.ops._c10d_functional, op)(inputs[name][rank], *_args(args, rank), pg.group_name)
            results[name] = torch.ops._c10d_functional.wait_tensor(y).clone()
        except RuntimeError as e:
            results[name] = f"error: {str(e).splitlines()[0]}"
    dist.barrier()
    gloo_ranks.finish(tmp, rank, results)


def _gloo(world):
    return gloo_ranks.spawn(_worker, world, setup=lambda tmp: torch.save(_inputs(world), os.path.join(tmp, "in.pt")))


@pytest.fixture(scope="module", params=[2, 3], ids=["world2", "world3"])
def gloo_results(request):
    return request.param, _gloo(request.param)


def _simulate(world, case, xs):
    name, op, group, args, ishape, oshape = case
    members = _members(world, group)
    ranks = []
    for r in range(world):
        nodes = [G.Node("x", "placeholder", val=G.TensorMeta(tuple(ishape(r)), "float64"))]
        out = "x"
        if r in members:
            nodes += [G.Node("c", f"{NS}.{op}.default", (G.Ref("x"), *_args(args, r), "g"), {},
                             G.TensorMeta(tuple(oshape(r)), "float64")),
                      G.Node("w", f"{NS}.wait_tensor.default", (G.Ref("c"),), {},
                             G.TensorMeta(tuple(oshape(r)), "float64"))]
            out = "w"
        ranks.append(G.RankGraph(rank=r, nodes=nodes, inputs=[G.Port("x", "x")], outputs=[G.Port("y", out)],
                                 groups={"g": members}))
    envs = interp.run_bundle(G.Bundle(ranks), [{"x": x} for x in xs])
    return {r: envs[r]["w"] for r in members}


def test_interp_matches_gloo(gloo_results):
    world, ranks = gloo_results
    inputs = _inputs(world)
    checked, unsupported = [], []
    for case in _cases(world):
        name = case[0]
        members = _members(world, case[2])
        real = {r: ranks[r][name] for r in members}
        if any(isinstance(v, str) for v in real.values()):
            # gloo refuses it (avg): the simulator may simulate it, nothing to compare
            unsupported.append((name, next(v for v in real.values() if isinstance(v, str))))
            continue
        sim = _simulate(world, case, inputs[name])
        for r in members:
            assert sim[r].shape == real[r].shape, (name, r, sim[r].shape, real[r].shape)
            assert torch.allclose(sim[r], real[r], rtol=1e-12, atol=1e-12), (name, r, sim[r], real[r])
        checked.append(name)
    assert {"all_reduce_sum", "all_reduce_max", "all_gather", "reduce_scatter_sum", "all_to_all_even",
            "all_to_all_uneven", "broadcast_world_src1", "broadcast_reordered_src0"} <= set(checked), unsupported
    assert set(unsupported) <= {("all_reduce_avg", u) for _, u in unsupported}, unsupported
    print(f"world {world}: {len(checked)} collectives match gloo; gloo refuses {unsupported}")


def test_funcol_broadcast_src_is_a_group_rank(gloo_results):
    """On the group [1, 0] (group rank 0 = global rank 1), src=0 sends global rank 1's tensor."""
    world, ranks = gloo_results
    xs = _inputs(world)
    for r in (0, 1):
        assert torch.equal(ranks[r]["broadcast_reordered_src0"], xs["broadcast_reordered_src0"][1])
        assert torch.equal(ranks[r]["broadcast_reordered_src1"], xs["broadcast_reordered_src1"][0])
    if world >= 3:     # the group [1, 2]: src 0 and 1 are global ranks 1 and 2
        for r in (1, 2):
            assert torch.equal(ranks[r]["broadcast_subgroup_src0"], xs["broadcast_subgroup_src0"][1])
            assert torch.equal(ranks[r]["broadcast_subgroup_src1"], xs["broadcast_subgroup_src1"][2])
        for r in (0, 2):   # the group [2, 0]: src 0 is global rank 2
            assert torch.equal(ranks[r]["broadcast_reordered3_src0"], xs["broadcast_reordered3_src0"][2])
