"""Terms as a person reads them: list helpers expanded, reductions over ranks said so.

The engine's terms carry helper constructors that walk lists of per-rank parts (``map_mm_r``,
``zip_binary``, ...); a failure's best term often still holds one.  ``expand`` rewrites every
helper whose list is known into the list of what it means (``map_mm_r(x, [a, b])`` is
``[mm(x, a), mm(x, b)]``); ``show`` prints a term with reductions over ranks in words::

    sum over ranks of _unsafe_view                      rsum of every rank's _unsafe_view
    concat(mm(r0.tangent:out, param:fc2.weight) over ranks, dim=1)

Inside ``... over ranks`` a name without a rank prefix is each rank's own tensor of that name.
A list that follows no rank pattern is written out: ``sum of (r0.a, r1.b)``.

No torch, no egglog: ``entangle explain`` prints terms from a JSON report with this module alone.
"""
from __future__ import annotations

import re

from entangle_py.semantics.sexpr import Var, parse_sexpr, to_sexpr

# terms as parsed s-expressions (Sym: a constructor or other bare symbol; strings are ``str``)
Sym = Var
parse = parse_sexpr
to_text = to_sexpr


def head(t) -> str | None:
    return t[0].name if isinstance(t, tuple) and t and isinstance(t[0], Sym) else None


def leaves(t) -> list[str]:
    """Keys of the G_d leaves (``r0.mm_1``) in a term, in order of first appearance."""
    out: dict[str, None] = {}

    def walk(x):
        if head(x) == "Gd":
            out.setdefault(x[1])
        elif isinstance(x, tuple):
            for a in x[1:]:
                walk(a)
    walk(t)
    return list(out)


# ----------------------------------------------------------------------------- expansion

def _app(name, *args):
    return (Sym(name),) + args


def items(lst) -> list | None:
    """The elements of a list term (Cons/Nil, lappend of known lists), or None when unknown."""
    out = []
    while True:
        h = head(lst)
        if h == "Cons":
            out.append(lst[1])
            lst = lst[2]
        elif h == "Nil":
            return out
        elif h == "lappend":
            a, b = items(lst[1]), items(lst[2])
            return None if a is None or b is None else out + a + b
        else:
            return None


def make_list(xs, cons="Cons", nil="Nil"):
    out = _app(nil)
    for x in reversed(xs):
        out = _app(cons, x, out)
    return out


def _dims_with(s, index, value):
    """DList ``s`` with entry ``index`` (-1: the last) replaced by ``value`` (None when unknown)."""
    ds = items_of(s, "DCons", "DNil")
    if ds is None or not ds:
        return None
    i = index if index >= 0 else len(ds) + index
    if not 0 <= i < len(ds):
        return None
    return make_list(ds[:i] + [value] + ds[i + 1:], "DCons", "DNil")


def items_of(lst, cons, nil) -> list | None:
    out = []
    while head(lst) == cons:
        out.append(lst[1])
        lst = lst[2]
    return out if head(lst) == nil else None


_INFERRED = _app("DLit", -1)      # torch's -1 in a view: this part's own size


def _offset(lo, k):
    return lo if k == 0 else Sym(f"{lo}+rows_of_parts_before_{k}")


