"""Instances of the indexing lemmas (entangle_py/lemmas/indexing.py): nonzero dispatch (index_put at
distinct rows), scatters of sums and concats, clamped lookups."""
from __future__ import annotations

from entangle_py.lazy import torch

from lemma_instances.common import repeat, tensor
from lemma_instances.indexing_take import _ids, _lead, _mtake_instance


# ----------------------------------------------------------------------------- nonzero dispatch

_IPUT_DTYPES = ("float64", "float32", "int64")      # torch dtypes, by name


def _iput_env(rng, same=False, ndim_v=1):
    """A zero buffer [n, *rest] (``s``, ``t``), ids ``v`` (values -1..3, 1-D: one per row), two ids
    ``a`` != ``b`` (equal with ``same``) and the values written at each one's rows, of the rows'
    shape or broadcast to it."""
    n = rng.randint(0, 6)
    rest = [rng.randint(0, 3) for _ in range(rng.randint(0, 2))]
    dt = getattr(torch, rng.choice(_IPUT_DTYPES))
    v = _ids(rng, [n] if ndim_v == 1 else [n, 2], -1, 4)
    a = rng.randint(-1, 3)
    b = a if same else rng.choice([k for k in range(-1, 4) if k != a])

    def values(c):
        u = int((v == c).sum())
        shape = rng.choice([[u, 1] + rest, [1] + rest, rest])
        return (tensor(rng, *shape) * 4).to(dt)
    return {"s": [n] + rest, "t": str(dt).removeprefix("torch."), "v": v, "a": a, "b": b,
            "x": values(a), "y": values(b)}


@repeat(10)
def iput_disjoint(rng):
    return _iput_env(rng)


@repeat(4)
def iput_disjoint_bad(rng):
    """The same id twice (the second write replaces the first), or 2-D ids (a nonzero of 2
    columns indexes rows by both coordinates: positions repeat and overlap)."""
    return _iput_env(rng, same=True) if rng.random() < 0.5 else {**_iput_env(rng), "v": _ids(rng, [3, 2], -1, 4)}


@repeat(10)
def iput_rsum_disjoint(rng):
    env = _iput_env(rng)
    return {**env, "w": (tensor(rng, *env["s"]) * 4).to(getattr(torch, env["t"]))}


@repeat(4)
def iput_rsum_disjoint_bad(rng):
    env = _iput_env(rng, same=True) if rng.random() < 0.5 else {**_iput_env(rng), "v": _ids(rng, [3, 2], -1, 4)}
    return {**env, "w": (tensor(rng, *env["s"]) * 4).to(getattr(torch, env["t"]))}


@repeat(4)
def nonzero_terms(rng):
    shape = [rng.randint(0, 4) for _ in range(rng.randint(1, 3))]
    return ("(nonzero x)", {"x": _ids(rng, shape, 0, 2)})


@repeat(4)
def iput_terms(rng):
    n = rng.randint(1, 5)
    v = _ids(rng, [n], 0, 2)
    u = int((v == 1).sum())
    return ("(iput x (nonzero (iscalar \"eq\" v 1)) y)", {"x": tensor(rng, n, 3), "v": v, "y": tensor(rng, u, 1, 3)})


@repeat(6)
def add_iput(rng):
    env = _iput_env(rng)
    return {**env, "i": torch.nonzero(env["v"] == env["a"]), "j": torch.nonzero(env["v"] == env["b"])}


@repeat(8)
def take_iput_disjoint(rng):
    """x [n, *rest], y the values written at the rows where v is a, read at the rows where it is b."""
    env = _iput_env(rng)
    return {**env, "y": env["x"], "x": (tensor(rng, *env["s"]) * 4).to(getattr(torch, env["t"]))}


@repeat(4)
def take_iput_disjoint_bad(rng):
    env = _iput_env(rng, same=True)
    return {**env, "y": env["x"], "x": (tensor(rng, *env["s"]) * 4).to(getattr(torch, env["t"]))}


@repeat(3)
def add_iput_bad(rng):
    """A bool buffer: two writes added are a logical or, and a sum over ranks of bools is undefined."""
    env = next(add_iput(rng))
    return {**env, "t": "bool", "x": env["x"] > 0, "y": env["y"] > 0}


def _scatter_pair(rng, widths, dtypes):
    n = rng.randint(1, 6)
    env = {"n": n}
    for (g, ids), w, dt in zip((("a", "i"), ("b", "j")), widths, dtypes):
        lead = [rng.randint(0, 4) for _ in range(rng.randint(1, 2))]
        env[ids] = _ids(rng, lead, 0, n)
        env[g] = (tensor(rng, *lead, w) * 4).to(dt)
    env["t"], env["w"] = str(dtypes[0]).removeprefix("torch."), widths[0]
    return env


