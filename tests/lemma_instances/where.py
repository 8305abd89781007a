"""Instances of the elementwise lemmas over where (entangle_py/lemmas/elementwise.py): where and zip_where
versus concats of their operands, and bc_like."""
from __future__ import annotations

from entangle_py.lazy import torch

from lemma_instances.common import repeat, tensor


# An instance of pattern p (L: that operand of where(c, a, b) is a concat along the axis k from the
# right, T: it broadcasts along that axis, absent there or of size 1).

def _where_operands(rng, p: str, varying=False):
    """Operands of where(c, a, b) over an output of nd dims; concat parts line up along axis k."""
    nd = rng.randint(1, 3)
    k = rng.randint(1, nd)
    full = [rng.randint(1, 3) for _ in range(nd)]
    sizes = [rng.randint(1, 3) for _ in range(rng.randint(1, 4))]
    full[nd - k] = sum(sizes)
    widest = rng.choice([i for i, kind in enumerate(p) if kind == "L"])
    env, whole = {}, {}
    for i, (o, kind) in enumerate(zip("cab", p)):
        if kind == "L":
            m = nd if i == widest else rng.randint(k, nd)
            shape = full[nd - m:]
            for j in range(m):          # other dims broadcast (size 1) now and then
                if j != m - k and rng.random() < 0.2:
                    shape[j] = 1
            x = tensor(rng, *shape)
            if o == "c":
                x = x > 0
            env["l" + o], env["d" + o] = list(torch.split(x, sizes, m - k)), m - k
            whole[o] = x
        else:
            if rng.random() < 0.5 and not varying:
                m = rng.randint(0, k - 1)
                shape = full[nd - m:] if m else []
            else:
                m = rng.randint(k, nd)
                shape = full[nd - m:]
                shape[m - k] = full[nd - k] if varying else 1
            x = tensor(rng, *shape)
            if o == "c":
                x = x > 0
            env[o] = whole[o] = x
    return env, whole, k, nd


def where_concat(p: str):
    @repeat(8)
    def gen(rng):
        env, whole, k, nd = _where_operands(rng, p)
        r = "cab"[p.index("L")]
        return {**env, "n": torch.where(whole["c"], whole["a"], whole["b"]).dim(), "m": whole[r].dim()}
    gen.__name__ = f"where_concat_{p}"
    return gen


def where_concat_misaligned(p: str):
    """The output axis from the where's rank, not another; concats along different axes."""
    @repeat(4)
    def gen(rng):
        env, whole, k, nd = _where_operands(rng, p)
        cats = [o for o, kind in zip("cab", p) if kind == "L"]
        out = {**env, "n": torch.where(whole["c"], whole["a"], whole["b"]).dim() + 1, "m": whole[cats[0]].dim()}
        yield out
        if len(cats) > 1:
            o = cats[1]
            x = whole[o]
            others = [j for j in range(x.dim()) if j != env["d" + o] and x.shape[j] > 1]
            if others:
                j = rng.choice(others)
                yield {**out, "n": out["n"] - 1, "l" + o: list(torch.split(x, 1, j)), "d" + o: j}
    gen.__name__ = f"where_concat_misaligned_{p}"
    return _flatten(gen)


def _flatten(gen):
    def out(rng):
        for x in gen(rng):
            yield from (x if not isinstance(x, dict) else [x])
    out.__name__ = gen.__name__
    return out


def _zip_env(p, rng):
    env, whole, k, nd = _where_operands(rng, p)
    r = "cab"[p.index("L")]
    n = len(env["l" + r])
    lists = {o: env["l" + o] if kind == "L" else [env[o]] * n for o, kind in zip("cab", p)}
    out = {"k": k}
    for o in "cab":
        out["h" + o], out["r" + o] = lists[o][0], lists[o][1:]
        out["nh" + o] = lists[o][0].dim()
    return out


def zip_where_cons(p: str):
    @repeat(6)
    def gen(rng):
        return _zip_env(p, rng)
    gen.__name__ = f"zip_where_cons_{p}"
    return gen


def zip_where_misaligned(p: str):
    """Two concat parts of different sizes on the axis."""
    @repeat(3)
    def gen(rng):
        env = _zip_env(p, rng)
        cats = [o for o, kind in zip("cab", p) if kind == "L"]
        o, k = cats[-1], env["k"]
        h = env["h" + o]
        shape = list(h.shape)
        shape[h.dim() - k] += 1
        x = tensor(rng, *shape)
        env["h" + o] = x > 0 if o == "c" else x
        return env
    gen.__name__ = f"zip_where_misaligned_{p}"
    return gen


def zip_where_nil(rng):
    return [{"p": p, "k": rng.randint(1, 3)} for p in ("LLL", "TLT", "LTT")]


def bc_like_nil(rng):
    return [{"y": tensor(rng, 2, 1), "k": 1}, {"y": tensor(rng), "k": 2}]


def bc_like_cons(kind: str):
    @repeat(6)
    def gen(rng):
        k = rng.randint(1, 3)
        if kind == "absent":
            m = rng.randint(0, k - 1)
            shape = [rng.randint(1, 3) for _ in range(m)]
        else:
            m = rng.randint(k, 4)
            shape = [rng.randint(1, 3) for _ in range(m)]
            shape[m - k] = 1
        y = tensor(rng, *shape)
        parts = [tensor(rng, 2, rng.randint(1, 3)) for _ in range(rng.randint(1, 4))]
        return {"y": y, "x": parts[0], "r": parts[1:], "k": k, "m": m}
    gen.__name__ = f"bc_like_{kind}"
    return gen


@repeat(4)
def bc_like_varying(rng):
    """A tensor of size 2 or more on the axis: no copies of it stand for its parts."""
    k = rng.randint(1, 3)
    m = rng.randint(k, 4)
    shape = [rng.randint(1, 3) for _ in range(m)]
    shape[m - k] = rng.randint(2, 4)
    return {"y": tensor(rng, *shape), "x": tensor(rng, 2, 2), "r": [], "k": k, "m": m}
