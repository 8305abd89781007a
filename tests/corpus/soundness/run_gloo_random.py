"""Confirm the random-draw corpus labels (random_corpus.py) on 2 real gloo processes.

A program that draws random numbers is *correct* when its outputs equal the sequential program's
in distribution.  Here that is shown, or refuted, by a coupling built from what the ranks really
draw (forward, and joint: forward then backward):

1. Every rank runs ``build(rank, 2)`` on its gloo process -- which seeds its generator as the
   program does, and initialises its parameters for real (drawing from that generator, as in any
   run) -- gets its parameters, inputs and tangents derived from the sequential ones through the
   spec's ``[inputs]`` relation (copied in, drawing nothing), runs eagerly and records every draw
   it makes from its default generator (each op torch tags ``nondeterministic_seeded``), in order.
2. The ranks' k-th draws are grouped by value: equal draws are one draw made twice (replicas),
   different ones independent draws (these programs draw from one seed per rank or one seed for
   all, never from overlapping parts of one stream).
3. The sequential program's k-th draw is coupled with them: one group of its shape *is* the draw;
   groups of another shape that tile it along one dim make it as their concat (each element is
   drawn independently, so a concat of independent draws is a draw of the whole).  Anything else
   has no coupling, and the program is *wrong*: what the ranks draw does not have the sequential
   draw's distribution (the same mask on two shards: rows dropped alike where the sequential
   mask's rows are independent; different masks on replicas: replicas that differ; one mask on
   two copies).
4. The sequential program runs with the coupled draws in place of its own; each checked output
   (and, joint, each gradient) must match the ranks' through its ``[expect]`` relation (float64,
   rtol = atol = 1e-9).  Correct iff every draw is coupled and every output matches.  An output
   expected replicated that differs across the ranks is wrong whatever is drawn; ranks that draw
   a number of times other than the sequential program's are not decided here (draws pair by
   order).

``python tests/corpus/soundness/run_gloo_random.py [ID...]`` prints the table; ``run(entries)`` returns
``{id: {"label", "gloo", "detail"}}``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # examples/
sys.path.insert(0, str(Path(__file__).resolve().parent / "random_draws"))   # the programs' shared sizes
from soundness import gloo_ranks  # noqa: E402
from soundness.run_gloo import (_match, _ports, load_script, named_outputs, print_labels, read_spec,  # noqa: E402
                                spawn_with_payload)

WORLD = 2


class Draws(TorchDispatchMode):
    """Records every op that draws from the default generator (``recorded``, in order), or puts
    ``given[k]`` in place of the k-th one's values."""

    def __init__(self, given=None):
        super().__init__()
        self.given, self.recorded = given, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if torch.Tag.nondeterministic_seeded not in func.tags or kwargs.get("generator") is not None:
            return out
        drawn = out[-1] if isinstance(out, tuple) else out       # native_dropout: (value, mask)
        if self.given is not None:
            value = self.given[len(self.recorded)]
            if tuple(value.shape) != tuple(drawn.shape):
                raise ValueError(f"draw #{len(self.recorded) + 1} ({func}) has shape {tuple(drawn.shape)}, "
                                 f"its coupling {tuple(value.shape)}")
            with torch.no_grad():
                drawn.copy_(value)      # in place: an in-place draw (bernoulli_) returns its argument
        self.recorded.append(drawn.detach().clone())
        return out


def _values(entry, gen):
    """The sequential program's parameters and inputs (random float64), and every rank's part."""
    model, inputs = load_script(entry.script).build(0, 1)
    values = {port: torch.randn(tuple(t.shape), generator=gen, dtype=torch.float64)
              for port, t in _ports(model.to(torch.float64), inputs).items()}
    return values


def _split(value, relation):
    kind, d = relation
    if kind == "replicate":
        return [value.clone() for _ in range(WORLD)]
    if kind == "shard":
        return [c.clone() for c in torch.chunk(value, WORLD, dim=d)]
    raise ValueError(f"relation {kind} is not derived here")


def run_program(entry, rank, world, given, draws=None, joint=None):
    """``build(rank, world)`` run with the given parameters, inputs and (joint) tangent: its
    outputs and gradients by port name, and its draws."""
    mod = load_script(entry.script)
    model, inputs = mod.build(rank, world)       # seeds and initialises as the program does
    model = model.to(torch.float64)
    with torch.no_grad():
        for port, t in _ports(model, inputs).items():
            if port.startswith(("param:", "buffer:")):
                t.copy_(given[port])
    joint = entry.mode == "joint" if joint is None else joint
    args = {k: given[f"input:{k}"].clone().requires_grad_(joint and v.requires_grad) for k, v in inputs.items()}
    mode = Draws(draws)
    with mode, torch.set_grad_enabled(joint):
        outs = named_outputs(model(**args))
    result = {k: v.detach().clone() for k, v in outs.items()}
    if joint:
        for k, v in outs.items():
            v.backward(given[f"tangent:{k}"])
        for k, a in args.items():
            if a.grad is not None:
                result[f"grad:input:{k}"] = a.grad.clone()
        for n, p in model.named_parameters():
            if p.grad is not None:
                result[f"grad:{n}"] = p.grad.clone()
    return result, mode.recorded


def _worker(rank, world, port, out_dir, payload):
    gloo_ranks.init(rank, world, port, timeout_s=30)
    entries, given = torch.load(payload, weights_only=False)
    gloo_ranks.run_each(out_dir, rank, entries, lambda e: e.id, lambda e: run_program(e, rank, world, given[e.id][rank]))


