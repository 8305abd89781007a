"""A numeric second opinion on every verdict (issue 12): the interpreter runs both programs.

* **Re-check after "refines"** (``recheck``): random float64 inputs for G_s (token ids inside the
  tables they index; symbolic sizes instantiated with small values inside their ranges and
  guards), distributed to the ranks through the input relation (the spec's, plus the inferred
  one); G_s and every rank of G_d run with simulated collectives; every certificate (a clean term
  over G_d leaves) is evaluated with ``terms.evaluate`` and compared with G_s's output, every
  expectation that holds is evaluated through its relation.  A disagreement makes the result
  exit 4 ("internal soundness error") naming the first G_s operator, in topological order, whose
  own per-operator relation (``Result.op_relations``) disagrees numerically with its G_s value:
  the proof step (lemma or lowering) that went wrong is at or just before it.
* **Witness after "fails"** (``witness``): the same runs; the failing G_s tensor is compared with
  what the distributed program *holds* -- every G_d tensor of its shape on every rank, and the
  clean terms over the ranks' tensors of one name (concat along a dim, sum over ranks).  The best
  (dirty) term is evaluated too, but only reported: a dirty term such as
  ``add(sum(r0.x, r1.x), bias)`` may equal the G_s value while no rank computes it (the missing
  all-reduce).  The checked outputs are compared through their [expect] relation (or, without
  one, rank 0's output, the concat along a dim and the sum over ranks).  Verdict: *numerically
  equal* when every checked output agrees on every draw (naming a held candidate for the failing
  tensor if there is one); otherwise *confirmed*, located at the failing operator (its rank-0
  tensor of the same name) when no rank holds its value, else at the first differing output.

Random draws are sampled as oracle/draws.py says: a rank's draw from a PRNG keyed by its
position in its rank's stream (identical positions, identical samples), a sequential draw as its
coupling's term over the ranks' samples -- or, with none, from a PRNG of its own, in which case a
failure computed from it is not decided numerically (independent draws differ whether or not the
program is right).
"""
from __future__ import annotations

import math
import time
from dataclasses import replace

from entangle_py.lazy import is_sympy, sympy, torch
from entangle_py.check.culprit import Provenance
from entangle_py.ir import graph as G
from entangle_py.ir import ops
from entangle_py.oracle import draws as D
from entangle_py.oracle import interp
from entangle_py.oracle import graph_values
from entangle_py.oracle import placement
from entangle_py.semantics import lower as L
from entangle_py.check import spec as S
from entangle_py.check.checker import OpFailure, gd_leaf
from entangle_py.semantics.terms import EvalError, Var, evaluate, parse_sexpr

DEFAULT_BUDGET = 2 << 30
DEFAULT_DRAWS = 2
RTOL = 1e-6
ATOL = 1e-9          # times the expected tensor's largest magnitude (at least 1)
MAX_CANDIDATES = 4000


class Skip(Exception):
    """The numeric check cannot run (over budget, or the interpreter cannot run a graph)."""


# ----------------------------------------------------------------------------- entry point

def attach(res, checker, draws: int = DEFAULT_DRAWS, budget_bytes: int = DEFAULT_BUDGET, seed: int = 0):
    """Run the re-check (refines) or the witness (fails) and store it in ``res.numeric``; a
    re-check disagreement turns ``res`` into an internal soundness error (exit 4)."""
    t0 = time.perf_counter()
    if res.status == "refines":
        res.numeric = recheck(checker, res, draws=draws, budget_bytes=budget_bytes, seed=seed)
    elif res.status == "fails":
        res.numeric = witness(checker, res, draws=draws, budget_bytes=budget_bytes, seed=seed)
    else:
        return None
    res.timings["numeric"] = time.perf_counter() - t0
    return res.numeric


def refuter(draws: int = DEFAULT_DRAWS, budget_bytes: int = DEFAULT_BUDGET, seed: int = 0):
    """The checker's numeric refuter (``Checker(refute=...)``): ``refute(checker, node, text)`` is a
    concrete difference between the G_s tensor ``node`` and the clean term ``text`` over the ranks'
    tensors, on the witness's own draws, or None.  Refuted only on a real difference: on every draw
    the values differ as :func:`compare` decides (the witness's tolerance), with every value finite
    (where inf or nan arises, IEEE and exact arithmetic part: x + 0.0 = x); None whenever the
    values cannot be computed.  The programs run once per check, when first asked."""
    runs = None

    def refute(checker, node: str, text: str) -> str | None:
        nonlocal runs
        if uncoupled_draws(checker, [node]):     # its values differ from any rank's by chance
            return None
        if runs is None:
            try:
                sizes, _ = _prepare(checker, budget_bytes)
                runs = [Draw(checker, seed + d, sizes) for d in range(draws)]
            except Skip:
                runs = []
        diffs = []
        for run in runs:
            expected = run.seq_env.get(node)
            try:
                got = run.eval(text)
            except EvalError:
                return None
            if not (isinstance(expected, torch.Tensor) and isinstance(got, torch.Tensor)
                    and _finite(expected) and _finite(got)):
                return None
            c = compare(expected, got)
            if c["equal"]:
                return None
            diffs.append(c)
        if not diffs:
            return None
        e = diffs[0]["examples"][:1]
        at = f" (at {e[0]['index']}: expected {e[0]['expected']}, got {e[0]['got']})" if e else ""
        return f"differs on {len(diffs)} random draws: {_diff_text(diffs[0])}{at}"
    return refute


