"""Running both programs for the numeric check (``recheck.py``): one random draw of inputs, sizes
chosen small under a memory budget, G_s and every rank of G_d run by the interpreter; and how two
values are compared (relative and absolute tolerance, dtype and shape)."""
from __future__ import annotations

import math
from dataclasses import replace

from entangle_py.lazy import is_sympy, sympy, torch
from entangle_py.ir import graph as G
from entangle_py.ir import ops
from entangle_py.oracle import draws as D
from entangle_py.oracle import interp
from entangle_py.oracle import graph_values
from entangle_py.oracle import placement
from entangle_py.semantics import lower as L
from entangle_py.check.checker import gd_leaf
from entangle_py.semantics.terms import EvalError, Var, evaluate, parse_sexpr


DEFAULT_BUDGET = 2 << 30
DEFAULT_DRAWS = 2
RTOL = 1e-6
ATOL = 1e-9          # times the expected tensor's largest magnitude (at least 1)

class Skip(Exception):
    """The numeric check cannot run (over budget, or the interpreter cannot run a graph)."""


def finite(t: torch.Tensor) -> bool:
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

    def __init__(self, checker, seed: int, sizes: dict, padded_targets: bool = True):
        """``padded_targets``: set some loss targets to their ignore index, as padded labels are,
        unless the spec assumes no_ignored_targets."""
        self.ck = checker
        seq_bundle, dist = checker.seq_bundle, checker.dist
        W = dist.world_size
        gen = torch.Generator().manual_seed(seed)
        g0 = checker.seq
        try:
            seq_in = placement.random_inputs(g0, gen, sizes=sizes, int_ranges=int_ranges(g0), float_dtype=torch.float64)
            if padded_targets and "no_ignored_targets" not in checker.spec.assume:   # else labels may be padding
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
                if rel.term is not None:      # an explicit term: the tensors it names hold it (a stage's boundary, r1.relu)
                    held = placement.distribute_term(value, rel.term, dist, gen).items()
                else:
                    held = [((r, name), t) for r, t in enumerate(placement.distribute(
                        value, rel, name, dist, spec.mesh if spec.mesh.shape else None, gen))]
                for (r, leaf), t in held:
                    dnode = checker.dist_names[r].node(leaf)
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


def prepare(checker, budget_bytes: int):
    sizes = choose_sizes(checker.seq, checker.dist.world_size)
    need = estimate_bytes(checker, sizes)
    if need > budget_bytes:
        raise Skip(f"the programs' values would take about {fmt_bytes(need)} (float64, every node of every "
                   f"rank), over the budget of {fmt_bytes(budget_bytes)} (--recheck-budget)")
    return sizes, need


def fmt_bytes(n: int) -> str:
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



def diff_text(d: dict) -> str:
    if d.get("why"):
        return d["why"]
    return f"max abs diff {d['max_abs']:.3g}, rel {d['rel']:.3g}"
