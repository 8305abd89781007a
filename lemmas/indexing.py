"""Table lookups and their vocab-parallel (masked) forms.

Terms (entangle_py/terms.py, INDEXING):

- ``(take W ids)``   = ``W[ids]`` (embedding, ``index.Tensor(W, [ids])``);
- ``(mtake W ids lo)`` = rows ``W[ids - lo]`` where ``lo <= ids < lo + rows(W)``, zero rows elsewhere;
- ``(pick L t)``     = ``L[..., t]`` along the last dim (``index.Tensor(L2, [arange, t])``);
- ``(mpick L t lo)`` = ``L[..., t - lo]`` where ``lo <= t < lo + L.shape[-1]``, zero elsewhere.

The masked forms are total (defined for every id): a vocab-parallel rank computes one for its
slice, and a masked lookup over a concat along the looked-up dim is the sum of the parts' masked
lookups at accumulated offsets — exact for all ids, no assumption.  Only turning a plain lookup
into the masked form needs ids in range: that lemma rests on the ``valid_indices`` assumption and is
active only when the spec enables it.
"""
import torch

from entangle_py.lemma import Lemma, Rule
from lemmas._instances import concat_parts, repeat, shard_count, tensor


def _ids(rng, shape, lo, hi):
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    return torch.randint(lo, hi, tuple(shape), generator=g, dtype=torch.int64)


def _lead(rng):
    return [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]


# ----------------------------------------------------------------------------- take

@repeat(8)
def _take_valid(rng):
    n = rng.randint(1, 9)
    return {"W": tensor(rng, n, rng.randint(1, 4)), "ids": _ids(rng, _lead(rng), 0, n)}


@repeat(4)
def _take_negative(rng):
    """Counterexample: negative ids wrap in W[ids] but are masked out of the masked lookup."""
    n = rng.randint(1, 9)
    ids = _ids(rng, _lead(rng), 0, n)
    ids.view(-1)[0] = -rng.randint(1, n)
    return {"W": tensor(rng, n, rng.randint(1, 4)), "ids": ids}


def _mask_text(x, lo, hi):
    return f'(binary "bitwise_or" (iscalar "lt" {x} {lo}) (iscalar "ge" {x} {hi}))'


_MTAKE_LHS = (f'(binary "masked_fill:0.0" (take W (binary "masked_fill:0" (iscalar "sub" ids lo) {_mask_text("ids", "lo", "hi")})) '
              f'(view {_mask_text("ids", "lo", "hi")} s))')


def _mtake_instance(rng):
    n = rng.randint(1, 9)
    lo = rng.randint(-4, 20)
    lead = _lead(rng)
    ids = _ids(rng, lead, lo - 6, lo + n + 6)        # many ids outside [lo, lo + n), some negative
    return {"W": tensor(rng, n, rng.randint(1, 4)), "ids": ids, "lo": lo, "hi": lo + n, "n": n,
            "s": lead + [1]}


@repeat(10)
def _mtake_intro(rng):
    return _mtake_instance(rng)


def _mtake_intro_bad(rng):
    for k in range(6):
        inst = _mtake_instance(rng)
        if k % 3 == 0:
            inst["hi"] = inst["hi"] + 1                         # the mask is not the rank's rows
        elif k % 3 == 1:
            inst["s"] = inst["s"][:-1]                          # the mask is not a trailing unsqueeze
        else:
            inst["W"] = tensor(rng, inst["n"], 2, 3)            # a table with more than one row dim
        yield inst


@repeat(8)
def _mtake_concat(rng):
    l = concat_parts(rng, 2, 0)
    total = sum(p.shape[0] for p in l)
    lo = rng.randint(-5, 5)
    return {"l": l, "d": 0, "ids": _ids(rng, _lead(rng), lo - 4, lo + total + 4), "lo": lo}


@repeat(3)
def _mtake_concat_bad(rng):
    inst = next(_mtake_concat(rng))
    inst["d"] = 1
    return inst


@repeat(6)
def _map_mtake(rng):
    l = concat_parts(rng, 2, 0)
    lo = rng.randint(-5, 5)
    return {"x": l[0], "r": l[1:], "ids": _ids(rng, _lead(rng), lo - 3, lo + 12), "lo": lo, "n": l[0].shape[0]}