def _finite(t: torch.Tensor) -> bool:
    return not t.is_floating_point() or bool(torch.isfinite(t).all())


# ----------------------------------------------------------------------------- running both programs

class OverridingRunner(interp.Runner):
    """The interpreter with given values for some inner nodes ([cut] tensors) and random draws
    given by ``draws(rank, node, like)`` (the drawn tensor, shaped like ``like``: oracle/draws.py)."""

    def __init__(self, bundle, inputs, overrides, draws, **kw):
        self.overrides = overrides
        self.draws = draws
        self.lowerers = [L.Lowerer(g) for g in bundle.ranks]
        super().__init__(bundle, inputs, None, torch.float64, True)

    def _arg(self, r, v, node):
        if isinstance(v, G.Ref) and v.name in self.overrides[r]:
            return self.overrides[r][v.name]
        return super()._arg(r, v, node)

    def _call(self, r, node, fn, args, kwargs):
        if node.target in ops.RANDOM_DRAWS and L.draws_in(self.lowerers[r].lower(node)):
            out = fn(*args, **kwargs)       # shaped and typed as the op draws; its values are replaced
            i = ops.RANDOM_DRAWS[node.target].output
            return D.with_draw(node, out, self.draws(r, node, out if i is None else out[i]), args)
        if node.target in ops.ALLOCATIONS:       # uninitialised memory: random, so that reading it shows
            v = fn(*args, **kwargs)
            return placement.random_tensor(v.shape, v.dtype, None, (-3, 4)) if isinstance(v, torch.Tensor) else v
        return fn(*args, **kwargs)

    def run(self):
        envs = super().run()
        for r, ov in enumerate(self.overrides):
            envs[r].update(ov)
        return envs