# helper -> (positions of its list arguments, element builder over (args, elements, index))
_HELPERS = {
    "map_unary": ((1,), lambda a, e, k: _app("unary", a[0], e[0])),
    "map_scalar": ((1,), lambda a, e, k: _app("scalar", a[0], e[0], a[2])),
    "map_iscalar": ((1,), lambda a, e, k: _app("iscalar", a[0], e[0], a[2])),
    "map_binary_l": ((1,), lambda a, e, k: _app("binary", a[0], e[0], a[2])),
    "map_binary_r": ((2,), lambda a, e, k: _app("binary", a[0], a[1], e[0])),
    "zip_binary": ((1, 2), lambda a, e, k: _app("binary", a[0], e[0], e[1])),
    "map_mm_l": ((0,), lambda a, e, k: _app("mm", e[0], a[1])),
    "map_mm_r": ((1,), lambda a, e, k: _app("mm", a[0], e[0])),
    "map_bmm_l": ((0,), lambda a, e, k: _app("bmm", e[0], a[1])),
    "zip_mm": ((0, 1), lambda a, e, k: _app("mm", e[0], e[1])),
    "zip_bmm": ((0, 1), lambda a, e, k: _app("bmm", e[0], e[1])),
    "zip_matmul": ((0, 1), lambda a, e, k: _app("matmul", e[0], e[1])),
    "map_transpose": ((0,), lambda a, e, k: _app("transpose", e[0], a[1], a[2])),
    "map_softmax": ((0,), lambda a, e, k: _app("softmax", e[0], a[1])),
    "map_rowwise": ((1,), lambda a, e, k: _app("rowwise", a[0], e[0])),
    "map_view": ((0,), lambda a, e, k: _app("view", e[0], a[1])),
    "map_view_last": ((0,), lambda a, e, k: _app("view", e[0], _dims_with(a[1], -1, _INFERRED) or a[1])),
    "map_view_at": ((0,), lambda a, e, k: _app("view", e[0], _dims_with(a[1], a[3], _INFERRED) or a[1])),
    "map_view_scale": ((0,), lambda a, e, k: _app("view", e[0], _dims_with(a[1], a[3], _INFERRED) or a[1])),
    "map_slice": ((0,), lambda a, e, k: _app("slice", e[0], a[1], a[2], a[3])),
    "map_permute": ((0,), lambda a, e, k: _app("permute", e[0], a[1])),
    "map_reduce": ((1,), lambda a, e, k: _app("reduce", a[0], e[0], a[2], a[3])),
    "map_layernorm": ((0,), lambda a, e, k: _app("layernorm", e[0], a[1], a[2], a[3], a[4])),
    "map_mtake": ((0,), lambda a, e, k: _app("mtake", e[0], a[1], _offset(a[2], k))),
    "map_mpick": ((0,), lambda a, e, k: _app("mpick", e[0], a[1], _offset(a[2], k))),
    "map_take": ((0,), lambda a, e, k: _app("take", e[0], a[1])),
    "map_take_ids": ((1,), lambda a, e, k: _app("take", a[0], e[0])),
    "map_scatter": ((0,), lambda a, e, k: _app("scatter", e[0], a[1], a[2])),
    "zip_ranks": ((1, 2), lambda a, e, k: _app("binary", a[0], e[0], e[1])),
    "zip_where": ((1, 2, 3), lambda a, e, k: _app("where", e[0], e[1], e[2])),
    "zip_pick": ((0, 1), lambda a, e, k: _app("pick", e[0], e[1])),
    "zip_tpick": ((0, 1), lambda a, e, k: _app("tpick", e[0], e[1], a[2])),
    "zip_place": ((0, 1), lambda a, e, k: _app("place", e[0], e[1], a[2])),
    "zip_tplace": ((0, 1), lambda a, e, k: _app("tplace", e[0], e[1], a[2], a[3])),
    "bc_like": ((1,), lambda a, e, k: a[0]),
    "cst_parts": ((4,), lambda a, e, k: _app("cst", a[0], _dims_with(a[1], a[3], _INFERRED) or a[1], a[2])),
    "map_expand_at": ((0,), lambda a, e, k: _app("expand", e[0], _dims_with(a[1], a[3], _INFERRED) or a[1])),
    "zip_concat": ((0, 1), lambda a, e, k: _app("concat", make_list([e[0], e[1]]), a[2])),
    # part k of acc, then block k (along e) of each tensor of the second list, along d
    "map_ccol": ((0,), lambda a, e, k: e[0]),
    "zip_ccol": ((0, 1), lambda a, e, k: _app("concat", make_list([e[0], e[1]]), a[2])),
    "unccol": ((0,), lambda a, e, k: e[0]),
    "zip_concat_fold": ((0,), lambda a, e, k: _app("concat", make_list([e[0], Sym(f"their_blocks_{k}_along_dim_{a[3]}")]), a[2])),
    "map_zpad": ((0,), lambda a, e, k: _app("zpad", e[0], a[1], _offset(a[2], k), Sym(f"to_{a[3]}"))),
    "map_place_each": ((0,), lambda a, e, k: _app("place", e[0], a[1], a[2])),
    "map_zpad_each": ((0,), lambda a, e, k: _app("zpad", e[0], a[1], a[2], a[3])),
}