@repeat(3)
def _map_mtake_bad(rng):
    inst = next(_map_mtake(rng))
    inst["n"] += 1
    return inst


# ----------------------------------------------------------------------------- pick

_MPICK_LHS = (f'(binary "masked_fill:0.0" (pick L (binary "masked_fill:0" (iscalar "sub" t lo) {_mask_text("t", "lo", "hi")})) '
              f'{_mask_text("t", "lo", "hi")})')


def _mpick_instance(rng):
    lead = _lead(rng)
    w = rng.randint(1, 9)
    lo = rng.randint(-4, 20)
    return {"L": tensor(rng, *lead, w), "t": _ids(rng, lead, lo - 6, lo + w + 6), "lo": lo, "hi": lo + w,
            "w": w, "k": len(lead) + 1}


@repeat(10)
def _mpick_intro(rng):
    return _mpick_instance(rng)


@repeat(4)
def _mpick_intro_bad(rng):
    inst = _mpick_instance(rng)
    inst["hi"] = inst["hi"] - 1
    return inst


@repeat(8)
def _mpick_concat(rng):
    lead = _lead(rng)
    d = len(lead)
    l = [tensor(rng, *lead, rng.randint(1, 5)) for _ in range(shard_count(rng))]
    total = sum(p.shape[-1] for p in l)
    lo = rng.randint(-5, 5)
    return {"l": l, "d": d, "t": _ids(rng, lead, lo - 4, lo + total + 4), "lo": lo}


@repeat(3)
def _mpick_concat_bad(rng):
    lead = [rng.randint(2, 4), rng.randint(2, 4)]
    l = [tensor(rng, n, lead[1], 3) for n in (1, 2)]
    return {"l": l, "d": 0, "t": _ids(rng, [3, lead[1]], 0, 3), "lo": 0}


@repeat(6)
def _map_mpick(rng):
    lead = _lead(rng)
    l = [tensor(rng, *lead, rng.randint(1, 5)) for _ in range(rng.randint(1, 6))]
    lo = rng.randint(-5, 5)
    return {"x": l[0], "r": l[1:], "t": _ids(rng, lead, lo - 3, lo + 15), "lo": lo, "w": l[0].shape[-1],
            "k": len(lead) + 1}


@repeat(3)
def _map_mpick_bad(rng):
    inst = next(_map_mpick(rng))
    inst["w"] += 1
    return inst


LEMMAS = [
    # a plain lookup is the masked lookup at offset 0 when every id is a row of the table
    Lemma("take-valid-masked", "(take W ids)", "(mtake W ids 0)", assumes=("valid_indices",),
          instances=_take_valid, rejects=_take_negative),
    # Megatron's vocab-parallel lookup: ids outside [lo, hi) read row 0, then their rows are zeroed.
    # Exact for every id.  The zeroing mask is the range mask viewed with a trailing 1 and its own
    # leading dims (mask[..., None]; ids [1, 4] viewed to [4, 1, 1] would broadcast to [4, 4, h]).
    Lemma("mtake-intro", _MTAKE_LHS, "(mtake W ids lo)",
          when=("(= (ndim W) 2)", "(= (dim W 0) (DLit n))", "(= hi (+ lo n))",
                "(= (dlen s) (+ (ndim ids) 1))", "(= (dlast s) (DLit 1))",
                f"(vpfx {_mask_text('ids', 'lo', 'hi')} s (ndim ids))"),
          instances=_mtake_intro, rejects=_mtake_intro_bad),
    Lemma("mtake-concat", "(mtake (concat l d) ids lo)", "(rsum (map_mtake l ids lo))",
          when=("(= d 0)",), instances=_mtake_concat, rejects=_mtake_concat_bad),
    Lemma("map-mtake-nil", "(map_mtake (Nil) ids lo)", "(Nil)",
          instances=lambda rng: [{"ids": _ids(rng, [3], -2, 4), "lo": 1}]),
    Lemma("map-mtake-cons", "(map_mtake (Cons x r) ids lo)", "(Cons (mtake x ids lo) (map_mtake r ids (+ lo n)))",
          when=("(= (dim x 0) (DLit n))",), instances=_map_mtake, rejects=_map_mtake_bad),
    # the cross-entropy target logit: the same masking, picking along the last dim
    Lemma("mpick-intro", _MPICK_LHS, "(mpick L t lo)",
          when=("(= k (ndim L))", "(= (dim L (- k 1)) (DLit w))", "(= hi (+ lo w))"),
          instances=_mpick_intro, rejects=_mpick_intro_bad),
    Lemma("mpick-concat", "(mpick (concat l d) t lo)", "(rsum (map_mpick l t lo))",
          when=("(= d (- (ndim (concat l d)) 1))",), instances=_mpick_concat, rejects=_mpick_concat_bad),
    Lemma("map-mpick-nil", "(map_mpick (Nil) t lo)", "(Nil)",
          instances=lambda rng: [{"t": _ids(rng, [3], -2, 4), "lo": 1}]),
    Lemma("map-mpick-cons", "(map_mpick (Cons x r) t lo)", "(Cons (mpick x t lo) (map_mpick r t (+ lo w)))",
          when=("(= k (ndim x))", "(= (dim x (- k 1)) (DLit w))"), instances=_map_mpick, rejects=_map_mpick_bad),
]