class Draw:
    """One random draw: G_s and every rank of G_d run on related inputs."""

    def __init__(self, checker, seed: int, sizes: dict):
        self.ck = checker
        seq_bundle, dist = checker.seq_bundle, checker.dist
        W = dist.world_size
        gen = torch.Generator().manual_seed(seed)
        g0 = checker.seq
        try:
            seq_in = placement.random_inputs(g0, gen, sizes=sizes, int_ranges=int_ranges(g0), float_dtype=torch.float64)
            if "no_ignored_targets" not in checker.spec.assume:   # else labels may be padding
                _ignore_some(seq_in, ignored_targets(g0), gen)
            _set_constants(g0, seq_in, checker.spec.constants)
            spec = replace(checker.spec, inputs={**checker.spec.inputs, **getattr(checker, "inferred", {})})
            given = checker._given_tensors()
            seq_ov, dist_ov = {}, [dict() for _ in range(W)]
            for name, rel in given.items():      # [cut]: a random value, distributed like an input
                node = checker.seq_names.node(name)
                meta = g0.node(node).val
                shape = [graph_values.eval_size(d, sizes, f"[cut] {name}") for d in meta.shape]
                value = placement.random_tensor(shape, _float(meta.dtype), gen)
                seq_ov[node] = value
                for r, t in enumerate(placement.distribute(value, rel, name, dist, spec.mesh if spec.mesh.shape else None, gen)):
                    dnode = checker.dist_names[r].node(name)
                    if t is not None and dnode is not None:
                        dist_ov[r][dnode] = t
            dist_in = placement.distribute_inputs({k: v for k, v in seq_in.items()}, spec, dist, gen, float_dtype=torch.float64)
            for r in range(W):
                _set_constants(dist.ranks[r], dist_in[r], checker.spec.constants)
            self.seed = seed
            self.seq_binding = dict(sizes)
            self._named = None
            self._sum_cache = {}
            keys = D.rank_keys(checker)     # the ranks first: a coupled sequential draw is computed from theirs
            torch.manual_seed(seed)
            runner = OverridingRunner(dist, dist_in, dist_ov, lambda r, node, like: D.sample(node, like, keys[(r, node.name)], seed))
            self.envs = runner.run()
            self.bindings = runner.bindings
            torch.manual_seed(seed)
            self.seq_env = OverridingRunner(seq_bundle, [seq_in], [seq_ov], self._seq_draw).run()[0]
        except graph_values.InterpError as e:
            raise Skip(f"the interpreter cannot run the programs: {e}") from None

    def _seq_draw(self, r, node, like):
        """A sequential draw: its coupling's term over the ranks' samples, else a sample of its own."""
        c = self.ck.coupled.get(L.draw_key(node))
        if c is None:
            return D.sample(node, like, ("seq", node.name), self.seed)
        try:
            v = self.eval(c.term)
        except EvalError as e:
            raise Skip(f"cannot evaluate the coupling of random draw {c.seq.key}: {e}") from None
        if tuple(v.shape) != tuple(like.shape):
            raise Skip(f"the coupling of random draw {c.seq.key} has shape {list(v.shape)}, the draw {list(like.shape)}")
        return v.to(like.dtype)

    # -- values of leaves
    def seq_value(self, key: str):
        base, _, idx = key.partition("#")
        node = self.ck.seq_names.node(base) or base
        v = self.seq_env[node]
        return v[int(idx)] if idx else v

    def dist_value(self, key: str):
        rank, node = key.split(".", 1)
        r = int(rank[1:])
        env, g = self.envs[r], self.ck.dist.ranks[r]
        base, _, idx = node.partition("#")
        if base in env:
            v = env[base]
            return v[int(idx)] if idx else v
        head, _, part = base.partition(":")      # a middle value the lowering introduced
        if g.has(head) and key not in self._sum_cache:
            low = L.Lowerer(g, constants=self.ck.spec.constants)
            res = L.bind_result(low.lower(g.node(head)), lambda name: gd_leaf(r, name))
            if not (isinstance(res, L.Decomposed) and res.name == part):
                raise EvalError(f"no value for G_d tensor {key}")
            self._sum_cache[key] = self.eval(res.inner.text)
        if key in self._sum_cache:
            return self._sum_cache[key]
        raise EvalError(f"no value for G_d tensor {key}")

    def size(self, text: str) -> int:
        binding = dict(self.seq_binding)
        for r, b in enumerate(self.bindings):
            binding.update({f"r{r}_{k}": v for k, v in b.items()})
            for k, v in b.items():
                binding.setdefault(k, v)
        binding.update({f"seq_{k}": v for k, v in self.seq_binding.items()})
        syms = {}
        for tok in set(_identifiers(text)):
            syms[tok] = G.symbolic.make_symbol(tok)
        e = G.symbolic.parse(text, syms)
        return graph_values.eval_size(e, binding, f"size {text}")

    def eval(self, text: str):
        """Value of an s-expression over (Gd "r<k>.<node>") and (Gs "<name>") leaves."""
        env = {}

        def sub(t):
            if not isinstance(t, tuple):
                return t
            head = t[0].name if isinstance(t[0], Var) else t[0]
            if head in ("Gd", "Gs"):
                var = f"_leaf{len(env)}"
                env[var] = self.dist_value(t[1]) if head == "Gd" else self.seq_value(t[1])
                return Var(var)
            if head == "DSym":
                return self.size(t[1])
            return tuple(sub(a) for a in t)

        try:
            return evaluate(sub(parse_sexpr(text)), env)
        except (KeyError, IndexError, graph_values.InterpError, G.symbolic.SymbolicError) as e:
            raise EvalError(f"cannot evaluate: {e}") from None

    def named(self):
        if self._named is None:
            self._named = interp.named_values(self.ck.dist, self.envs)
        return self._named


def _identifiers(text):
    import re
    return [t for t in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text)
            if t not in G.symbolic.FUNCTIONS and t not in ("True", "False")]


def _float(dtype: str) -> torch.dtype:
    d = placement.torch_dtype(dtype)
    return torch.float64 if d.is_floating_point else d


def _set_constants(g: G.RankGraph, inputs: dict, constants: dict):
    for p in g.inputs:
        if p.name in constants and p.name in inputs and isinstance(inputs[p.name], torch.Tensor):
            t = inputs[p.name]
            inputs[p.name] = torch.full(t.shape, constants[p.name], dtype=t.dtype)


def _readers(g: G.RankGraph, users: dict, start: str):
    """(name, node reading it) for the tensor ``start`` and what carries its values on unchanged
    (value-preserving ops: views, clones), depth first."""
    frontier, seen = [start], set()
    while frontier:
        cur = frontier.pop()
        if cur in seen:
            continue
        seen.add(cur)
        for u in users[cur]:
            un = g.node(u)
            yield cur, un
            if un.target in ops.VALUE_PRESERVING:
                frontier.append(u)


def int_ranges(g: G.RankGraph) -> dict:
    """Integer inputs' ranges: [0, rows) for ids indexing a table (embedding, W[ids]), [0, C) for
    class targets; [0, 2) otherwise.  Ids are in range whether or not valid_indices is assumed:
    the sequential program itself would fail on an id outside its table."""
    users = g.users()
    out = {}
    for p in g.inputs:
        n = g.node(p.node)
        if not (isinstance(n.val, G.TensorMeta) and n.val.dtype.startswith(("int", "uint"))):
            continue
        bound = None
        for cur, un in _readers(g, users, n.name):
            refs = [a.name if isinstance(a, G.Ref) else None for a in un.args]
            if un.target in ops.INDEXING:
                i_ids, i_table, d = ops.INDEXING[un.target]
                if len(refs) > max(i_ids, i_table) and refs[i_ids] == cur and refs[i_table] is not None:
                    bound = _dim(g, refs[i_table], d)
            elif un.target == ops.INDEX_TENSOR and len(un.args) > 1 and isinstance(un.args[1], (list, tuple)):
                for j, a in enumerate(un.args[1]):
                    if isinstance(a, G.Ref) and a.name == cur and isinstance(un.args[0], G.Ref):
                        bound = _dim(g, un.args[0].name, j)
            if bound is not None:
                break
        out[p.name] = (0, bound if isinstance(bound, int) and bound > 0 else 2)
    return out


