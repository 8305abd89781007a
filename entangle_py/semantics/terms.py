"""The term language the engine reasons in: egglog declarations plus a torch meaning for each.

Every constructor that lemmas or lowered graphs use is declared here once, with its egglog
signature, its extraction cost, whether it is *clean* (data movement or a reduction over ranks)
and its meaning as a torch computation.  The meaning is what the lemma tests evaluate (both sides
of every lemma on random instances) and what failure evidence uses.

Terms are written as egglog s-expressions.  ``parse_sexpr`` reads them; ``evaluate`` computes
them with torch given values for their variables.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

from entangle_py.lazy import torch

from entangle_py.semantics.meanings import (  # noqa: F401  (re-exported: the term language's meanings)
    _unary, unary_fn, _scalar, _binary, binary_fn, _pointwise, _slice, _view, _expand, _reduce,
    REDUCTIONS, _concat, _no_bool, _stack_sum, _stack_max, _stack_mean, _stack_lse, UNARY_OPS, CASTS, SCALAR_OPS, BINARY_OPS,
    UNARY_NAMES, BINARY_NAMES, const_product, const_quotient, const_positive, MASKED_FILL, THRESHOLD_BACKWARD,
    _exact_div, _dset, _repl, _zip_aligned, _zip_concat_fold, _where, _bc_like, WHERE_PATTERNS, _zip_where, _zip_exact,
    INT_SCALAR_OPS, _iscalar, _take, _iput, _mtake, _pick, _mpick, _tpick, _tcount, _cst, _map_offsets,
    _layernorm, _arange, _scatter, _mscatter, _place, _tplace, _mplace, _pad, _map_pad, ROWWISE_OPS,
    rowwise_fn, _rowwise,)
from entangle_py.semantics.sexpr import Var, heads, parse_sexpr, to_sexpr  # noqa: F401  (the term language's text)

BIG = 100_000        # cost of a compute op / a G_s tensor: any term containing one is not clean
CLEAN_COST = 1

# ----------------------------------------------------------------------------- s-expressions

def is_clean(t) -> bool:
    """A parsed term built of clean constructors only (G_d leaves, data movement, rank reductions)."""
    if not isinstance(t, tuple):
        return True
    c = BY_NAME.get(t[0].name if isinstance(t[0], Var) else t[0])
    return c is not None and c.clean and all(is_clean(a) for a in t[1:])


def is_clean_text(text: str) -> bool:
    """``is_clean`` of the term written in ``text``, read from the heads of its applications
    (string literals removed first), without parsing it: G_d holds thousands of definitions."""
    return all(_clean_head(h) for h in heads(text))


@functools.lru_cache(maxsize=None)
def _clean_head(name: str) -> bool:
    c = BY_NAME.get(name)
    return c is not None and c.clean


def str_lit(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


# ----------------------------------------------------------------------------- the constructor record

@dataclass(frozen=True)
class Constructor:
    name: str
    signature: str                 # egglog argument sorts, e.g. "T i64"
    sort: str                      # result sort
    cost: int
    clean: bool
    meaning: Callable              # torch semantics over evaluated arguments


# ----------------------------------------------------------------------------- constructors

def _c(name, signature, sort, cost, clean, meaning):
    return Constructor(name, signature, sort, cost, clean, meaning)


CONSTRUCTORS: list[Constructor] = [
    # sizes
    _c("DLit", "i64", "Dim", 0, True, lambda n: n),
    _c("DSym", "String", "Dim", 0, True, None),
    _c("dadd", "Dim Dim", "Dim", 1, True, lambda a, b: a + b),   # size arithmetic (see dims.py)
    _c("dsub", "Dim Dim", "Dim", 1, True, lambda a, b: a - b),
    # the row count of a tensor whose size is known only from values (a nonzero result's u0,
    # check/sizes.py): one e-class with the count of every tensor proven equal to it
    _c("DRows", "T", "Dim", 0, True, lambda t: int(t.shape[0])),
    # lists: tensors (concat parts, ranks of a sum), ints (dims), sizes (shapes)
    _c("Nil", "", "TList", 0, True, lambda: []),
    _c("Cons", "T TList", "TList", 0, True, lambda a, r: [a] + r),
    _c("INil", "", "IList", 0, True, lambda: []),
    _c("ICons", "i64 IList", "IList", 0, True, lambda a, r: [a] + r),
    _c("DNil", "", "DList", 0, True, lambda: []),
    _c("DCons", "Dim DList", "DList", 0, True, lambda a, r: [a] + r),
    # leaves
    _c("Gd", "String", "T", 1, True, None),           # a tensor of the distributed program
    _c("Gs", "String", "T", BIG * 10, False, None),   # a tensor of the sequential program
    # clean: data movement and reductions over ranks
    _c("concat", "TList i64", "T", CLEAN_COST, True, _concat),
    _c("rsum", "TList", "T", CLEAN_COST, True, _stack_sum),
    _c("rmax", "TList", "T", CLEAN_COST, True, _stack_max),
    # the mean over ranks: their sum divided by their number (division by the world size is clean:
    # data-parallel loss averaging, DTensor's Partial("avg"), ReduceOp.AVG)
    _c("rmean", "TList", "T", CLEAN_COST, True, _stack_mean),
    # the log-sum-exp over a list of parts of one shape (a logsumexp over a dim the parts split:
    # the ranks' logsumexps gathered and reduced again).  No collective computes it: not clean
    _c("rlse", "TList", "T", BIG, False, _stack_lse),
    _c("slice", "T i64 Dim Dim", "T", CLEAN_COST, True, _slice),
    _c("transpose", "T i64 i64", "T", CLEAN_COST, True, lambda x, a, b: x.transpose(a, b)),
    _c("permute", "T IList", "T", CLEAN_COST, True, lambda x, dims: x.permute(*dims)),
    _c("view", "T DList", "T", CLEAN_COST, True, _view),
    _c("expand", "T DList", "T", CLEAN_COST, True, _expand),
    # compute
    _c("unary", "String T", "T", BIG, False, _unary),
    _c("scalar", "String T String", "T", BIG, False, _scalar),
    _c("binary", "String T T", "T", BIG, False, _binary),
    _c("where", "T T T", "T", BIG, False, _where),     # torch.where(c, a, b)
    # a pointwise op of three or more tensors: an op text (opcall.py) and the operands
    _c("pointwise", "String TList", "T", BIG, False, _pointwise),
    _c("mm", "T T", "T", BIG, False, lambda a, b: torch.mm(*_no_bool(a, b))),
    _c("bmm", "T T", "T", BIG, False, lambda a, b: torch.bmm(*_no_bool(a, b))),
    _c("reduce", "String T IList i64", "T", BIG, False, _reduce),
    _c("softmax", "T i64", "T", BIG, False, lambda x, d: torch.softmax(x, d)),
    _c("opaque", "String TList", "T", BIG, False, None),   # an op with no lemmas: congruence only
    # integer scalar ops, constants, table lookups and picks (indexing; offsets are i64 so
    # lemmas can add part widths)
    _c("iscalar", "String T i64", "T", BIG, False, _iscalar),       # x op c, integer x and c
    _c("cst", "String DList String", "T", CLEAN_COST, True, _cst),   # a constant tensor of a shape and dtype
    _c("arange", "i64 i64 Dim", "T", CLEAN_COST, True, _arange),     # positions (see _arange)
    _c("take", "T T", "T", BIG, False, _take),
    # x.nonzero() and x.index_put((i,), v) at distinct positions i (a 1-D tensor's nonzero: the
    # Megatron MoE dispatch ``out[(ids == e).nonzero(), :] = expert(x[...])``)
    _c("nonzero", "T", "T", BIG, False, lambda x: torch.nonzero(x)),
    _c("iput", "T T T", "T", BIG, False, _iput),
    _c("mtake", "T T i64", "T", BIG, False, _mtake),
    _c("pick", "T T", "T", BIG, False, _pick),
    _c("mpick", "T T i64", "T", BIG, False, _mpick),
    # a loss's target pick and count (nll_loss): only loss lowerings write them, so their index is
    # a loss target (what the valid_indices assumption speaks of)
    _c("tpick", "T T i64", "T", BIG, False, _tpick),
    _c("tcount", "T T i64 String", "T", BIG, False, _tcount),
    # the loss's target picks of row parts: pairs of a concat of log-probabilities and one of their
    # targets along d, each with ignore index c
    _c("zip_tpick", "TList TList i64 i64", "TList", BIG, False,
       lambda l1, l2, c, d: [_tpick(a, b, c) for a, b in _zip_aligned(l1, l2, d, d)]),
    # a lookup of every part at the same ids (rows of a table split along another dim than its rows)
    _c("map_take", "TList T", "TList", BIG, False, lambda l, ids: [_take(x, ids) for x in l]),
    _c("map_take_ids", "T TList", "TList", BIG, False, lambda w, l: [_take(w, ids) for ids in l]),
    _c("map_scatter", "TList T i64", "TList", BIG, False, lambda l, ids, n: [_scatter(g, ids, n) for g in l]),
    _c("map_mtake", "TList T i64", "TList", BIG, False,
       lambda l, ids, lo: _map_offsets(_mtake, l, ids, lo, 0)),
    _c("map_mpick", "TList T i64", "TList", BIG, False,
       lambda l, t, lo: _map_offsets(_mpick, l, t, lo, -1)),
    _c("layernorm", "T T T i64 String", "T", BIG, False, _layernorm),
    # the gradients of a lookup, of a pick and of a slice (see _scatter, _mscatter, _place, _pad)
    _c("scatter", "T T i64", "T", BIG, False, _scatter),
    _c("mscatter", "T T i64 i64", "T", BIG, False, _mscatter),
    _c("place", "T T i64", "T", BIG, False, _place),
    # a loss's target gradient (nll_loss_backward, zero rows at the ignore index) and its
    # vocab-parallel (masked) block of columns (see _tplace, _mplace)
    _c("tplace", "T T i64 i64", "T", BIG, False, _tplace),
    _c("mplace", "T T i64 i64", "T", BIG, False, _mplace),
    _c("zpad", "T i64 i64 i64", "T", CLEAN_COST, True, _pad),
    _c("rowwise", "String T", "T", BIG, False, _rowwise),     # an op on each last-dim row alone

    # List-walking helpers (map an op over concat parts, zip two lists, ...) are constructors
    # too: they are dirty (cost BIG) until rewritten away, so an unfinished walk is never extracted.
    _c("map_unary", "String TList", "TList", BIG, False, lambda op, l: [_unary(op, x) for x in l]),
    _c("map_scalar", "String TList String", "TList", BIG, False, lambda op, l, c: [_scalar(op, x, c) for x in l]),
    _c("map_iscalar", "String TList i64", "TList", BIG, False, lambda op, l, c: [_iscalar(op, x, c) for x in l]),
    _c("map_binary_l", "String TList T", "TList", BIG, False, lambda op, l, y: [_binary(op, x, y) for x in l]),
    _c("map_binary_r", "String T TList", "TList", BIG, False, lambda op, y, l: [_binary(op, y, x) for x in l]),
    _c("zip_binary", "String TList TList i64 i64", "TList", BIG, False,
       lambda op, l1, l2, d1, d2: [_binary(op, a, b) for a, b in _zip_aligned(l1, l2, d1, d2)]),
    # where over concats along one axis k (from the right): parts zipped, broadcast operands copied
    _c("zip_where", "String TList TList TList i64", "TList", BIG, False, _zip_where),
    # picks of row parts: the pairs of a concat of log-probabilities and one of their targets along d
    _c("zip_pick", "TList TList i64", "TList", BIG, False,
       lambda l1, l2, d: [_pick(a, b) for a, b in _zip_aligned(l1, l2, d, d)]),
    # placements of row parts (place's gradient-of-a-pick): the pairs of a concat of values and one
    # of their indices along d, each placed along a new last dim of size n
    _c("zip_place", "TList TList i64 i64", "TList", BIG, False,
       lambda l1, l2, n, d: [_place(a, b, n) for a, b in _zip_aligned(l1, l2, d, d)]),
    # a loss's target gradients of row parts: the pairs of a concat of values and one of their
    # targets along d, each placed with ignore index c along a new last dim of size n
    _c("zip_tplace", "TList TList i64 i64 i64", "TList", BIG, False,
       lambda l1, l2, c, n, d: [_tplace(a, b, c, n) for a, b in _zip_aligned(l1, l2, d, d)]),
    _c("bc_like", "T TList i64", "TList", BIG, False, _bc_like),
    # a constant split like a concat's parts: (cst c s t) with s[k] := each part's size on its dim d
    # (a constant added to row-sharded x, split at the ranks' rows)
    _c("cst_parts", "String DList String i64 TList i64", "TList", BIG, False,
       lambda c, s, t, k, l, d: [_cst(c, _dset(s, k, x.shape[d]), t) for x in l]),
    _c("lsum", "TList i64", "Dim", BIG, False, lambda l, d: sum(int(x.shape[d]) for x in l)),
    _c("map_mm_l", "TList T", "TList", BIG, False, lambda l, w: [torch.mm(*_no_bool(x, w)) for x in l]),
    _c("map_mm_r", "T TList", "TList", BIG, False, lambda x, l: [torch.mm(*_no_bool(x, w)) for w in l]),
    _c("zip_mm", "TList TList", "TList", BIG, False, lambda l1, l2: [torch.mm(*_no_bool(a, b)) for a, b in _zip_exact(l1, l2)]),
    _c("map_transpose", "TList i64 i64", "TList", BIG, False, lambda l, a, b: [x.transpose(a, b) for x in l]),
    _c("map_softmax", "TList i64", "TList", BIG, False, lambda l, d: [torch.softmax(x, d) for x in l]),
    _c("map_rowwise", "String TList", "TList", BIG, False, lambda op, l: [_rowwise(op, x) for x in l]),
    _c("map_view", "TList DList", "TList", BIG, False, lambda l, s: [x.reshape(tuple(s)) for x in l]),
    _c("map_view_last", "TList DList", "TList", BIG, False,
       lambda l, s: [x.reshape(tuple(s[:-1]) + (x.shape[-1],)) for x in l]),
    _c("dset_last", "DList Dim", "DList", BIG, False, lambda s, v: list(s[:-1]) + [v]),
    # batched matmul and view/permute/slice helpers (attention with heads split across ranks);
    # matmul is torch.matmul on operands with the same batch dims (>= 3-D; 2-D is mm)
    _c("matmul", "T T", "T", BIG, False, lambda a, b: torch.matmul(*_no_bool(a, b))),
    _c("zip_matmul", "TList TList i64", "TList", BIG, False,
       lambda l1, l2, d: [torch.matmul(*_no_bool(a, b)) for a, b in _zip_aligned(l1, l2, d, d)]),
    # each part viewed to s with s[j] := the part's size on its dim d
    _c("map_view_at", "TList DList i64 i64", "TList", BIG, False,
       lambda l, s, d, j: [x.reshape(tuple(_dset(s, j, x.shape[d]))) for x in l]),
    # each part viewed to s with s[j] := s[j] * (the part's size on d) / t, t the concat's size on d:
    # the concat axis (d, j in the view) and the dims after it regrouped, the axis staying the
    # outermost (split, merged), the dims before it kept (j = d) or regrouped among themselves
    _c("map_view_scale", "TList DList i64 i64 i64", "TList", BIG, False,
       lambda l, s, d, j, t: [x.reshape(tuple(_dset(s, j, _exact_div(_dat(s, j) * x.shape[d], t)))) for x in l]),
    _c("map_slice", "TList i64 Dim Dim", "TList", BIG, False, lambda l, d, a, b: [_slice(x, d, a, b) for x in l]),
    _c("map_permute", "TList IList", "TList", BIG, False, lambda l, p: [x.permute(*p) for x in l]),
    _c("dset", "DList i64 Dim", "DList", BIG, False, lambda s, i, v: _dset(s, i, v)),
    # a batched product of each part (rows of a context-parallel rank: bmm(concat(l, 1), w))
    _c("map_bmm_l", "TList T", "TList", BIG, False, lambda l, w: [torch.bmm(*_no_bool(x, w)) for x in l]),
    # the batched products of pairs of parts (a bmm whose contraction dim is split: the rows of
    # one operand's last dim against the other's middle dim, e.g. a context-parallel K/V gradient)
    _c("zip_bmm", "TList TList", "TList", BIG, False,
       lambda l1, l2: [torch.bmm(*_no_bool(a, b)) for a, b in _zip_exact(l1, l2)]),
    # walk helpers for lemmas over sums across ranks
    # op applied rank by rank: sum_r a_r + sum_r b_r = sum_r (a_r + b_r) (lists of equal length)
    _c("zip_ranks", "String TList TList", "TList", BIG, False,
       lambda op, l1, l2: [_binary(op, a, b) for a, b in _zip_exact(l1, l2)]),
    # each part expanded to s with s[j] := the part's size on its dim d
    _c("map_expand_at", "TList DList i64 i64", "TList", BIG, False,
       lambda l, s, d, j: [x.expand(tuple(_dset(s, j, x.shape[d]))) for x in l]),
    # k copies of one tensor: the parts of an expand along a broadcast dim, split evenly
    _c("repl", "T i64", "TList", BIG, False, _repl),
    # concat([concat(l1, e)] + r, d): a concat whose first part is a concat along another dim,
    # marked so that a lemma rooted at this (rare) constructor can look at the rest
    _c("concat_nest", "TList TList i64 i64", "T", BIG, False,
       lambda l1, r, d, e: _concat([_concat(l1, e)] + list(r), d)),
    # pairs of parts that line up on dim e, each pair concatenated along d: [concat([a_i, b_i], d)]
    _c("zip_concat", "TList TList i64 i64", "TList", BIG, False,
       lambda l1, l2, d, e: [_concat([a, b], d) for a, b in _zip_aligned(l1, l2, e, e)]),
    # ... folded over more tensors (a concat along d of k concats along e): each tensor of l split
    # along e where acc's parts are, its blocks appended part by part along d
    _c("zip_concat_fold", "TList TList i64 i64", "TList", BIG, False, _zip_concat_fold),
    # a column of blocks the interchange is gathering: the concat of its parts along d, kept apart
    # from concat (no concat lemma reads a half-built column), a concat once complete (unccol)
    _c("ccol", "TList i64", "T", BIG, False, lambda l, d: _concat(l, d)),
    _c("map_ccol", "TList i64", "TList", BIG, False, lambda l, d: [_concat([x], d) for x in l]),
    _c("zip_ccol", "TList TList i64 i64", "TList", BIG, False,
       lambda l1, l2, d, e: [_concat([a, b], d) for a, b in _zip_aligned(l1, l2, e, e)]),
    _c("unccol", "TList", "TList", BIG, False, lambda l: list(l)),
    # reductions and layer norm part by part
    _c("map_reduce", "String TList IList i64", "TList", BIG, False,
       lambda op, l, dims, k: [_reduce(op, x, dims, k) for x in l]),
    _c("map_layernorm", "TList T T i64 String", "TList", BIG, False,
       lambda l, w, b, k, eps: [_layernorm(x, w, b, k, eps) for x in l]),
    _c("lappend", "TList TList", "TList", BIG, False, lambda a, b: list(a) + list(b)),
    # each part zero-padded to total along d, the first starting lo in: part k has lo + (sizes of
    # the parts before it) zeros before it
    _c("map_zpad", "TList i64 i64 i64", "TList", BIG, False, _map_pad),
    # each part zero-padded alike along d (lo before, hi after): a pad along a dim other than a
    # concat's axis
    _c("map_zpad_each", "TList i64 i64 i64", "TList", BIG, False,
       lambda l, d, lo, hi: [_pad(x, d, lo, hi) for x in l]),
    # each part placed alike at the same indices (a placement is linear in its values)
    _c("map_place_each", "TList T i64", "TList", BIG, False, lambda l, i, n: [_place(x, i, n) for x in l]),
]

BY_NAME = {c.name: c for c in CONSTRUCTORS}

# constants the engine folds where a rule asks (ask_<name> a b): the text of an exact product or
# quotient of two float constant texts (engine/egraph.py)
FOLDS: dict[str, Callable] = {"cmul": const_product, "cdiv": const_quotient}

# egglog primitives usable in lemma guards and right-hand sides, with their Python meaning.
PRIMITIVES: dict[str, Callable] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "max": lambda a, b: max(a, b),
    "*": lambda a, b: a * b,
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "to-string": lambda a: str(a),
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "dle": lambda a, b: a <= b,     # a relation on sizes, proven by egglog (literals) or Z3
    **FOLDS,        # exact products and quotients of two constant texts
    # the text of an integer constant (a cst's value), and the masked_fill op filling it (filled by
    # rules where a pattern asks: entangle_py/lemmas/indexing.py)
    "itext": lambda c: str(int(c)),
    "fillop": lambda c: MASKED_FILL + str(int(c)),
    # the clamp of an index into a table's n rows, [0, n - 1], as the op text its call lowers to
    "clampop": lambda n: f"clamp.default(_, 0, {int(n) - 1})",
    "%": lambda a, b: a % b,
    # egglog's string primitives: a reduction's op text read apart ("norm:2.0" -> its order "2.0")
    "replace": lambda s, a, b: s.replace(a, b),
    "count-matches": lambda s, a: s.count(a),
    "/": lambda a, b: a // b,
    "ihas": lambda l, i: int(i in l),
    "ibelow": lambda l, i: sum(1 for a in l if a < i),
    "ilen": lambda l: len(l),
    "dtype": lambda x: dtype_name(x),
    "fdtype": lambda t: t in FLOAT_DTYPES,
    "glinear": lambda op: op in GRAD_LINEAR,
    "fcast": lambda op: op in FLOAT_CASTS,
    "fexact": lambda op: _fexact(op),
    # the length of a list of tensors (ranks of a sum; computed where a rule asks, entangle_py/lemmas/collective.py)
    # and the text of a positive count as a float constant (a scalar term's divisor: "2.0")
    "tlen": lambda l: len(l),
    "ntext": lambda n: _ntext(n),
    # provenance, not a value: a drawn or evaluated tensor stands for a program's input (the
    # e-graph derives (given x) from the inputs' leaves through GIVEN_MOVES)
    "given": lambda x: True,
    # (peer a b): b is the tensor of the same node as a on the next rank, of a's shape and dtype
    # (the checker declares it from the graphs' metadata, check/distributed.py): its meaning for
    # a lemma is the shape and dtype that the two share
    "peer": lambda a, b: a.shape == b.shape and a.dtype == b.dtype,
    # (concat2 x y d): the e-graph holds the concat of x and y along d (entangle_py/lemmas/movement.py, a rule
    # derives it from every such concat): its meaning for a lemma is that the concat is defined
    "concat2": lambda x, y, d: _concat_defined(x, y, d),
    # (stile x d a l): the parts of l are x from a to its end along d, in order (entangle_py/lemmas/movement.py:
    # rules chain the slices of x the e-graph holds)
    "stile": lambda x, d, a, l: _tiles(x, d, a, l),
}


def _tiles(x, d, a, parts) -> bool:
    if not parts or not 0 <= a <= x.shape[d]:
        return False
    try:
        whole = torch.cat(list(parts), d)
    except (RuntimeError, IndexError, TypeError):
        return False
    rest = x.narrow(d, a, x.shape[d] - a)
    return whole.shape == rest.shape and whole.dtype == rest.dtype and bool(torch.equal(whole, rest))


def _concat_defined(x, y, d) -> bool:
    try:
        torch.cat([x, y], d)
    except (RuntimeError, IndexError, TypeError):
        return False
    return True

# Element types.  (dtype x) is the name of tensor x's dtype ("float32", "int64", "bool"): every
# tensor of either program has one (check/sizes.py), and data movement passes it on
# (entangle_py/lemmas/shapes.py).  (fdtype t) holds for the floating dtypes.  Scaling moves through an op only
# where every operand has one floating dtype: with an int, bool or lower-precision operand the
# result's dtype or value differs (int overflow, float16 overflow of an intermediate quotient).
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
# (fcast op): op is the unary cast to a floating dtype
FLOAT_CASTS = tuple(f"to_{t}" for t in FLOAT_DTYPES)
# (fexact op) = n for the cast op to a floating dtype: every integer in [0, n] is exact in that
# dtype (n = 2 ** significand bits), so a sum of at most n zeros and ones is exact in any order
FLOAT_EXACT = {"to_float16": 2 ** 11, "to_bfloat16": 2 ** 8, "to_float32": 2 ** 24, "to_float64": 2 ** 53}


# the counts ntext is defined for: their float text is the integer's digits and ".0" (the same
# text egglog builds, and the one lowering writes for such a divisor, semantics/lower/core.py _scalar_text)
NTEXT_MAX = 2 ** 53


def _ntext(n) -> str:
    if isinstance(n, bool) or not isinstance(n, int) or not 0 < n < NTEXT_MAX:
        raise ValueError(f"no count text for {n!r}")
    return repr(float(n))


def _fexact(op: str) -> int:
    if op not in FLOAT_EXACT:
        raise ValueError(f"{op} is not a cast to a floating dtype")
    return FLOAT_EXACT[op]


def dtype_name(x) -> str:
    return str(x.dtype).removeprefix("torch.")


# Binary ops linear in their first operand, op(a / c, b) = op(a, b) / c: products, quotients and
# the pointwise backward ops (grad, saved tensor) -- the gradient of a mean scaled by 1 / n.
GRAD_LINEAR = ("mul", "div", "gelu_backward", "gelu_tanh_backward", "silu_backward", "sigmoid_backward",
               "tanh_backward", "threshold_backward:0.0")    # the last: relu's backward, g where x > 0

# Functions (not constructors) and relations the engine maintains.  Queries on int lists
# (reduction dims) are computed on demand by rules in entangle_py/lemmas/shapes.py: (iask l i) asks for
# (ihas l i) = 1 if i is in l else 0 and (ibelow l i) = #{a in l : a < i}; (ilen l) is the
# length (their Python meaning, for lemma conditions, is in PRIMITIVES).
FUNCTIONS_TEXT = """
(function dim (T i64) Dim :merge old)
(function ndim (T) i64 :merge old)
(function dlen (DList) i64 :merge old)
(function dat (DList i64) Dim :merge old)
(function dlast (DList) Dim :merge old)
(relation dle (Dim Dim))
(relation ask_le (Dim Dim))
(relation dterm (Dim))
(relation clean (T))
(relation cleanl (TList))
(relation certleaf (T))
(relation cert (T))
(relation certl (TList))
(relation cleand (Dim))
(relation cleandl (DList))
(relation certd (Dim))
(relation certdl (DList))
(relation given (T))
(relation givenl (TList))
(relation vpfx (T DList i64))
(relation vsfx (T DList i64))
(function tprod (T i64) i64 :merge old)
(function sprod (DList i64) i64 :merge old)
(function spos (DList i64) i64 :merge (max old new))
(relation bsame (T T i64))
(relation peer (T T))
(relation concat2 (T T i64))
(relation stile (T i64 i64 TList))
(relation ask_zip (TList TList i64 i64))
(relation zipok (TList TList i64 i64))
(function ipos (IList i64) i64 :merge old)
(function itext (i64) String :merge old)
(function fillop (i64) String :merge old)
(function clampop (i64) String :merge old)
(relation iask (IList i64))
(function ihas (IList i64) i64 :merge old)
(function ibelow (IList i64) i64 :merge old)
(function ilen (IList) i64 :merge old)
(function dtype (T) String :merge old)
(relation fdtype (String))
(relation glinear (String))
(relation fcast (String))
(function fexact (String) i64 :merge old)
(relation ask_tlen (TList))
(function tlen (TList) i64 :merge old)
(function ntext (i64) String :merge old)
"""


# Ops that move their input's values without computing new ones (given propagates through them).
GIVEN_MOVES = ("concat", "slice", "transpose", "permute", "view", "expand")
# Inputs marked given: the user's inputs (``input:`` ports: what an assumption about "the inputs"
# speaks of -- not parameters, buffers, module constants or [cut] tensors, which the program
# holds or computes: a buffer of -100 padding is no input label), and integer ones, the only
# dtypes a loss's targets have (float inputs would make facts no lemma reads).
GIVEN_DTYPES = ("int64", "int32", "int16", "int8", "uint8")


def given_input(port: str | None, val) -> bool:
    """Whether the input ``port`` (of this meta) is marked (given ...) in the e-graph."""
    return bool(port) and port.startswith("input:") and getattr(val, "dtype", None) in GIVEN_DTYPES


def declarations() -> str:
    """egglog text declaring every sort and constructor."""
    sorts = {}
    for c in CONSTRUCTORS:
        sorts.setdefault(c.sort, []).append(c)
    lines = ["(sort T)", "(sort TList)", "(sort IList)", "(sort DList)", "(sort Dim)",
             "(ruleset lemmas)", "(ruleset walks)", "(ruleset shapes)", "(ruleset zips)", "(ruleset cleanliness)",
             "(ruleset certify)"]
    for c in CONSTRUCTORS:
        lines.append(f"(constructor {c.name} ({c.signature}) {c.sort} :cost {c.cost})")
    lines.append(FUNCTIONS_TEXT)
    for f in FOLDS:          # asked by a rule, answered by the engine (engine/egraph.py)
        lines += [f"(relation ask_{f} (String String))", f"(function {f} (String String) String :merge old)"]
    lines += [f"(fdtype {str_lit(t)})" for t in FLOAT_DTYPES] + [f"(glinear {str_lit(op)})" for op in GRAD_LINEAR]
    lines += [f"(fcast {str_lit(op)})" for op in FLOAT_CASTS]
    lines += [f"(set (fexact {str_lit(op)}) {n})" for op, n in FLOAT_EXACT.items()]
    # size arithmetic: literals fold here; symbolic terms are canonicalized and compared by dims.py
    lines += [
        "(rewrite (dadd (DLit a) (DLit b)) (DLit (+ a b)) :ruleset shapes)",
        "(rewrite (dsub (DLit a) (DLit b)) (DLit (- a b)) :ruleset shapes)",
        "(rewrite (dadd a (DLit 0)) a :ruleset shapes)",
        "(rewrite (dadd (DLit 0) a) a :ruleset shapes)",
        "(rewrite (dsub a (DLit 0)) a :ruleset shapes)",
        "(rule ((= t (dadd a b))) ((dterm t)) :ruleset shapes)",
        "(rule ((= t (dsub a b))) ((dterm t)) :ruleset shapes)",
        "(rule ((ask_le a b) (= a (DLit x)) (= b (DLit y)) (<= x y)) ((dle a b)) :ruleset shapes)",
        "(rule ((ask_le a a)) ((dle a a)) :ruleset shapes)",
    ]
    # clean: G_d leaves, and clean ops whose tensor children are clean.  cert (ruleset certify,
    # run only for the final output relation): the same over the leaves marked certleaf -- the
    # distributed program's outputs and the tensors the spec names as given.
    lines.append("(rule ((= x (Gd n))) ((clean x)) :ruleset cleanliness)")
    # given: the values of a program's input, moved (the checker marks the inputs' leaves).  An
    # assumption about the inputs (no_ignored_targets) covers these, never values a program
    # computes (targets it fills with the ignore index itself).
    lines.append("(rule ((= l (Nil))) ((givenl l)) :ruleset cleanliness)")
    lines.append("(rule ((= l (Cons a r)) (given a) (givenl r)) ((givenl l)) :ruleset cleanliness)")
    for c in CONSTRUCTORS:
        if c.name in GIVEN_MOVES:
            sig = c.signature.split()
            args = [f"a{i}" for i in range(len(sig))]
            conds = " ".join(f"({'given' if s == 'T' else 'givenl'} a{i})" for i, s in enumerate(sig) if s in ("T", "TList"))
            lines.append(f"(rule ((= x ({c.name} {' '.join(args)})) {conds}) ((given x)) :ruleset cleanliness)")
    lines.append("(rule ((certleaf x)) ((cert x)) :ruleset certify)")
    # a term is clean when its constructor is and every argument of a sort that can hold a tensor
    # is: tensors, their lists, and sizes -- a size may be a tensor's row count (DRows), so a
    # view or a constant sized by a G_s tensor's count is not clean (as is_clean says)
    for sorts, ruleset in ((CLEAN_SORTS, "cleanliness"), (CERT_SORTS, "certify")):
        for c in CONSTRUCTORS:
            if c.sort not in sorts or not c.clean or c.name == "Gd":
                continue
            sig = c.signature.split()
            args = [f"a{i}" for i in range(len(sig))]
            conds = [f"({sorts[s]} a{i})" for i, s in enumerate(sig) if s in sorts]
            lhs = f"({c.name} {' '.join(args)})" if args else f"({c.name})"
            lines.append(f"(rule ((= x {lhs}) {' '.join(conds)}) (({sorts[c.sort]} x)) :ruleset {ruleset})")
    return "\n".join(lines)


# the cleanliness relation of each sort that can hold a G_s or G_d tensor (and the certificate's)
CLEAN_SORTS = {"T": "clean", "TList": "cleanl", "Dim": "cleand", "DList": "cleandl"}
CERT_SORTS = {"T": "cert", "TList": "certl", "Dim": "certd", "DList": "certdl"}


# ----------------------------------------------------------------------------- evaluation

class EvalError(Exception):
    """A term that cannot be evaluated (undefined: lists of different lengths, bad shapes...)."""


# Arguments that are tensor dims (or lists of them): the term language writes every dim in its
# non-negative form (lowering and spec parsing normalise where a dim enters), so ``dim=-1`` and
# ``dim=1`` can never be two literals for one axis.  A negative dim makes a term undefined.
DIM_ARGS: dict[str, tuple[int, ...]] = {
    "concat": (1,), "slice": (1,), "transpose": (1, 2), "permute": (1,), "reduce": (2,),
    "softmax": (1,), "zip_binary": (3, 4), "lsum": (1,), "map_transpose": (1, 2), "map_softmax": (1,),
    "zip_matmul": (2,), "map_view_at": (2, 3), "map_view_scale": (2, 3),
    "map_slice": (1,), "map_permute": (1,), "map_reduce": (2,), "dset": (1,), "map_expand_at": (2, 3),
    "concat_nest": (2, 3), "zip_concat": (2, 3), "zip_concat_fold": (2, 3), "ccol": (1,), "map_ccol": (1,), "zip_ccol": (2, 3), "zpad": (1,), "map_zpad": (1,),
    "map_zpad_each": (1,),
    "zip_place": (3,), "zip_tplace": (4,), "cst_parts": (3, 5),
}


def _check_dims(name: str, vals: list):
    for i in DIM_ARGS.get(name, ()):
        v = vals[i]
        for d in (v if isinstance(v, list) else [v]):
            if not isinstance(d, int) or d < 0:
                raise EvalError(f"{name}: dim {d!r} is not a non-negative integer")


def evaluate(expr, env: dict):
    """Compute a parsed s-expression with torch.  ``env`` maps variable names to values.

    ``(dim x i)`` is ``x.shape[i]``; ``(ndim x)`` is ``x.dim()``; lists are Python lists.
    """
    if isinstance(expr, Var):
        if expr.name in ("true", "false"):
            return expr.name == "true"
        try:
            return env[expr.name]
        except KeyError:
            raise EvalError(f"unbound variable {expr.name}") from None
    if not isinstance(expr, tuple):
        return expr
    head, *args = expr
    name = head.name if isinstance(head, Var) else head
    vals = [evaluate(a, env) for a in args]
    try:
        if name == "dim":
            if not 0 <= vals[1] < vals[0].dim():
                raise EvalError(f"dim {vals[1]} of a {vals[0].dim()}-D tensor")
            return int(vals[0].shape[vals[1]])
        if name == "ndim":
            return vals[0].dim()
        if name == "dlen":
            return len(vals[0])
        if name == "dlast":
            return vals[0][-1]
        if name in VIEW_RELATIONS:
            return VIEW_RELATIONS[name](*vals)
        if name in PRIMITIVES:
            return PRIMITIVES[name](*vals)
        c = BY_NAME.get(name)
        if c is None or c.meaning is None:
            raise EvalError(f"no meaning for {name}")
        _check_dims(name, vals)
        return c.meaning(*vals)
    except EvalError:
        raise
    except (RuntimeError, ValueError, IndexError, TypeError) as e:
        raise EvalError(f"{name}: {e}") from None


def _vpfx(x, s, i):
    """The first i dims of tensor x are the first i entries of shape list s."""
    return 0 <= i <= min(x.dim(), len(s)) and list(x.shape[:i]) == list(s[:i])


def _vsfx(x, s, j):
    """The last j dims of tensor x are the last j entries of shape list s."""
    n, m = x.dim(), len(s)
    return 0 <= j <= min(n, m) and list(x.shape[n - j:]) == list(s[m - j:])


def _bsame(x, y, i):
    """x and y agree on their first i dims."""
    return 0 <= i <= min(x.dim(), y.dim()) and x.shape[:i] == y.shape[:i]


def _zipok(l1, l2, d1, d2):
    """Two lists of concat parts line up pairwise: one length, part k of l1 as long along d1 as
    part k of l2 along d2 (what zip_binary's walk needs to finish)."""
    return len(l1) == len(l2) and all(a.shape[d1] == b.shape[d2] for a, b in zip(l1, l2))


def _tprod(x, i):
    """The product of the first i dims of tensor x."""
    if not 0 <= i <= x.dim():
        raise IndexError("tprod index out of range")
    return math.prod(x.shape[:i])


def _sprod(s, i):
    """The product of the first i entries of shape list s."""
    if not 0 <= i <= len(s):
        raise IndexError("sprod index out of range")
    return math.prod(s[:i])


def _spos(s, q):
    """The last index i < len(s) at which the first i entries of shape list s multiply to q."""
    found = [i for i in range(len(s)) if math.prod(s[:i]) == q]
    if not found:
        raise ValueError(f"no prefix of {s} multiplies to {q}")
    return found[-1]


def _dat(s, i):
    if not 0 <= i < len(s):
        raise IndexError("dat index out of range")
    return s[i]


def _ipos(p, d):
    return list(p).index(d)


VIEW_RELATIONS: dict[str, Callable] = {
    "vpfx": _vpfx, "vsfx": _vsfx, "bsame": _bsame, "dat": _dat, "ipos": _ipos, "zipok": _zipok,
    "tprod": _tprod, "sprod": _sprod, "spos": _spos,
}


def allclose(a, b, rtol=1e-6, atol=1e-8) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(
            allclose(x, y, rtol, atol) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape:
            return False
        if a.dtype == torch.bool or b.dtype == torch.bool:
            return bool(torch.equal(a, b))
        return bool(torch.allclose(a.double(), b.double(), rtol=rtol, atol=atol, equal_nan=True))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=rtol, abs_tol=atol)
    return a == b
