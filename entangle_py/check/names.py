"""Names of tensors in both programs: port names <-> nodes, G_d leaves, and terms shown with
the names a user knows (``r0.out`` rather than ``r0.mm_1``)."""
from __future__ import annotations

from entangle_py.ir import graph as G
from entangle_py.semantics import lower as L
from entangle_py.semantics.terms import Var, str_lit


class Names:
    """Stable names <-> nodes for one rank graph: port names first, then node names."""

    def __init__(self, g: G.RankGraph):
        self.g = g
        self.by_port = {p.name: p.node for p in g.inputs}
        self.by_port.update({p.name: p.node for p in g.outputs})
        self.display = {}
        # an input shows as itself: an output port on a placeholder is the state a rank leaves
        # unwritten (check/state.py's mutated:<port>), the input's own value
        placeholders = {p.node for p in g.inputs}
        for p in [q for q in g.outputs if q.node not in placeholders] + g.inputs:
            self.display.setdefault(p.node, p.name)
        self.aliases = L.naming_aliases(g)     # names given in the program (tg.log_tensor)

    def node(self, name: str) -> str | None:
        if name in self.by_port:
            return self.by_port[name]
        if self.g.has(name):
            return name
        return self.aliases.get(name)

    def show(self, node: str) -> str:
        return self.display.get(node, node)


def gd_leaf(rank: int, node: str) -> str:
    return f"(Gd {str_lit(f'r{rank}.{node}')})"


def split_key(key: str) -> tuple[int, str]:
    """``r1.mm_3#0`` -> (1, 'mm_3#0'): the rank of a G_d leaf's key and its node (with the output
    index of a multi-output node, or a lowering helper's ``:suffix``), gd_leaf's inverse."""
    rank, node = key.split(".", 1)
    return int(rank[1:]), node


def list_items(t) -> list:
    """The items of a parsed ``TList``."""
    out = []
    while isinstance(t, tuple) and isinstance(t[0], Var) and t[0].name == "Cons":
        out.append(t[1])
        t = t[2]
    return out


def gd_leaves(t):
    """The ``(Gd key)`` leaves of a parsed term."""
    if isinstance(t, tuple):
        if isinstance(t[0], Var) and t[0].name == "Gd":
            yield t
        else:
            for a in t[1:]:
                yield from gd_leaves(a)


def source(n: G.Node) -> str | None:
    return str(n.source) if n.source else None


def meta_text(v) -> str:
    return f"{v.dtype}{list(v.shape)}" if isinstance(v, G.TensorMeta) else "no tensor"


def unsupported_key(res: L.NoSemantics) -> str:
    if isinstance(res, L.Refused):
        return f"{res.op} called with {res.why} (the term language cannot express it)"
    return res.op


class Display:
    """Terms as short text for failure messages, with G_d tensors by their port names."""

    def __init__(self, dist_names: list[Names]):
        self.dist_names = dist_names

    def leaf(self, key: str) -> str:
        """``r0.mm_1`` -> ``r0.out`` when the node carries a port name."""
        r, node = split_key(key)
        base = node.split("#")[0]
        return f"r{r}.{self.dist_names[r].show(base)}" + (f"[{node.split('#')[1]}]" if "#" in node else "")

    def term(self, t) -> str:
        if not isinstance(t, tuple):
            return str(t)
        head = t[0].name if isinstance(t[0], Var) else str(t[0])
        args = t[1:]
        if head == "Gd":
            return self.leaf(args[0])
        if head == "Gs":
            return f"seq.{args[0]}"
        if head in ("Cons", "Nil"):
            return ", ".join(self.term(x) for x in list_items(t))
        if head in ("concat",):
            return f"concat({self.term(args[0])}, dim={args[1]})"
        if head in ("rsum", "rmax", "rmean"):
            return f"{head[1:]}({self.term(args[0])})"
        if head == "DLit":
            return str(args[0])
        if head in ("unary", "scalar", "binary", "opaque"):
            name = str(args[0]).split("|")[0]
            rest = [self.term(a) for a in args[1:]]
            return f"{name}({', '.join(rest)})"
        return f"{head}({', '.join(self.term(a) for a in args)})"