def ignored_targets(g: G.RankGraph) -> dict:
    """{input port: the negative ignore index of a loss whose targets it is}: integer inputs read
    as a loss's targets (through value-preserving ops) where the loss skips a target of that value."""
    users = g.users()
    out = {}
    for p in g.inputs:
        for cur, un in _readers(g, users, p.node):
            if un.target in ops.IGNORE_INDEX_ARG:
                i_ids, at = ops.INDEXING[un.target][0], ops.IGNORE_INDEX_ARG[un.target]
                c = un.args[at] if len(un.args) > at else -100
                if (len(un.args) > i_ids and isinstance(un.args[i_ids], G.Ref) and un.args[i_ids].name == cur
                        and isinstance(c, int) and not isinstance(c, bool) and c < 0):
                    out[p.name] = c
    return out


def _ignore_some(inputs: dict, ignored: dict, gen: torch.Generator):
    """A quarter of each loss target input of two or more elements (at least one) set to the
    loss's ignore index: padded labels, which the programs must skip alike."""
    for port, c in ignored.items():
        t = inputs.get(port)
        if not isinstance(t, torch.Tensor) or t.numel() < 2:
            continue
        k = max(1, t.numel() // 4)
        flat = t.reshape(-1).clone()
        flat[torch.randperm(t.numel(), generator=gen)[:k]] = c
        inputs[port] = flat.reshape(t.shape)


def _dim(g, name, d):
    v = g.node(name).val
    return v.shape[d] if isinstance(v, G.TensorMeta) and v.shape else None


def choose_sizes(seq: G.RankGraph, world: int) -> dict:
    """Small distinct symbol values, multiples of the world size (sharded dims must split),
    inside the symbols' ranges and satisfying the sequential graph's guards."""
    names = sorted(set(seq.symbols) - set(seq.nonzero_counts()))     # a count follows from the values
    if not names:
        return {}
    syms = seq.sympy_symbols()
    for start in range(1, 12):
        vals, used, k = {}, set(), start
        for nm in names:
            lo, hi = seq.symbols[nm]
            while world * k in used or (lo is not None and world * k < lo):
                k += 1
            v = world * k
            if hi is not None and v > hi:
                break
            vals[nm] = v
            used.add(v)
            k += 1
        else:
            try:
                if all(bool(gd.xreplace({syms[n]: sympy.Integer(v) for n, v in vals.items()})) for gd in seq.guards):
                    return vals
            except TypeError:
                continue
    raise Skip(f"no small symbol values satisfy the sequential graph's ranges and guards ({seq.guards})")


def estimate_bytes(checker, sizes: dict) -> int:
    """Every node value of G_s and of every rank, float64 (8 bytes; bool 1), with the symbols at
    ``sizes`` (a rank's own symbols at the largest chosen value)."""
    fallback = max(sizes.values(), default=8)
    total = 0

    def numel(meta):
        n = 1
        for d in meta.shape:
            if isinstance(d, int) or (is_sympy(d) and d.is_Integer):
                n *= int(d)
                continue
            binding = {s.name: sizes.get(s.name, fallback) for s in d.free_symbols}
            try:
                n *= max(graph_values.eval_size(d, binding), 0)
            except graph_values.InterpError:
                n *= fallback
        return n

    def add(val):
        nonlocal total
        if isinstance(val, G.TensorMeta):
            total += numel(val) * (1 if val.dtype == "bool" else 8)
        elif isinstance(val, tuple):
            for v in val:
                add(v)

    for g in [checker.seq] + list(checker.dist.ranks):
        for n in g.nodes:
            add(n.val)
    return total


def _prepare(checker, budget_bytes: int):
    sizes = choose_sizes(checker.seq, checker.dist.world_size)
    need = estimate_bytes(checker, sizes)
    if need > budget_bytes:
        raise Skip(f"the programs' values would take about {_fmt_bytes(need)} (float64, every node of every "
                   f"rank), over the budget of {_fmt_bytes(budget_bytes)} (--recheck-budget)")
    return sizes, need


def _fmt_bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


# ----------------------------------------------------------------------------- comparing values

def compare(expected, got) -> dict:
    """{'equal', 'max_abs', 'rel', 'examples': [(index, expected, got)]} (exact for ints/bools)."""
    if not isinstance(got, torch.Tensor) or not isinstance(expected, torch.Tensor):
        eq = not isinstance(got, torch.Tensor) and not isinstance(expected, torch.Tensor) and expected == got
        return {"equal": bool(eq), "max_abs": None, "rel": None, "examples": [],
                "why": None if eq else f"expected {_short(expected)}, got {_short(got)}"}
    if tuple(got.shape) != tuple(expected.shape):
        return {"equal": False, "max_abs": None, "rel": None, "examples": [],
                "why": f"shape {list(got.shape)} instead of {list(expected.shape)}"}
    if expected.numel() == 0:
        return {"equal": True, "max_abs": 0.0, "rel": 0.0, "examples": [], "why": None}
    exact = not (expected.is_floating_point() or got.is_floating_point())
    e, g = expected.double(), got.double()
    diff = (e - g).abs()
    both_nan = torch.isnan(e) & torch.isnan(g)
    # equal values (infinities of one sign too: inf - inf is nan) differ by nothing
    diff = torch.where(both_nan | (e == g), torch.zeros_like(diff), diff)
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, math.inf), diff)
    scale = max(1.0, float(torch.nan_to_num(e.abs(), posinf=0.0).max()))
    if exact:
        bad = diff > 0
    else:
        bad = diff > RTOL * torch.nan_to_num(e.abs(), posinf=0.0) + ATOL * scale
    max_abs = float(diff.max())
    out = {"equal": not bool(bad.any()), "max_abs": max_abs, "rel": max_abs / scale, "examples": [], "why": None}
    if bad.any():
        flat = torch.where(bad, diff, torch.full_like(diff, -1.0)).flatten()
        for i in torch.topk(flat, min(3, int(bad.sum()))).indices.tolist():
            idx = tuple(int(x) for x in torch.unravel_index(torch.tensor(i), tuple(e.shape))) if e.dim() else ()
            out["examples"].append({"index": list(idx), "expected": _num(expected.flatten()[i]),
                                    "got": _num(got.flatten()[i])})
    return out