def expand(t):
    """``t`` with every helper over known lists replaced by the list it means (bottom up)."""
    if not isinstance(t, tuple) or not t:
        return t
    h = head(t)
    args = tuple(expand(a) for a in t[1:])
    if h in _HELPERS:
        positions, build = _HELPERS[h]
        lists = [items(args[p]) for p in positions]
        if all(x is not None for x in lists) and len({len(x) for x in lists}) == 1:
            return make_list([build(args, [x[k] for x in lists], k) for k in range(len(lists[0]))])
    if h == "lappend":
        xs = items(_app("lappend", *args))
        if xs is not None:
            return make_list(xs)
    if h == "repl" and isinstance(args[1], int) and args[1] >= 0:     # k copies of a tensor
        return make_list([args[0]] * args[1])
    if h == "dset_last" and items_of(args[0], "DCons", "DNil"):
        return _dims_with(args[0], -1, args[1])
    if h == "dset" and items_of(args[0], "DCons", "DNil") is not None and isinstance(args[1], int):
        return _dims_with(args[0], args[1], args[2]) or (t[0],) + args
    return (t[0],) + args


# ----------------------------------------------------------------------------- printing

_RANKED = re.compile(r"^r(\d+)\.(.+)$")


class Printer:
    """``leaf(key) -> "r0.out"``: how a G_d tensor is named; ``world``: the number of ranks."""

    def __init__(self, leaf=None, world: int | None = None):
        self.leaf = leaf or (lambda key: key)
        self.world = world

    def __call__(self, t) -> str:
        return self.show(expand(t))

    # a list of per-rank parts that differ only in which rank's tensors they name
    def _template(self, xs):
        if len(xs) < 2:
            return None
        ranks = [None] * len(xs)

        def same(ts, k_path):
            first = ts[0]
            if head(first) == "Gd":
                names = [self.leaf(x[1]) if head(x) == "Gd" else None for x in ts]
                if any(n is None for n in names):
                    return None
                if len(set(names)) == 1:
                    return first
                parts = [_RANKED.match(n) for n in names]
                if not all(parts) or len({p.group(2) for p in parts}) != 1:
                    return None
                for i, p in enumerate(parts):
                    r = int(p.group(1))
                    if ranks[i] not in (None, r):
                        return None
                    ranks[i] = r
                return ("own", parts[0].group(2))
            if isinstance(first, tuple):
                if not all(isinstance(x, tuple) and len(x) == len(first) and x[0] == first[0] for x in ts):
                    return None
                out = [first[0]]
                for j in range(1, len(first)):
                    sub = same([x[j] for x in ts], k_path + (j,))
                    if sub is None:
                        return None
                    out.append(sub)
                return tuple(out)
            return first if all(x == first for x in ts) else None

        tmpl = same(xs, ())
        if tmpl is None or None in ranks or len(set(ranks)) != len(ranks):
            return None
        return tmpl, ranks

    def _over(self, ranks) -> str:
        if ranks == list(range(len(ranks))) and (self.world is None or self.world == len(ranks)):
            return "over ranks"
        return "over ranks " + ", ".join(map(str, ranks))

    def show(self, t) -> str:
        if isinstance(t, tuple) and t and t[0] == "own":
            return t[1]
        if not isinstance(t, tuple):
            return t.name if isinstance(t, Sym) else str(t)
        h = head(t)
        a = t[1:]
        s = self.show
        if h == "Gd":
            return a[0][1:] if a[0].startswith("\0") else self.leaf(a[0])
        if h == "Gs":
            return f"seq.{a[0]}"
        if h in ("rsum", "rmax", "rmean"):
            word = h[1:]        # sum, max, mean
            xs = items(a[0])
            if xs is None:
                return f"{word} over ranks of {s(a[0])}"
            tm = self._template(xs)
            if tm:
                return f"{word} {self._over(tm[1])} of {s(tm[0])}"
            return f"{word} of ({', '.join(s(x) for x in xs)})"
        if h == "concat":
            xs = items(a[0])
            if xs is None:
                return f"concat({s(a[0])}, dim={a[1]})"
            tm = self._template(xs)
            if tm:
                return f"concat({s(tm[0])} {self._over(tm[1])}, dim={a[1]})"
            return f"concat({', '.join(s(x) for x in xs)}, dim={a[1]})"
        if h in ("Cons", "Nil", "lappend"):
            xs = items(t)
            return "[" + ", ".join(s(x) for x in xs) + "]" if xs is not None else \
                f"{s(a[0])} ++ {s(a[1])}" if h == "lappend" else f"[{s(a[0])}, *{s(a[1])}]"
        if h in ("DCons", "DNil", "ICons", "INil"):
            cons = h[0] + "Cons"
            xs = items_of(t, cons, h[0] + "Nil")
            return "[" + ", ".join(s(x) for x in xs) + "]" if xs is not None else f"[{s(a[0])}, *{s(a[1])}]"
        if h == "DLit":
            return str(a[0])
        if h == "DSym":
            return str(a[0])
        if h in ("dadd", "dsub"):
            return f"({s(a[0])} {'+' if h == 'dadd' else '-'} {s(a[1])})"
        if h == "lsum":
            return f"total size along dim {a[1]} of {s(a[0])}"
        if h == "unary":
            return f"{a[0]}({s(a[1])})"
        if h in ("scalar", "iscalar"):
            return f"{a[0]}({s(a[1])}, {a[2]})"
        if h == "binary":
            op = str(a[0])
            if ":" in op:
                name, c = op.split(":", 1)
                return f"{name}({s(a[1])}, {s(a[2])}, {c})"
            return f"{op}({s(a[1])}, {s(a[2])})"
        if h == "opaque":
            key = str(a[0])
            target, _, consts = key.partition("|")
            name = target.split("#")[0]
            parts = name.split(".")
            name = parts[1] if parts[0] == "aten" and len(parts) >= 2 else name
            consts = consts.strip("|")
            xs = items(a[1])
            args = [s(x) for x in xs] if xs is not None else [s(a[1])]
            out = f"{name}({', '.join(args + ([consts] if consts else []))})"
            return out + (f"[{target.split('#')[1]}]" if "#" in target else "")
        if h == "reduce":
            return f"{a[0]}({s(a[1])}, dim={s(a[2])}{', keepdim=True' if a[3] else ''})"
        if h == "softmax":
            return f"softmax({s(a[0])}, dim={a[1]})"
        if h == "slice":
            return f"slice({s(a[0])}, dim={a[1]}, {s(a[2])}:{s(a[3])})"
        if h == "rowwise":      # "topk:k:largest:sorted:i" -> topk(x, k, largest, sorted)[i], row by row
            name, *ps = str(a[0]).split(":")
            if name == "topk" and len(ps) == 4:
                return (f"topk({s(a[1])}, k={ps[0]}, largest={ps[1] == '1'}, sorted={ps[2] == '1'})"
                        f".{'indices' if ps[3] == '1' else 'values'}")
            return f"{a[0]}({s(a[1])}, each last-dim row)"
        if h == "cst":
            return f"full({s(a[1])}, {a[0]}, {a[2]})"
        if h == "layernorm":
            return f"layer_norm({s(a[0])}, weight={s(a[1])}, bias={s(a[2])}, last {a[3]} dims, eps={a[4]})"
        if h in _HELPERS:      # a helper over a list nobody knows yet: what it would mean per part
            positions, build = _HELPERS[h]
            names = ["x", "y", "z"][:len(positions)]
            elems = [_app("Gd", f"\0{n}") for n in names]
            body = build(a, elems, 0)
            src = s(a[positions[0]]) if len(positions) == 1 else \
                f"zip({', '.join(s(a[p]) for p in positions)})"
            text = self.show(body).replace("\0", "")
            return f"[{text} for {', '.join(names)} in {src}]"
        return f"{h}({', '.join(s(x) for x in a)})"


def show(t, leaf=None, world=None) -> str:
    """A parsed term (or its egglog text) in the user's vocabulary."""
    if isinstance(t, str):
        t = parse(t)
    return Printer(leaf, world)(t)