# ----------------------------------------------------------------------------- shapes

@repeat(3)
def _take_terms(rng):
    n = rng.randint(1, 5)
    w = tensor(rng, n, 3) if rng.random() < 0.5 else tensor(rng, n, 2, 3)
    return ("(take w i)", {"w": w, "i": _ids(rng, _lead(rng), 0, n)})


@repeat(3)
def _mtake_terms(rng):
    n = rng.randint(1, 5)
    return ("(mtake w i 2)", {"w": tensor(rng, n, 3), "i": _ids(rng, _lead(rng), -3, 9)})


@repeat(3)
def _pick_terms(rng):
    lead = _lead(rng)
    return ("(pick x i)", {"x": tensor(rng, *lead, 4), "i": _ids(rng, lead, 0, 4)})


@repeat(3)
def _mpick_terms(rng):
    lead = _lead(rng)
    return ("(mpick x i 1)", {"x": tensor(rng, *lead, 4), "i": _ids(rng, lead, -2, 9)})


@repeat(2)
def _iscalar_terms(rng):
    return ('(iscalar "sub" i 2)', {"i": _ids(rng, _lead(rng), -3, 9)})


@repeat(2)
def _cst_terms(rng):
    return ('(cst "0.0" (DCons (DLit 2) (DCons (DLit 3) (DNil))))', {})


def _lookup_shape(name):
    return Rule(f"shape-{name}", (
        f"(rule ((= y ({name} w i{' o' if name == 'mtake' else ''})) (= a (ndim w)) (= b (ndim i))) "
        f"((set (ndim y) (+ b (- a 1)))) :ruleset shapes)\n"
        f"(rule ((= y ({name} w i{' o' if name == 'mtake' else ''})) (= v (dim i k))) ((set (dim y k) v)) :ruleset shapes)\n"
        f"(rule ((= y ({name} w i{' o' if name == 'mtake' else ''})) (= v (dim w k)) (> k 0) (= b (ndim i))) "
        f"((set (dim y (+ b (- k 1))) v)) :ruleset shapes)"),
        check_terms=_take_terms if name == "take" else _mtake_terms)


def _index_shape(pattern, name, check):
    return Rule(name, (
        f"(rule ((= y {pattern}) (= n (ndim i))) ((set (ndim y) n)) :ruleset shapes)\n"
        f"(rule ((= y {pattern}) (= v (dim i k))) ((set (dim y k) v)) :ruleset shapes)"), check_terms=check)


RULES = [
    _lookup_shape("take"),
    _lookup_shape("mtake"),
    _index_shape("(pick x i)", "shape-pick", _pick_terms),
    _index_shape("(mpick x i o)", "shape-mpick", _mpick_terms),
    _index_shape("(iscalar op i c)", "shape-iscalar", _iscalar_terms),
    Rule("shape-cst", (
        "(rule ((= y (cst c s)) (= n (dlen s))) ((set (ndim y) n)) :ruleset shapes)\n"
        "(rule ((= y (cst c s)) (= v (dat s i))) ((set (dim y i) v)) :ruleset shapes)"), check_terms=_cst_terms),
]