def _num(x):
    v = x.item()
    return v if isinstance(v, (int, bool)) else float(f"{v:.6g}")


def _short(x):
    return f"tensor{list(x.shape)}" if isinstance(x, torch.Tensor) else repr(x)


# ----------------------------------------------------------------------------- re-check

def recheck(checker, result, draws: int = DEFAULT_DRAWS, budget_bytes: int = DEFAULT_BUDGET, seed: int = 0) -> dict:
    """Evaluate every certificate and expectation numerically; on a disagreement the result
    becomes an internal soundness error (exit 4) naming the first G_s operator whose relation
    disagrees."""
    out = {"kind": "recheck", "status": "skipped", "draws": 0, "checked": sorted(result.certificates)}
    t0 = time.perf_counter()
    try:
        sizes, need = _prepare(checker, budget_bytes)
        out.update(sizes=sizes, estimated_bytes=need)
        for d in range(draws):
            run = Draw(checker, seed + d, sizes)
            out["draws"] = d + 1
            # every per-operator relation, then every certificate: a proof step that is false on
            # some values is a soundness error even where the output's certificate happens to hold
            culprit = _first_wrong_op(checker, result, run)
            bad = _recheck_draw(checker, result, run)
            if culprit or bad:
                out.update(status="disagrees", **(bad or {"output": None, "relation": None, "diff": culprit["diff"]}))
                out["operator"] = culprit
                _mark_unsound(checker, result, bad, culprit)
                break
        else:
            out["status"] = "agrees"
    except Skip as e:
        out["reason"] = str(e)
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def _recheck_draw(checker, result, run: Draw) -> dict | None:
    for port, cert in result.certificates.items():
        expected = run.seq_value(port)
        try:
            got = run.eval(cert)
        except EvalError as e:
            raise Skip(f"cannot evaluate the certificate of {port}: {e}") from None
        c = compare(expected, got)
        if not c["equal"]:
            return {"output": port, "relation": result.relations.get(port, cert), "diff": c}
    W = checker.dist.world_size
    for name, rel in checker.expectations:
        if not any(ok and n == name and req == str(rel) for n, req, found, ok in result.expectations):
            continue
        req = str(rel)
        pname, node = checker._expect_target(name)
        expected = run.seq_env[node]
        ndim = expected.dim() if isinstance(expected, torch.Tensor) else None
        for t in S.relation_terms(rel, pname, W, checker.spec.mesh, ndim=ndim):
            try:
                got = placement.eval_term(t, run.named())
            except graph_values.InterpError as e:
                raise Skip(f"cannot evaluate expectation {name} = {req}: {e}") from None
            c = compare(expected, got)
            if not c["equal"]:
                return {"output": name, "relation": f"expect {req} ({t})", "diff": c}
    return None