@repeat(8)
def add_scatter(rng):
    w = rng.randint(0, 3)
    dt = getattr(torch, rng.choice(_IPUT_DTYPES))
    return _scatter_pair(rng, (w, w), (dt, dt))


@repeat(4)
def add_scatter_bad(rng):
    """Widths 1 and 3 (the add broadcasts), two dtypes (it promotes), or bool rows (a logical or)."""
    k = rng.randrange(3)
    if k == 0:
        return _scatter_pair(rng, (1, 3), (torch.float64, torch.float64))
    if k == 1:
        return _scatter_pair(rng, (2, 2), (torch.float32, torch.float64))
    env = _scatter_pair(rng, (2, 2), (torch.int64, torch.int64))
    return {**env, "a": env["a"] > 0, "b": env["b"] > 0, "t": "bool"}


def _rsum_scatter(rng, width_off=0, dtypes=None):
    n, w = rng.randint(1, 6), rng.randint(0, 3)
    dt, dt_b = dtypes or (getattr(torch, rng.choice(_IPUT_DTYPES)),) * 2
    lead = [rng.randint(0, 4) for _ in range(rng.randint(1, 2))]
    j = _ids(rng, lead, 0, n)
    return {"l": [(tensor(rng, n, w) * 4).to(dt) for _ in range(rng.randint(1, 4))], "n": n, "j": j,
            "b": (tensor(rng, *lead, w + width_off) * 4).to(dt_b), "t": str(dt).removeprefix("torch."),
            "w": w}


@repeat(8)
def add_rsum_scatter(rng):
    return _rsum_scatter(rng)


@repeat(4)
def add_rsum_scatter_bad(rng):
    """A table of another width (the add broadcasts a width-1 one) or dtype (it promotes)."""
    if rng.random() < 0.5:
        env = _rsum_scatter(rng)
        return {**env, "l": [x[:, :1] for x in env["l"]], "w": 1} if env["w"] != 1 else {**env, "l": [x[:, :0] for x in env["l"]], "w": 0}
    return _rsum_scatter(rng, dtypes=(torch.float32, torch.float64))


def _scatter_concat(rng, along_last=True):
    """Rows of a gradient (ids' shape plus a width) split along the width, or along a leading dim."""
    n = rng.randint(1, 6)
    lead = [rng.randint(1, 4) for _ in range(rng.randint(1, 2))]
    ids = _ids(rng, lead, 0, n)
    d = len(lead) if along_last else rng.randrange(len(lead))
    parts = []
    for _ in range(rng.randint(1, 4)):
        shape = lead + [rng.randint(0, 3)]
        if not along_last:
            shape = lead + [2]
        parts.append(tensor(rng, *shape))
    return {"x": parts[0], "r": parts[1:], "d": d, "ids": ids, "n": n}


@repeat(8)
def scatter_concat_last(rng):
    return _scatter_concat(rng)


@repeat(4)
def scatter_concat_lead(rng):
    """Split along a dim of the ids (each part's rows would be added at the ids of the whole)."""
    return _scatter_concat(rng, along_last=False)


@repeat(4)
def map_scatter(rng):
    env = _scatter_concat(rng)
    return {"x": env["x"], "r": env["r"], "ids": env["ids"], "n": env["n"]}


def map_scatter_nil(rng):
    return [{"ids": _ids(rng, [3], 0, 4), "n": 4}]


@repeat(10)
def mtake_intro_clamp(rng):
    """Ids around the block [lo, lo + n) (many outside, some negative), the clamp text of n rows."""
    inst = _mtake_instance(rng)
    return {**inst, "op": f"clamp.default(_, 0, {inst['n'] - 1})"}


def mtake_intro_clamp_bad(rng):
    """A clamp past the table's last row (an own id still wraps... or reads past it), a block that
    is not the table's rows, a mask that is not a trailing unsqueeze."""
    for k in range(6):
        inst = next(mtake_intro_clamp(rng))
        if k % 3 == 0:
            inst["op"] = f"clamp.default(_, 0, {inst['n']})"
        elif k % 3 == 1:
            inst["hi"] = inst["hi"] - 1                          # the block's last id masked
        else:
            inst["s"] = inst["s"][:-1]
        yield inst


def clampop_terms(rng):
    """The clamp text of a table's rows, asked by a lookup at shifted ids."""
    for n in (1, 4, 9):
        lead = _lead(rng)
        facts = [f'(= (clampop {n}) "clamp.default(_, 0, {n - 1})")', f'(= (clampop {n}) "clamp.default(_, 0, {n})")']
        yield (f'(take W (unary "clamp.default(_, 0, {n - 1})" (iscalar "sub" ids 3)))',
               {"W": tensor(rng, n, 2), "ids": _ids(rng, lead, 3, 3 + n)}, facts)