def couple(seq_draw: torch.Tensor, theirs: list) -> tuple[torch.Tensor | None, str]:
    """(the sequential draw made of the ranks' draws, how) or (None, why there is none)."""
    groups: list[list[int]] = []
    for r, d in enumerate(theirs):
        for g in groups:
            if theirs[g[0]].shape == d.shape and torch.equal(theirs[g[0]], d):
                g.append(r)
                break
        else:
            groups.append([r])
    parts = [theirs[g[0]] for g in groups]
    names = "ranks " + " | ".join(", ".join(map(str, g)) for g in groups)
    if len(groups) == 1:
        if parts[0].shape == seq_draw.shape:
            return parts[0], f"{names} draw it identically"
        return None, (f"{names} draw identical values of shape {list(parts[0].shape)}, not the sequential "
                      f"{list(seq_draw.shape)}")
    for d in range(seq_draw.dim()):
        try:
            whole = torch.cat(parts, d)
        except RuntimeError:
            continue
        if whole.shape == seq_draw.shape:
            return whole, f"{names} draw independent parts (dim {d})"
    return None, (f"{names} draw different values of shapes {[list(p.shape) for p in parts]}, which do not tile "
                  f"the sequential {list(seq_draw.shape)}")


def run(entries=None, seed=0, verbose=True) -> dict:
    """Run ``entries`` (default: the whole corpus); the caller's generator is left as it was
    (build() seeds it)."""
    if entries is None:
        from soundness.random_corpus import CORPUS as entries   # noqa: N811
    with torch.random.fork_rng(devices=[]):
        return _run(list(entries), seed, verbose)


def _run(entries, seed, verbose) -> dict:
    given, seq_values = {}, {}
    for e in entries:
        rel, _, _ = read_spec(e.spec)
        values = _values(e, torch.Generator().manual_seed(seed))
        outs, _ = run_program(e, 0, 1, values, joint=False)
        if e.mode == "joint":
            gen = torch.Generator().manual_seed(seed + 1)
            values.update({f"tangent:{k}": torch.randn(tuple(v.shape), generator=gen, dtype=torch.float64)
                           for k, v in outs.items()})
        seq_values[e.id] = values
        per_rank = [dict() for _ in range(WORLD)]
        for port, v in values.items():
            if port not in rel:
                raise ValueError(f"{e.id}: the spec has no relation for {port}")
            for r, part in enumerate(_split(v, rel[port])):
                per_rank[r][port] = part
        given[e.id] = per_rank
    runs = gloo_ranks.run_all(entries, lambda e: e.id, lambda todo: spawn_with_payload(_worker, (todo, given)))
    report = {}
    for e in entries:
        res = runs[e.id]
        report[e.id] = {"label": e.label, **_verdict(e, seq_values[e.id], res)}
    if verbose:
        print_labels(report)
    return report


def _verdict(entry, values, res) -> dict:
    errors = [f"rank {r}: {x['error']}" for r, x in enumerate(res) if isinstance(x, dict) and "error" in x]
    if errors:
        return {"gloo": "wrong", "detail": "; ".join(errors)}
    _, seq_draws = run_program(entry, 0, 1, values)         # its own draws: their shapes and number
    rank_outs, rank_draws = zip(*res)
    _, _, expect = read_spec(entry.spec)
    for name, (kind, _) in expect.items():      # replicas differ in this run: wrong, whatever is drawn
        if kind == "replicate" and not all(torch.equal(o[name], rank_outs[0][name]) for o in rank_outs):
            return {"gloo": "wrong", "detail": f"{name}: the ranks' replicas differ"}
    if any(len(d) != len(seq_draws) for d in rank_draws):
        return {"gloo": "undecided", "detail": f"the ranks make {[len(d) for d in rank_draws]} draws, the sequential "
                                               f"program {len(seq_draws)}: draws pair by order only when equal"}
    notes, coupled = [], []
    for k, s in enumerate(seq_draws):
        theirs = [d[k] for d in rank_draws]
        value, how = couple(s, theirs)
        if value is None:
            return {"gloo": "wrong", "detail": f"draw #{k + 1}: no coupling ({how})"}
        if any(c.shape == value.shape and torch.equal(c, value) for c in coupled):
            return {"gloo": "wrong", "detail": f"draw #{k + 1}: the ranks draw the values of an earlier draw again, "
                                               f"where the sequential program's draws are independent"}
        coupled.append(value)
        notes.append(f"draw #{k + 1}: {how}")
    seq_outs, _ = run_program(entry, 0, 1, values, draws=coupled)
    verdict = "correct"
    for name, relation in expect.items():
        if name not in seq_outs or any(name not in o for o in rank_outs):
            verdict = "wrong"
            notes.append(f"{name}: missing")
            continue
        ok, why = _match(seq_outs[name], [o[name] for o in rank_outs], *relation)
        notes.append(f"{name}: {why}")
        verdict = verdict if ok else "wrong"
    return {"gloo": verdict, "detail": "; ".join(notes)}


if __name__ == "__main__":
    from soundness.random_corpus import BY_ID, CORPUS
    picked = [BY_ID[n] for n in sys.argv[1:]] if len(sys.argv) > 1 else CORPUS
    rep = run(picked)
    sys.exit(0 if all(r["label"] == r["gloo"] for r in rep.values()) else 1)