def _first_wrong_op(checker, result, run: Draw) -> dict | None:
    """The first G_s operator (topological order) whose own clean term disagrees numerically."""
    for n in checker.seq.nodes:
        text = result.op_relations.get(n.name)
        if text is None or n.name not in run.seq_env:
            continue
        try:
            got = run.eval(text)
        except EvalError:
            continue
        c = compare(run.seq_env[n.name], got)
        if not c["equal"]:
            return {"node": n.name, "target": n.target, "source": str(n.source) if n.source else None,
                    "relation": checker.show_term(parse_sexpr(text)), "diff": c}
    return None


def _mark_unsound(checker, result, bad: dict, culprit: dict | None):
    if culprit is None:      # every operator's relation holds: the output step itself is wrong
        port = bad["output"]
        node = checker.seq_names.node(port) or port
        n = checker.seq.node(node)
        culprit_desc = {"node": node, "target": n.target, "source": str(n.source) if n.source else None,
                        "relation": bad["relation"], "diff": bad["diff"]}
        where = f"the output relation {port} = {bad['relation']}"
    else:
        culprit_desc = culprit
        where = f"the relation of {culprit['node']} = {culprit['relation']}"
    d = culprit_desc["diff"]
    result.status = "internal-error"
    result.failure = OpFailure(
        node=culprit_desc["node"], target=culprit_desc["target"], source=culprit_desc["source"], inputs={},
        best=str(culprit_desc["relation"]), considered=[],
        reason=f"internal soundness error: the proof says {where}, but the interpreter computes something "
               f"else ({_diff_text(d)}); a lemma or lowering used for this operator is wrong")


def _diff_text(d: dict) -> str:
    if d.get("why"):
        return d["why"]
    return f"max abs diff {d['max_abs']:.3g}, rel {d['rel']:.3g}"


# ----------------------------------------------------------------------------- witness

def witness(checker, result, draws: int = DEFAULT_DRAWS, budget_bytes: int = DEFAULT_BUDGET, seed: int = 0) -> dict:
    """Is the failing G_s tensor something the distributed program holds (a missing lemma), or
    does the program compute something else (a bug)?"""
    f = result.failure
    out = {"kind": "witness", "status": "skipped", "draws": 0}
    t0 = time.perf_counter()
    family = _family(f.target) if f else "the output relation"
    try:
        sizes, need = _prepare(checker, budget_bytes)
        out.update(sizes=sizes, estimated_bytes=need)
        local: dict[str, dict] = {}       # candidate label -> {'equal_all', 'worst'}
        outputs: dict[str, dict] = {}
        best_equal, unsound = None, None
        for d in range(draws):
            run = Draw(checker, seed + d, sizes)
            out["draws"] = d + 1
            if unsound is None:     # what the proof did claim must hold too
                culprit, bad = _first_wrong_op(checker, result, run), _recheck_draw(checker, result, run)
                if culprit or bad:
                    unsound = (bad, culprit)
            if f is not None and f.node in run.seq_env and isinstance(run.seq_env[f.node], torch.Tensor):
                expected = run.seq_env[f.node]
                for label, value in _held_candidates(checker, run, expected, f.node):
                    _merge(local, label, compare(expected, value))
                if f.best_term:
                    try:
                        c = compare(expected, run.eval(f.best_term))
                        best_equal = c["equal"] if best_equal is None else best_equal and c["equal"]
                    except EvalError:
                        pass
            for port, cands in _output_candidates(checker, run).items():
                for label, value in cands:
                    _merge(outputs.setdefault(port, {}), label, compare(run.seq_value(port), value))
        out["best_term_equal"] = best_equal
        equal_local = [k for k, v in local.items() if v["equal"]]
        outputs_equal = bool(outputs) and all(any(v["equal"] for v in c.values()) for c in outputs.values())
        n = out["draws"]
        # judged at the checked outputs: the failing operator may be an intermediate whose value
        # is held somewhere while the program goes wrong downstream of it
        if outputs_equal and equal_local:
            label = _prefer(equal_local, _label(checker, 0, f.node))
            out.update(status="equal", holds=label,
                       verdict=f"numerically equal on {n} draws: {label} holds {f.node}'s value; the proof lacks a "
                               f"lemma for {family}; probably not a bug")
        elif outputs_equal:
            held = {p: next(k for k, v in c.items() if v["equal"]) for p, c in outputs.items()}
            out.update(status="equal", holds=held,
                       verdict=f"numerically equal on {n} draws at the checked outputs "
                               f"({', '.join(f'{p} = {h}' for p, h in held.items())}), though no rank holds "
                               f"{f.node if f else 'the failing tensor'}'s value itself; the proof lacks a lemma "
                               f"for {family}; probably not a bug")
        else:
            same = _label(checker, 0, f.node) if f and not equal_local else None
            where, label, diff = _closest(local, f.node if f else None, outputs, same, downstream=bool(best_equal))
            out.update(status="confirmed", at=where, candidate=label, diff=diff,
                       verdict=f"confirmed: the distributed program computes something else here "
                               f"({where}: {label} differs, {_diff_text(diff)})")
            if where.startswith("at output ") and (best_equal or f is None):
                # the failing operator's value is right, or no operator failed (an output's
                # relation names tensors the program does not return): what goes wrong is how the
                # program computes the output, so name where it does
                out["output_sources"] = output_sources(checker, where[len("at output "):])
        out["candidates"] = len(local)
        free = uncoupled_draws(checker, [f.node] if f else [p.node for p in checker.checked_outputs])
        if out["status"] == "confirmed" and free:
            out.update(status="undecided",
                       verdict=f"not decided: what fails is computed from the random draw{'s' if len(free) > 1 else ''} "
                               f"{', '.join(free)}, which the distributed program has no counterpart for; values "
                               f"drawn independently differ whether or not the program is right")
        if unsound is not None:
            bad, culprit = unsound
            out["unsound"] = {"operator": culprit, **(bad or {})}
            _mark_unsound(checker, result, bad, culprit)
    except Skip as e:
        out["reason"] = str(e)
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def uncoupled_draws(checker, nodes) -> list[str]:
    """The sequential random draws without a coupling that ``nodes`` are computed from."""
    free = {u.seq.node: u.seq.key for u in checker.draws.uncoupled}
    return sorted(free[n] for n in checker._ancestors(nodes) if n in free) if free else []


def output_sources(checker, port: str, depth: int = 2) -> list[dict]:
    """Where each rank computes its output ``port``: the output's operator and those it reads,
    ``depth`` operators up, one location per source line."""
    prov = Provenance(checker)
    out, seen = [], set()
    for r, g in enumerate(checker.dist.ranks):
        p = next((p for p in g.outputs if p.name == port), None)
        level = [p.node] if p is not None else []
        for _ in range(depth):
            nxt = []
            for name in level:
                n = g.node(name)
                if n.is_placeholder:
                    continue
                loc = prov.location(r, name)
                if loc.get("file") and (loc["file"], loc["line"]) not in seen:
                    seen.add((loc["file"], loc["line"]))
                    out.append(loc)
                nxt += list(n.refs())
            level = nxt
    return out


def _family(target: str) -> str:
    parts = target.split(".")
    return parts[1] if len(parts) >= 2 and parts[0] in ("aten", "prims") else target


def _merge(table: dict, label: str, c: dict):
    prev = table.get(label)
    if prev is None:
        table[label] = {"equal": c["equal"], "worst": c}
        return
    prev["equal"] = prev["equal"] and c["equal"]
    if not c["equal"] and (prev["worst"]["equal"] or (c["max_abs"] or math.inf) > (prev["worst"]["max_abs"] or 0)):
        prev["worst"] = c


def _prefer(labels, same_name):
    return same_name if same_name in labels else labels[0]


def _closest(local: dict, node, outputs: dict, same_name=None, downstream=False):
    """(where, label, diff) for a confirmed verdict: the rank-0 tensor of the failing node's name,
    else the closest held candidate, else the first output that differs.  ``downstream``: the best
    term over the ranks' tensors holds the failing node's value, so what is wrong comes after it
    (a rank's own tensor of that name may differ only because it is a shard's): an output first."""
    if same_name in local and not downstream:
        return f"at {node}", same_name, local[same_name]["worst"]
    for port, cands in outputs.items():
        if not any(v["equal"] for v in cands.values()):
            label = min(cands, key=lambda k: cands[k]["worst"]["max_abs"] if cands[k]["worst"]["max_abs"] is not None
                        else math.inf)
            return f"at output {port}", label, cands[label]["worst"]
    if same_name in local:
        return f"at {node}", same_name, local[same_name]["worst"]
    if local and same_name is not None:
        label = min(local, key=lambda k: local[k]["worst"]["max_abs"] if local[k]["worst"]["max_abs"] is not None
                    else math.inf)
        return f"at {node}", label, local[label]["worst"]
    return f"at {node}", "(no G_d tensor of its shape)", {"why": "no rank holds a tensor of this shape",
                                                          "examples": []}


def _kind(t: torch.Tensor) -> str:
    return "bool" if t.dtype == torch.bool else "float" if t.is_floating_point() else "int"


def _held_candidates(checker, run: Draw, expected: torch.Tensor, node: str):
    """(label, value): what the distributed program holds that may be the failing G_s tensor:
    every rank's tensors of its shape and kind, and over the ranks' tensors of one name the
    concat along a dim (shards) and the sum (partial values)."""
    shape, kind = tuple(expected.shape), _kind(expected)
    count = 0
    by_name: dict[str, list] = {}
    for r, env in enumerate(run.envs):
        for name, v in env.items():
            items = [(name, v)] if isinstance(v, torch.Tensor) else \
                [(f"{name}#{i}", x) for i, x in enumerate(v) if isinstance(x, torch.Tensor)] \
                if isinstance(v, (tuple, list)) else []
            for key, t in items:
                if _kind(t) != kind:
                    continue
                by_name.setdefault(key, [None] * len(run.envs))[r] = t
                if tuple(t.shape) == shape and count < MAX_CANDIDATES:
                    count += 1
                    yield _label(checker, r, key), t
    for key, ts in by_name.items():
        if any(t is None for t in ts) or len(ts) < 2 or ts[0].dim() != len(shape):
            continue
        names = ", ".join(_label(checker, r, key) for r in range(len(ts)))
        if all(tuple(t.shape) == shape for t in ts) and kind == "float":
            yield f"sum({names})", sum(ts[1:], ts[0])
        for dim in range(len(shape)):
            if all(t.shape[:dim] == shape[:dim] and t.shape[dim + 1:] == shape[dim + 1:] for t in ts) and \
                    sum(t.shape[dim] for t in ts) == shape[dim]:
                yield f"concat({names}, dim={dim})", torch.cat(ts, dim)


def _label(checker, r: int, key: str) -> str:
    try:
        return checker.show_leaf(f"r{r}.{key}")
    except (KeyError, IndexError, ValueError):
        return f"r{r}.{key}"


def _output_candidates(checker, run: Draw) -> dict:
    """Per checked output: its [expect] relation's terms over the ranks' tensors, or (without
    one) the rank-0 output of that name, the concat of the ranks' outputs along a dim, their sum."""
    W = checker.dist.world_size
    out = {}
    for p in checker.checked_outputs:
        expected = run.seq_env.get(p.node)
        if not isinstance(expected, torch.Tensor):
            continue
        rel = next(iter(checker.expected(p.name)), None)
        cands = []
        if rel is not None:
            for t in S.relation_terms(rel, p.name, W, checker.spec.mesh, ndim=expected.dim()):
                try:
                    cands.append((str(t), placement.eval_term(t, run.named())))
                except graph_values.InterpError:
                    pass
            out[p.name] = cands
            continue
        ts = [run.named()[r].get(p.name) for r in range(W)]
        if any(not isinstance(t, torch.Tensor) for t in ts):
            continue
        cands.append((f"r0.{p.name}", ts[0]))
        if W > 1 and ts[0].is_floating_point():
            cands.append((f"sum over ranks of {p.name}", sum(ts[1:], ts[0])))
        for dim in range(expected.dim()):
            try:
                cands.append((f"concat({p.name}, dim={dim})", torch.cat(ts, dim)))
            except RuntimeError:
                pass
        out[p.name] = cands
    return out


# ----------------------------------------------------------------------------- printing

def plain(console, text, **kw):
    """Print text as it is: a program's code (``g = grad[a:b]``) is not rich markup."""
    kw.setdefault("highlight", False)
    console.print(text, markup=False, **kw)


def print_numeric(num: dict, console, verbose: bool = False):
    if not num:
        return
    if num["kind"] == "recheck":
        if num["status"] == "agrees":
            plain(console, f"  re-check: the interpreter agrees on {num['draws']} draws "
                           f"({', '.join(num['checked']) or 'no certificate'})", soft_wrap=True)
        elif num["status"] == "disagrees":
            op = num.get("operator")
            if num.get("output"):
                plain(console, f"  re-check: the interpreter DISAGREES at output {num['output']} = {num['relation']} "
                               f"({_diff_text(num['diff'])})", soft_wrap=True)
            else:
                plain(console, "  re-check: the interpreter DISAGREES with a per-operator relation (the outputs' "
                               "certificates agree)", soft_wrap=True)
            if op:
                plain(console, f"  first operator whose relation fails numerically: {op['node']} = {op['target']}"
                               f"  [{op['relation']}]", soft_wrap=True)
            _examples(console, (op or num)["diff"])
        else:
            plain(console, f"  re-check skipped: {num.get('reason')}", soft_wrap=True)
    else:
        if num["status"] == "skipped":
            plain(console, f"  numeric witness skipped: {num.get('reason')}", soft_wrap=True)
        else:
            plain(console, f"  numeric witness: {num['verdict']}", soft_wrap=True)
            if num["status"] == "confirmed":
                _examples(console, num["diff"])
            for loc in num.get("output_sources", ()):
                plain(console, f"    the distributed program computes it at {loc['file']}:{loc['line']} "
                               f"(rank {loc['rank']} {loc['node']}): {loc.get('code') or ''}",
                               soft_wrap=True)
            if num.get("unsound"):
                op = num["unsound"].get("operator")
                plain(console, "  and a relation the proof found is numerically false: "
                               + (f"{op['node']} = {op['relation']}" if op else
                                  f"output {num['unsound'].get('output')} = {num['unsound'].get('relation')}"),
                               soft_wrap=True)
    if verbose:
        plain(console, f"  numeric check: {num.get('seconds', 0):.3f} s, {num.get('draws', 0)} draws"
                       + (f", estimated {_fmt_bytes(num['estimated_bytes'])}" if "estimated_bytes" in num else ""),
                       soft_wrap=True)


def _examples(console, diff: dict):
    for e in diff.get("examples", [])[:3]:
        plain(console, f"    at {e['index']}: expected {e['expected']}, got {e['got']}", soft_wrap=True)
