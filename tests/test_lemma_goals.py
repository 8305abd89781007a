"""egg-style start -> goal tests, per lemma family: a start term over leaves of given shapes is
saturated with the real library (lemma steps to a fixpoint), then the goal term is looked up: a
positive goal must be in the start's e-class, a negative one must not (after saturation, so that
"not reached" means "not derivable")."""
import pytest

from entangle_py.engine.egraph import STEP, Engine
from entangle_py.lemmas import load_library
from lemma_instances.common import dlist, ilist

LIB = load_library()
STEPS = 12


def _engine(shapes, assume=()):
    """Leaves of the given shapes, float32 unless given as (shape, dtype): the programs' inputs
    (given), as the checker marks them."""
    eng = Engine(LIB, assume=assume)
    for name, shape in shapes.items():
        shape, dtype = shape if isinstance(shape, tuple) else (shape, "float32")
        eng.add(f'(let ${name} (Gd "{name}"))', f"(given ${name})", f"(set (ndim ${name}) {len(shape)})",
                f'(set (dtype ${name}) "{dtype}")')
        for i, v in enumerate(shape):
            eng.add(f"(set (dim ${name} {i}) (DLit {v}))")
    return eng


def _leaves(text, shapes):
    for name in shapes:
        text = text.replace(f"{{{name}}}", f'(Gd "{name}")')
    return text


def saturate(eng):
    """Lemma steps until nothing changes; True when saturated within STEPS."""
    eng.settle()
    for _ in range(STEPS):
        out = eng.run1(STEP)
        updated = out[0].report.updated if out else True
        if eng.side_step():
            eng.settle()
            updated = True
        if not updated:
            return True
    return False


def proves(start, goal, shapes, assume=(), present=(), facts=()):
    """Whether the library rewrites ``start`` to ``goal``; {a} in a term is the leaf (Gd "a").
    ``present``: terms in the e-graph beside the start (what the ranks compute); ``facts``: egglog
    commands over the leaves (a rank's definitions, the checker's (peer a b))."""
    eng = _engine(shapes, assume)
    for i, t in enumerate(present):
        eng.add(f"(let $present{i} {_leaves(t, shapes)})")
    for f in facts:
        eng.add(_leaves(f, shapes))
    eng.add(f"(let $start {_leaves(start, shapes)})")
    done = saturate(eng)
    eng.add(f"(let $goal {_leaves(goal, shapes)})")   # an e-node already there is found, not made anew
    eng.flush()
    return eng.equal("$start", "$goal"), done


def cons(*xs):
    out = "(Nil)"
    for x in reversed(xs):
        out = f"(Cons {x} {out})"
    return out


def cat(d, *xs):
    return f"(concat {cons(*xs)} {d})"


def red(op, x, dims, keepdim):
    return f'(reduce "{op}" {x} {ilist(dims)} {keepdim})'


_MASK = '(binary "bitwise_or" (iscalar "lt" {{ids}} {lo}) (iscalar "ge" {{ids}} {hi}))'
_MSCATTER = (f'(scatter (binary "masked_fill:0.0" {{{{g}}}} (view {_MASK} {dlist([2, 3, 1])})) '
             f'(binary "masked_fill:0" (iscalar "sub" {{{{ids}}}} {{lo}}) {_MASK}) {{n}})')
# a vocab-parallel rank's local targets: its own (4 <= t < 8) shifted by 4, the others filled
_LOCAL = ('(binary "masked_fill:{fill}" (iscalar "sub" {{t}} 4) (unary "logical_not" '
          '(binary "bitwise_and" (iscalar "ge" {{t}} 4) (iscalar "lt" {{t}} 8))))')
_NLL = '(unary "neg" (tpick {L} {t} -100))'
# a mean loss: the sum of the targets' terms over their count (nll_loss_forward, reduction mean)
_XENT_MEAN = ('(binary "div" (reduce "sum" (unary "neg" (tpick {L} {t} -100)) (ICons 0 (INil)) 0) '
              '(tcount {L} {t} -100 "{n}"))')
# log_softmax of x along k as lowered, its log-sum-exp taken out of the pick
_SHIFT = '(binary "sub" {{x}} (reduce "amax" {{x}} (ICons {k} (INil)) 1))'
_PICK_LSM = ('(binary "sub" (pick ' + _SHIFT + ' {{t}}) (unary "log" (reduce "sum" (unary "exp" ' + _SHIFT
             + ') (ICons {k} (INil)) 0)))')
# torch.all over dim 1 (keepdim), and a rank's 1 - float(all of its columns)
_ALL = '(unary "logical_not" (reduce "amax" (unary "logical_not" {x}) (ICons 1 (INil)) 1))'
_ONE_MINUS = '(scalar "rsub" (unary "to_float32" ' + _ALL + ') "1.0")'
_ANY_FALSE = '(unary "to_float32" (reduce "amax" (unary "logical_not" {x}) (ICons 1 (INil)) 1))'
_ALL_RANKS = ('(scalar "rsub" (rmax (Cons ' + _ANY_FALSE.format(x="{a}") + " (Cons " + _ANY_FALSE.format(x="{b}")
              + ' (Nil)))) "1.0")')
# a rank's amin of its float mask (lowered -max(-x)), and 1 - max over ranks of 1 - that
_AMIN = '(unary "neg" (reduce "amax" (unary "neg" (unary "to_float32" {x})) (ICons 1 (INil)) 1))'
_ONE_MINUS_AMIN = '(scalar "rsub" ' + _AMIN + ' "1.0")'
_NEG_NOT = '(unary "neg" (unary "to_float32" (unary "logical_not" {x})))'
_NEG_ALL = '(unary "neg" (unary "to_float32" ' + _ALL + '))'
# a rank's loss sum with ignore index 0, and its count (t != 0).sum() cast to float32, as the float
# sum of its mask (what the count as lowered, the int64 sum of the int64 cast, is cast to float32)
_LOSS0 = '(reduce "sum" (unary "neg" (tpick {L} {t} 0)) (ICons 0 (INil)) 0)'
_COUNT0 = '(reduce "sum" (unary "to_float32" (iscalar "ne" {t} 0)) (ICons 0 (INil)) 0)'
# its normal form over rank parts of 4 rows in all: a part's loss sum over 4
_XENT_PART = '(scalar "div" (reduce "sum" (unary "neg" (pick {L} {t})) (ICons 0 (INil)) 0) "4.0")'


# the vocab-parallel loss's backward: a rank's gradient of its targets' columns [lo, hi) (Megatron)
_TMASK = '(binary "bitwise_or" (iscalar "lt" {{t}} {lo}) (iscalar "ge" {{t}} {hi}))'
_MPLACE = (f'(place (binary "masked_fill:0.0" {{{{v}}}} {_TMASK}) '
           f'(binary "masked_fill:0" (iscalar "sub" {{{{t}}}} {{lo}}) {_TMASK}) {{w}})')
# log_softmax(x) along the last dim k as lowered, its exp, and the softmax it is
_SUMEXP = '(reduce "sum" (unary "exp" ' + _SHIFT + ') (ICons {k} (INil)) 0)'
_LSM = '(binary "sub" ' + _SHIFT + ' (view (unary "log" ' + _SUMEXP + ') {s}))'
_SOFTMAX = '(binary "div" (unary "exp" ' + _SHIFT + ') (view ' + _SUMEXP + ' {s}))'
_SOFTMAX_MUL = ('(binary "mul" (view (binary "div" {c} ' + _SUMEXP.format(k=1) + ") " + dlist([4, 1])
                + ') (unary "exp" ' + _SHIFT.format(k=1) + "))")
_SOFTMAX_MUL_RAW = ('(binary "mul" (view (binary "div" {c} (reduce "sum" (unary "exp" {x}) (ICons 1 (INil)) 0)) '
                    + dlist([4, 1]) + ') (unary "exp" {x}))')

# a constant block (zeros unless c is given) of a shape, float32
_ZEROS = lambda shape, c="0.0": f'(cst "{c}" {dlist(shape)} "float32")'

# (family, start, goal, leaf shapes, assumptions)
def _put(base, c, vals):
    """``base`` with ``vals`` written at the rows where the ids {v} equal ``c``."""
    return f'(iput {base} (nonzero (iscalar "eq" {{v}} {c})) {vals})'


POSITIVE = [
    # rows looked up in a column-sharded table (index_select of x split along dim 1): each part's rows
    ("indexing", f"(take {cat(1, '{a}', '{b}')} {{i}})", cat(1, "(take {a} {i})", "(take {b} {i})"),
     {"a": [4, 2], "b": [4, 3], "i": ([5], "int64")}, ()),
    # a loss's target gradient with a negative ignore index, targets being classes: a placement,
    # the masked one of columns [0, 5), and its sum along the classes is the values
    ("indexing", "(tplace {v} {t} -100 5)", "(mplace {v} {t} 0 5)", {"v": [4], "t": ([4], "int64")},
     ("valid_indices", "no_ignored_targets")),
    ("indexing", red("sum", "(tplace {v} {t} -100 5)", [1], 0), "{v}", {"v": [4], "t": ([4], "int64")},
     ("valid_indices", "no_ignored_targets")),
    # ... the mean's division by the targets' count is one by their number
    ("indexing", '(binary "div" {g} (tcount {L} {t} -100 "4.0"))', '(scalar "div" {g} "4.0")',
     {"g": [4], "L": [4, 5], "t": ([4], "int64")}, ("valid_indices", "no_ignored_targets")),
    # a rank's masked placement (foreign targets zeroed at column 0) is its block of columns
    ("indexing", _MPLACE.format(lo=3, hi=5, w=2), "(mplace {v} {t} 3 2)", {"v": [4], "t": ([4], "int64")}, ()),
    # -(-x) = x
    ("elementwise", '(unary "neg" (unary "neg" {x}))', "{x}", {"x": [2, 3]}, ()),
    # a sum over ranks negated is the sum of the ranks' negations
    ("elementwise", f'(unary "neg" (rsum {cons("{a}", "{b}")}))', "(rsum " + cons('(unary "neg" {a})', '(unary "neg" {b})') + ")",
     {"a": [2, 3], "b": [2, 3]}, ()),
    # a loss sum over its targets' count is the sum over the int64 count (a program's (t != c).sum())
    ("reduction", '(binary "div" {x} (tcount {L} {t} 0 "4.0"))',
     '(binary "div" {x} (reduce "sum" (unary "to_int64" (iscalar "ne" {t} 0)) (ICons 0 (INil)) 0))',
     {"x": [], "L": [4, 5], "t": ([4], "int64")}, ()),
    # the sequential log_softmax's viewed log of its sum without keepdim, over column parts, is the log
    # of the ranks' all-reduced keepdim sums; its backward g + exp(y) (-s) is g - exp(y) s
    ("reduction", f'(view (unary "log" {red("sum", cat(1, "{a}", "{b}"), [1], 0)}) {dlist([4, 1])})',
     f'(unary "log" (rsum {cons(red("sum", "{a}", [1], 1), red("sum", "{b}", [1], 1))}))', {"a": [4, 2], "b": [4, 3]}, ()),
    ("elementwise", '(binary "add" {g} (binary "mul" {e} (unary "neg" {s})))', '(binary "sub" {g} (binary "mul" {e} {s}))',
     {"g": [4, 2], "e": [4, 2], "s": [4, 1]}, ()),
    # a vocab-parallel rank's nll_loss targets (its own shifted, the others at the ignore index) pick
    # and place its block of classes; lse - the sum over ranks is lse + the ranks' negations
    ("indexing", '(tpick {L} ' + _LOCAL.format(fill=-100) + ' -100)', "(mpick {L} {t} 4)",
     {"L": [3, 4], "t": ([3], "int64")}, ()),
    ("indexing", '(tplace {v} ' + _LOCAL.format(fill=-100) + ' -100 4)', "(mplace {v} {t} 4 4)",
     {"v": [3], "t": ([3], "int64")}, ()),
    ("elementwise", f'(binary "sub" {{a}} (rsum {cons("{b}", "{c}")}))',
     '(binary "add" {a} (rsum ' + cons('(unary "neg" {b})', '(unary "neg" {c})') + "))",
     {"a": [3], "b": [3], "c": [3]}, ()),
    # a cast to the operand's own dtype is the operand (count_nonzero of a bool mask)
    ("elementwise", '(reduce "sum" (unary "to_int64" (unary "to_bool" {m})) (ICons 1 (INil)) 0)',
     '(reduce "sum" (unary "to_int64" {m}) (ICons 1 (INil)) 0)', {"m": ([4, 3], "bool")}, ()),
    # exp of a log-softmax is the softmax; times a row factor, the factor over the sums times the exponentials
    ("reduction", '(unary "exp" ' + _LSM.format(k=1, s=dlist([4, 1])) + ")", _SOFTMAX.format(k=1, s=dlist([4, 1])),
     {"x": [4, 5]}, ()),
    ("reduction", '(binary "mul" ' + _SOFTMAX.format(k=1, s=dlist([4, 1])) + f" (view {{c}} {dlist([4, 1])}))",
     _SOFTMAX_MUL, {"x": [4, 5], "c": [4]}, ()),
    # elementwise: where over concats -- attention scores with heads split over ranks under a
    # causal mask and a 0-D fill; a loss masked on row shards; a size-1 mask; the fill first
    ("elementwise", f'(where {{m}} {cat(1, "{a}", "{b}")} {{f}})', cat(1, "(where {m} {a} {f})", "(where {m} {b} {f})"),
     {"m": [3, 3], "a": [1, 2, 3, 3], "b": [1, 1, 3, 3], "f": []}, ()),
    ("elementwise", f'(where {cat(0, "{v0}", "{v1}")} {cat(0, "{l0}", "{l1}")} {{z}})',
     cat(0, "(where {v0} {l0} {z})", "(where {v1} {l1} {z})"), {"v0": [2], "v1": [3], "l0": [2], "l1": [3], "z": []}, ()),
    ("elementwise", f'(where {{m}} {cat(0, "{a}", "{b}")} {cat(0, "{c}", "{e}")})',
     cat(0, "(where {m} {a} {c})", "(where {m} {b} {e})"), {"m": [1, 3], "a": [2, 3], "b": [1, 3], "c": [2, 3], "e": [1, 3]}, ()),
    ("elementwise", f'(where {cat(0, "{v0}", "{v1}")} {{f}} {cat(0, "{l0}", "{l1}")})',
     cat(0, "(where {v0} {f} {l0})", "(where {v1} {f} {l1})"), {"v0": [2], "v1": [3], "l0": [2], "l1": [3], "f": [1]}, ()),
    # arith: the mean of two ranks' means of n/2 rows each, (s / (n/2)) / 2, is s / n
    ("arith", '(scalar "div" (scalar "div" {a} "4.0") "2.0")', '(scalar "div" {a} "8.0")', {"a": [3]}, ()),
    # movement: a slice of a concat inside the first part is a slice of the first part; past it, of the second
    ("movement", f"(slice {cat(0, '{a}', '{b}')} 0 (DLit 1) (DLit 3))", "(slice {a} 0 (DLit 1) (DLit 3))",
     {"a": [4, 2], "b": [3, 2]}, ()),
    ("movement", f"(slice {cat(0, '{a}', '{b}')} 0 (DLit 5) (DLit 7))", "(slice {b} 0 (DLit 1) (DLit 3))",
     {"a": [4, 2], "b": [3, 2]}, ()),
    # a slice of a zero-padded tensor inside the tensor (a padded weight's gradient, its real rows)
    ("movement", "(slice (zpad {a} 0 4 0) 0 (DLit 4) (DLit 8))", "{a}", {"a": [4, 2]}, ()),
    # ... one reaching into the padding is the padded slice of it it covers
    ("movement", "(slice (zpad {a} 0 0 1) 0 (DLit 3) (DLit 6))", "(zpad (slice {a} 0 (DLit 3) (DLit 5)) 0 0 1)",
     {"a": [5, 2]}, ()),
    # two padded blocks added, adjacent (the backward of two slices of one tensor): the padded concat
    ("movement", '(binary "add" (zpad {b} 1 3 1) (zpad {a} 1 0 3))', "(zpad " + cat(1, "{a}", "{b}") + " 1 0 1)",
     {"a": [4, 3], "b": [4, 2]}, ()),
    ("movement", '(binary "add" (zpad {b} 2 8 0) (zpad {a} 2 0 8))', cat(2, "{a}", "{b}"),
     {"a": [4, 3, 8], "b": [4, 3, 8]}, ()),
    ("movement", f"(transpose {cat(1, '{a}', '{b}')} 0 1)", cat(0, "(transpose {a} 0 1)", "(transpose {b} 0 1)"),
     {"a": [4, 2], "b": [4, 3]}, ()),
    # the gradient of a concat of slices of m (rows 0, 3, then 1-2 accumulated): m itself
    ("movement", '(binary "add" (binary "add" (zpad (slice {m} 0 (DLit 0) (DLit 1)) 0 0 3) '
     '(zpad (slice (slice {m} 0 (DLit 1) (DLit 4)) 0 (DLit 2) (DLit 3)) 0 3 0)) '
     '(zpad (slice (slice {m} 0 (DLit 1) (DLit 4)) 0 (DLit 0) (DLit 2)) 0 1 1))', "{m}", {"m": [4, 3]}, ()),
    ("movement", cat(0, "(slice {a} 0 (DLit 0) (DLit 2))", "(slice {a} 0 (DLit 2) (DLit 5))"), "{a}", {"a": [5, 2]}, ()),
    # a 0-D divisor of an expand divides before it (a mean loss's gradient, over a summed count)
    ("movement", f'(binary "div" (expand {{g}} {dlist([8])}) {{c}})', f'(expand (binary "div" {{g}} {{c}}) {dlist([8])})',
     {"g": [], "c": []}, ()),
    # a pad along another dim than the concat axis pads each part (a selected row's gradient of a
    # hidden-sharded tensor)
    ("movement", f"(zpad {cat(1, '{a}', '{b}')} 0 1 2)", cat(1, "(zpad {a} 0 1 2)", "(zpad {b} 0 1 2)"),
     {"a": [1, 2], "b": [1, 3]}, ()),
    # an expand keeping the concat axis (a mean's gradient over sequence-sharded rows) expands each part
    ("movement", f"(expand {cat(0, '{a}', '{b}')} {dlist([3, 4])})",
     cat(0, f"(expand {{a}} {dlist([1, 4])})", f"(expand {{b}} {dlist([2, 4])})"), {"a": [1, 1], "b": [2, 1]}, ()),
    # linalg: column parallel, and row parallel (the inner dims line up)
    ("linalg", f"(mm {{x}} {cat(1, '{w0}', '{w1}')})", cat(1, "(mm {x} {w0})", "(mm {x} {w1})"),
     {"x": [2, 3], "w0": [3, 4], "w1": [3, 5]}, ()),
    ("linalg", f"(mm {cat(1, '{x0}', '{x1}')} {cat(0, '{w0}', '{w1}')})",
     f"(rsum {cons('(mm {x0} {w0})', '(mm {x1} {w1})')})",
     {"x0": [2, 3], "x1": [2, 2], "w0": [3, 4], "w1": [2, 4]}, ()),
    # linalg: a batched product with its contraction dim split (a context-parallel K/V gradient)
    ("linalg", f"(bmm {cat(2, '{x0}', '{x1}')} {cat(1, '{w0}', '{w1}')})",
     f"(rsum {cons('(bmm {x0} {w0})', '(bmm {x1} {w1})')})",
     {"x0": [2, 4, 3], "x1": [2, 4, 2], "w0": [2, 3, 5], "w1": [2, 2, 5]}, ()),
    # elementwise: a unary op of a concat is the concat of the op on the parts
    ("elementwise", f'(unary "exp" {cat(0, "{a}", "{b}")})', cat(0, '(unary "exp" {a})', '(unary "exp" {b})'),
     {"a": [2, 3], "b": [1, 3]}, ()),
    ("elementwise", f'(binary "add" {cat(0, "{a}", "{b}")} {cat(0, "{c}", "{e}")})',
     cat(0, '(binary "add" {a} {c})', '(binary "add" {b} {e})'),
     {"a": [2, 3], "b": [1, 3], "c": [2, 3], "e": [1, 3]}, ()),
    # two sums over ranks added: the sum over ranks of the ranks' adds
    ("elementwise", f'(binary "add" (rsum {cons("{a}", "{b}")}) (rsum {cons("{c}", "{e}")}))',
     "(rsum " + cons('(binary "add" {a} {c})', '(binary "add" {b} {e})') + ")",
     {"a": [2, 3], "b": [2, 3], "c": [2, 3], "e": [2, 3]}, ()),
    # reduction: a sum over the concat dim is the rsum of the parts' sums; softmax along another dim
    ("reduction", red("sum", cat(0, "{a}", "{b}"), [0], 0),
     f"(rsum {cons(red('sum', '{a}', [0], 0), red('sum', '{b}', [0], 0))})",
     {"a": [2, 3], "b": [1, 3]}, ()),
    ("reduction", f"(softmax {cat(0, '{a}', '{b}')} 1)", cat(0, "(softmax {a} 1)", "(softmax {b} 1)"),
     {"a": [2, 3], "b": [1, 3]}, ()),
    # a data-parallel bias gradient: the group's mean of the ranks' sums is the sum of the scaled rows
    ("reduction", f'(scalar "div" {red("sum", "{a}", [0], 0)} "2.0")', red("sum", '(scalar "div" {a} "2.0")', [0], 0),
     {"a": [4, 3]}, ()),
    # top-k of row shards (expert routing): the rows of the concat are the parts' rows
    ("reduction", f'(rowwise "topk:1:1:1:1" {cat(0, "{a}", "{b}")})',
     cat(0, '(rowwise "topk:1:1:1:1" {a})', '(rowwise "topk:1:1:1:1" {b})'), {"a": [2, 3], "b": [1, 3]}, ()),
    # a sum over the rows of a [b*s, h] view of x is the sum of x over b and s, viewed
    ("reduction", red("sum", f"(view {{x}} {dlist([6, 4])})", [0], 1),
     f"(view {red('sum', '{x}', [0, 1], 1)} {dlist([1, 4])})", {"x": [2, 3, 4]}, ()),
    # collective: a sum over one rank is its value
    ("collective", f"(rsum {cons('{a}')})", "{a}", {"a": [2, 3]}, ()),
    # a rank's block of a reduce-scatter of [chunk 0; chunk 1] (dim-1 chunks cat along dim 0) is the sum of its chunk
    ("collective", "(slice (rsum " + cons(cat(0, "(slice {u0} 1 (DLit 0) (DLit 2))", "(slice {u0} 1 (DLit 2) (DLit 4))"),
                                          cat(0, "(slice {u1} 1 (DLit 0) (DLit 2))", "(slice {u1} 1 (DLit 2) (DLit 4))"))
     + ") 0 (DLit 2) (DLit 4))",
     "(rsum " + cons("(slice {u0} 1 (DLit 2) (DLit 4))", "(slice {u1} 1 (DLit 2) (DLit 4))") + ")",
     {"u0": [2, 4, 3], "u1": [2, 4, 3]}, ()),
    # indexing: a masked lookup in a table split by rows is the rsum of the parts' lookups at their offsets
    ("indexing", f"(mtake {cat(0, '{w0}', '{w1}')} {{ids}} 0)", f"(rsum {cons('(mtake {w0} {ids} 0)', '(mtake {w1} {ids} 3)')})",
     {"w0": [3, 4], "w1": [2, 4], "ids": [5]}, ()),
    # ... and with valid ids (an assumption), a plain lookup is too
    ("indexing", f"(take {cat(0, '{w0}', '{w1}')} {{ids}})", f"(rsum {cons('(mtake {w0} {ids} 0)', '(mtake {w1} {ids} 3)')})",
     {"w0": [3, 4], "w1": [2, 4], "ids": [5]}, ("valid_indices",)),
    # the gradient of a lookup with valid ids (an assumption) is the masked scatter of rows [0, n);
    # a rank's masked lookup backward is its block of rows of it
    ("indexing", "(scatter {g} {ids} 5)", "(mscatter {g} {ids} 0 5)", {"g": [2, 3, 4], "ids": [2, 3]},
     ("valid_indices",)),
    ("indexing", _MSCATTER.format(lo=3, hi=5, n=2), "(mscatter {g} {ids} 3 2)", {"g": [2, 3, 4], "ids": [2, 3]}, ()),
    # movement: an expand to x's own shape is x; a broadcast dim expanded to 4 beside a rank's
    # expand to 1 there is four of those (MQA, one query head per rank)
    ("movement", "(expand {x} (DCons (DLit 2) (DCons (DLit 1) (DCons (DLit 3) (DNil)))))", "{x}", {"x": [2, 1, 3]}, ()),
    # reduction: a float sum kept over a size-1 dim is its operand (that expand's backward)
    ("reduction", red("sum", "{x}", [1], 1), "{x}", {"x": [2, 1, 3]}, ()),
    # movement: a concat as the last part is flattened into its parent
    ("movement", cat(0, "{a}", cat(0, "{b}", "{c}")), cat(0, "{a}", "{b}", "{c}"), {"a": [1, 2], "b": [2, 2], "c": [3, 2]}, ()),
    # ... and rows of that block (the table around a padding_idx's zero row) are a block of their own
    ("indexing", "(slice (mscatter {g} {ids} 3 4) 0 (DLit 1) (DLit 3))", "(mscatter {g} {ids} 4 2)",
     {"g": [2, 3, 4], "ids": [2, 3]}, ()),
    # positions: a rank's local positions moved by its offset, next to the first rank's, are the whole run
    ("positions", cat(0, "(arange 0 1 (DLit 3))", '(iscalar "add" (arange 0 1 (DLit 3)) 3)'), "(arange 0 1 (DLit 6))",
     {}, ()),
    # elementwise: key positions [1, S] against the ranks' query positions (a concat along dim 0)
    ("elementwise", f'(binary "gt" {{k}} {cat(0, "{a}", "{b}")})', cat(0, '(binary "gt" {k} {a})', '(binary "gt" {k} {b})'),
     {"k": [1, 6], "a": [2, 1], "b": [4, 1]}, ()),
    # linalg: the rows of a batched product (context parallelism's queries against gathered keys)
    ("linalg", f"(bmm {cat(1, '{a}', '{b}')} {{w}})", cat(1, "(bmm {a} {w})", "(bmm {b} {w})"),
     {"a": [2, 3, 4], "b": [2, 1, 4], "w": [2, 4, 5]}, ()),
    # a loss's target pick with a negative ignore index, targets being classes: the masked pick at 0
    ("indexing", "(tpick {L} {t} -100)", "(mpick {L} {t} 0)", {"L": [4, 5], "t": [4]}, ("valid_indices", "no_ignored_targets")),
    # ... also where the targets are an input's values moved (a rank's slice of them, viewed)
    ("indexing", f"(tpick {{L}} (view (slice {{t}} 0 (DLit 2) (DLit 6)) {dlist([4])}) -100)",
     f"(pick {{L}} (view (slice {{t}} 0 (DLit 2) (DLit 6)) {dlist([4])}))", {"L": [4, 5], "t": ([8], "int64")},
     ("valid_indices", "no_ignored_targets")),
    # ... and its mean: the sum over the count of targets is the sum over their number
    ("indexing", f'(binary "div" {red("sum", _NLL, [0], 0)} (tcount {{L}} {{t}} -100 "4.0"))',
     f'(scalar "div" {red("sum", _NLL, [0], 0)} "4.0")', {"L": [4, 5], "t": [4]}, ("valid_indices", "no_ignored_targets")),
    # the pick of log_softmax: the log-sum-exp, constant along the picked dim, comes out
    ("indexing", f'(pick (binary "sub" {{a}} (view {{y}} {dlist([4, 1])})) {{t}})', '(binary "sub" (pick {a} {t}) {y})',
     {"a": [4, 5], "y": [4], "t": [4]}, ()),
    ("elementwise", '(unary "neg" (binary "sub" {a} {b}))', '(binary "sub" {b} {a})', {"a": [2, 3], "b": [3]}, ()),
    # the 1/n of a mean's gradient moves into the gradient operand of a product / pointwise backward op
    ("elementwise", '(scalar "div" (binary "tanh_backward" {g} {y}) "2.0")',
     '(binary "tanh_backward" (scalar "div" {g} "2.0") {y})', {"g": [2, 3], "y": [2, 3]}, ()),
    # ... relu's (data parallelism's 1/W carried down a deeper model's backward)
    ("elementwise", '(scalar "div" (binary "threshold_backward:0.0" {g} {y}) "2.0")',
     '(binary "threshold_backward:0.0" (scalar "div" {g} "2.0") {y})', {"g": [2, 3], "y": [2, 3]}, ()),
    # ... and into the left operand of a matrix product (a weight gradient averaged over ranks)
    ("linalg", '(scalar "div" (mm {a} {b}) "2.0")', '(mm (scalar "div" {a} "2.0") {b})', {"a": [2, 3], "b": [3, 4]}, ()),
    # movement: g / n expanded over the batch, times x of that shape, is g / n times x (broadcast)
    ("movement", f'(binary "mul" (scalar "div" (expand {{g}} {dlist([4, 6])}) "24.0") {{x}})',
     '(binary "mul" (scalar "div" {g} "24.0") {x})', {"g": [], "x": [4, 6]}, ()),
    # ... on either side
    ("movement", f'(binary "tanh_backward" {{x}} (expand {{g}} {dlist([4, 6])}))', '(binary "tanh_backward" {x} {g})',
     {"g": [1, 6], "x": [4, 6]}, ()),
    # gradient accumulation: a micro-batch sum over a global token count (assumed non-zero) is the
    # sum of the parts' quotients; a sum over a list of two is an add; an accumulator at 0.0 drops
    ("elementwise", f'(binary "div" (rsum {cons("{a}", "{b}")}) {{n}})',
     "(rsum " + cons('(binary "div" {a} {n})', '(binary "div" {b} {n})') + ")", {"a": [], "b": [], "n": []},
     ("nonzero_divisors",)),
    # a product with a sum over ranks (values assumed finite) is the sum of the products, either side
    ("elementwise", f'(binary "mul" (rsum {cons("{a}", "{b}")}) {{y}})',
     "(rsum " + cons('(binary "mul" {a} {y})', '(binary "mul" {b} {y})') + ")", {"a": [2, 3], "b": [2, 3], "y": [3]},
     ("finite_values",)),
    ("elementwise", f'(binary "mul" {{y}} (rsum {cons("{a}", "{b}")}))',
     "(rsum " + cons('(binary "mul" {y} {a})', '(binary "mul" {y} {b})') + ")", {"a": [2, 3], "b": [2, 3], "y": [2, 1]},
     ("finite_values",)),
    # two micro-batch gradients accumulated in reverse order (b + a) are the sum over the list (a, b)
    ("elementwise", f"(rsum {cons('{a}', '{b}')})", '(binary "add" {b} {a})', {"a": [1, 3], "b": [1, 3]}, ()),
    ("elementwise", '(scalar "add" {a} "0.0")', "{a}", {"a": [3]}, ()),
    # a constant added to row-sharded x (x + full_like(x, c)) is each rank's block plus its block of
    # the constant, in either order; a constant of size 1 on the axis is broadcast as it is
    ("elementwise", f'(binary "add" {cat(0, "{a}", "{b}")} {_ZEROS([4, 3], "0.1")})',
     cat(0, f'(binary "add" {{a}} {_ZEROS([1, 3], "0.1")})', f'(binary "add" {{b}} {_ZEROS([3, 3], "0.1")})'),
     {"a": [1, 3], "b": [3, 3]}, ()),
    ("elementwise", f'(binary "sub" {_ZEROS([4], "0.1")} {cat(1, "{a}", "{b}")})',
     cat(1, f'(binary "sub" {_ZEROS([2], "0.1")} {{a}})', f'(binary "sub" {_ZEROS([2], "0.1")} {{b}})'),
     {"a": [3, 2], "b": [3, 2]}, ()),
    # a rank's block of an averaged reduce-scatter is the block of the average
    ("movement", '(scalar "div" (transpose (slice {x} 0 (DLit 0) (DLit 2)) 0 1) "2.0")',
     '(transpose (slice (scalar "div" {x} "2.0") 0 (DLit 0) (DLit 2)) 0 1)', {"x": [4, 3]}, ()),
    # a transpose of a block of a sum over ranks is the block of the ranks' transposes, along the dim
    # the block's moves to
    ("movement", f"(transpose (slice (rsum {cons('{x}', '{y}')}) 0 (DLit 1) (DLit 3)) 0 1)",
     f"(slice (rsum {cons('(transpose {x} 0 1)', '(transpose {y} 0 1)')}) 1 (DLit 1) (DLit 3))",
     {"x": [4, 3], "y": [4, 3]}, ()),
    ("movement", f"(transpose (slice (rsum {cons('{x}', '{y}')}) 2 (DLit 1) (DLit 3)) 1 0)",
     f"(slice (rsum {cons('(transpose {x} 1 0)', '(transpose {y} 1 0)')}) 2 (DLit 1) (DLit 3))",
     {"x": [4, 3, 5], "y": [4, 3, 5]}, ()),
    # a reduce-scatter along dim 1 (transposed to dim 0, reduce-scattered, transposed back): the
    # ranks' blocks concatenated along dim 1 are the sum over ranks (a context-parallel K gradient)
    ("movement", cat(1, *(f"(transpose (slice (rsum {cons('(transpose {a} 0 1)', '(transpose {b} 0 1)')}) 0 "
                          f"(DLit {lo}) (DLit {lo + 3})) 0 1)" for lo in (0, 3))),
     f"(rsum {cons('{a}', '{b}')})", {"a": [2, 6, 5], "b": [2, 6, 5]}, ()),
    # linalg: a batched product of query heads and KV heads both sharded along the heads is the
    # parts' products (bmm-matmul then meets a rank's own bmm of them)
    ("linalg", f"(bmm {cat(0, '{a}', '{b}')} {cat(0, '{c}', '{e}')})", cat(0, "(matmul {a} {c})", "(matmul {b} {e})"),
     {"a": [2, 3, 2], "b": [2, 3, 2], "c": [2, 2, 3], "e": [2, 2, 3]}, ()),
    # ... and with one expert a rank, a batch of one: the rank's product of the 2-D views, viewed
    # back, is the batched product (the parts' matmul above)
    ("linalg", f"(view (mm (view {{a}} {dlist([3, 2])}) (view {{c}} {dlist([2, 4])})) {dlist([1, 3, 4])})",
     "(matmul {a} {c})", {"a": [1, 3, 2], "c": [1, 2, 4]}, ()),
    # movement: an all-gather along dim 2 (moved to dim 0, gathered, moved back) is the concat along dim 2
    ("movement", f"(permute {cat(0, f'(permute {{a}} {ilist([2, 0, 1])})', f'(permute {{b}} {ilist([2, 0, 1])})')} "
                 f"{ilist([1, 2, 0])})", cat(2, "{a}", "{b}"), {"a": [4, 2, 3], "b": [4, 2, 3]}, ()),
    # ... and a reduce-scatter along dim 2 written as permute(2, 1, 0) (a transpose) both ways: the
    # rank's block of the sum, its slice along dim 2
    ("movement", "(transpose (slice (rsum " + cons("(transpose {a} 0 2)", "(transpose {b} 0 2)") + ") 0 (DLit 2) (DLit 4)) 0 2)",
     "(slice (rsum " + cons("{a}", "{b}") + ") 2 (DLit 2) (DLit 4))", {"a": [2, 2, 4], "b": [2, 2, 4]}, ()),
    # the backward of a block taken between two movedims: the padded tangent moved back is padded along dim 2
    ("movement", f"(permute (zpad (permute {{g}} {ilist([2, 0, 1])}) 0 2 0) {ilist([1, 2, 0])})", "(zpad {g} 2 2 0)",
     {"g": [2, 2, 2]}, ()),
    # a rank's rows between zero blocks (cat of new_zeros, x, new_zeros), all-reduced, are the concat of the rows
    ("movement", "(rsum " + cons(cat(0, _ZEROS([0, 3]), "{a}", _ZEROS([2, 3])), cat(0, _ZEROS([2, 3]), "{b}", _ZEROS([0, 3]))) + ")",
     cat(0, "{a}", "{b}"), {"a": [2, 3], "b": [2, 3]}, ()),
    ("movement", cat(1, _ZEROS([2, 1]), "{a}"), "(zpad {a} 1 1 0)", {"a": [2, 3]}, ()),
    # positions: the ranks' masks of their blocks of positions (gt(positions, 2)) are the whole mask
    ("positions", cat(0, '(iscalar "gt" (slice (arange 0 1 (DLit 6)) 0 (DLit 0) (DLit 3)) 2)',
                      '(iscalar "gt" (slice (arange 0 1 (DLit 6)) 0 (DLit 3) (DLit 6)) 2)'),
     '(iscalar "gt" (arange 0 1 (DLit 6)) 2)', {}, ()),
    # a pick of row parts (a loss's log-probabilities and targets sharded along the batch)
    ("reduction", f"(pick {cat(0, '{a}', '{b}')} {cat(0, '{s}', '{u}')})", cat(0, "(pick {a} {s})", "(pick {b} {u})"),
     {"a": [2, 5], "b": [1, 5], "s": ([2], "int64"), "u": ([1], "int64")}, ()),
    # a placement of row parts (topk's values' gradient, routing scores sharded along the tokens)
    ("reduction", f"(place {cat(0, '{a}', '{b}')} {cat(0, '{s}', '{u}')} 4)", cat(0, "(place {a} {s} 4)", "(place {b} {u} 4)"),
     {"a": [2], "b": [3], "s": ([2], "int64"), "u": ([3], "int64")}, ()),
    # data-parallel cross-entropy: the mean over two ranks of their mean losses over 2 rows each, and
    # the mean loss over the 4 rows, are both the sum over ranks of their loss sums over 4 (equal
    # counts, no target ignored: classes, ignore index -100)
    ("reduction", f'(scalar "div" (rsum {cons(_XENT_MEAN.format(L="{a}", t="{s}", n="2.0"), _XENT_MEAN.format(L="{b}", t="{u}", n="2.0"))}) "2.0")',
     f"(rsum {cons(_XENT_PART.format(L='{a}', t='{s}'), _XENT_PART.format(L='{b}', t='{u}'))})",
     {"a": [2, 5], "b": [2, 5], "s": ([2], "int64"), "u": ([2], "int64")}, ("valid_indices", "no_ignored_targets")),
    ("reduction", _XENT_MEAN.format(L=cat(0, "{a}", "{b}"), t=cat(0, "{s}", "{u}"), n="4.0"),
     f"(rsum {cons(_XENT_PART.format(L='{a}', t='{s}'), _XENT_PART.format(L='{b}', t='{u}'))})",
     {"a": [2, 5], "b": [2, 5], "s": ([2], "int64"), "u": ([2], "int64")}, ("valid_indices", "no_ignored_targets")),
    # torch.all over a sharded dim: all of the concat, and the ranks' 1 - max(1 - float(all_r)), are
    # both 1 - the max over ranks of float(any element false)
    ("reduction", f'(unary "to_float32" {_ALL.format(x=cat(1, "{a}", "{b}"))})', _ALL_RANKS,
     {"a": ([4, 2], "bool"), "b": ([4, 3], "bool")}, ()),
    ("reduction", f'(scalar "rsub" (rmax {cons(_ONE_MINUS.format(x="{a}"), _ONE_MINUS.format(x="{b}"))}) "1.0")',
     _ALL_RANKS, {"a": ([4, 2], "bool"), "b": ([4, 3], "bool")}, ()),
    ("elementwise", '(scalar "rsub" (unary "to_float16" (unary "logical_not" {a})) "1.0")', '(unary "to_float16" {a})',
     {"a": ([3], "bool")}, ()),
    # ... and so is the ranks' 1 - max(1 - amin(float(x_r))) (the min of a float mask is all's cast)
    ("reduction", f'(scalar "rsub" (rmax {cons(_ONE_MINUS_AMIN.format(x="{a}"), _ONE_MINUS_AMIN.format(x="{b}"))}) "1.0")',
     _ALL_RANKS, {"a": ([4, 2], "bool"), "b": ([4, 3], "bool")}, ()),
    # ... and so is the ranks' -max(-float(all_r)) (a min over ranks written with negations)
    ("reduction", f'(unary "to_float32" {_ALL.format(x=cat(1, "{a}", "{b}"))})',
     f'(unary "neg" (rmax {cons(_NEG_ALL.format(x="{a}"), _NEG_ALL.format(x="{b}"))}))',
     {"a": ([4, 2], "bool"), "b": ([4, 3], "bool")}, ()),
    # a mask's count cast to bfloat16 is the bfloat16 sum of the mask, up to 256 elements
    ("reduction", '(unary "to_bfloat16" (reduce "sum" (unary "to_int64" {m}) (ICons 0 (INil)) 0))',
     '(reduce "sum" (unary "to_bfloat16" {m}) (ICons 0 (INil)) 0)', {"m": ([256], "bool")}, ()),
    # the target's log-probability without the row max subtracted (a vocab-parallel loss), assuming
    # exp does not overflow
    ("reduction", _PICK_LSM.format(k=1), '(binary "sub" (pick {x} {t}) (unary "log" (reduce "sum" (unary "exp" {x}) (ICons 1 (INil)) 0)))',
     {"x": [4, 5], "t": ([4], "int64")}, ("no_exp_overflow",)),
    # a row factor over the sums times the exponentials, shifted by the row max or not (a
    # vocab-parallel loss's backward scaling its shard's raw exponentials), assuming exp does not overflow
    ("reduction", _SOFTMAX_MUL, _SOFTMAX_MUL_RAW, {"x": [4, 5], "c": [4]}, ("no_exp_overflow",)),
    # zeros: padded, they are the zeros of the padded shape; a zero part of a sum over ranks (a rank
    # holding none of a gradient: broadcast's backward) drops out, first or second, of a pair;
    # x plus zeros of its shape is x; an accumulator adding the last two terms of a sum
    ("movement", f"(zpad {_ZEROS([2, 3])} 0 1 2)", _ZEROS([5, 3]), {}, ()),
    ("movement", f'(zpad {_ZEROS([2, 3]).replace("float32", "int64").replace("0.0", "0")} 1 0 1)',
     f'{_ZEROS([2, 4]).replace("float32", "int64").replace("0.0", "0")}', {}, ()),
    ("collective", f"(rsum {cons('{a}', _ZEROS([2, 3]))})", "{a}", {"a": [2, 3]}, ()),
    ("collective", f"(rsum {cons(_ZEROS([2, 3]), '{a}')})", "{a}", {"a": [2, 3]}, ()),
    ("elementwise", f'(binary "add" {{a}} {_ZEROS([2, 3])})', "{a}", {"a": [2, 3]}, ()),
    ("elementwise", f'(binary "add" {_ZEROS([2, 3])} {{a}})', "{a}", {"a": [2, 3]}, ()),
    ("elementwise", f'(binary "add" {{x}} (rsum {cons("{a}", "{b}")}))', '(binary "add" (binary "add" {x} {a}) {b})',
     {"x": [2], "a": [2], "b": [2]}, ()),
    # Megatron's nonzero dispatch: writes into zeros at the rows of three ids are the sum of each
    # write into zeros; a read at other ids' rows skips a write
    ("indexing", _put(_put(_put(_ZEROS([4, 3]), 0, "{x}"), 1, "{y}"), 2, "{w}"),
     f'(rsum (Cons {_put(_ZEROS([4, 3]), 0, "{x}")} (Cons {_put(_ZEROS([4, 3]), 1, "{y}")} '
     f'(Cons {_put(_ZEROS([4, 3]), 2, "{w}")} (Nil)))))',
     {"v": ([4], "int64"), "x": [1, 3], "y": [1, 3], "w": [1, 3]}, ()),
    ("indexing", f'(take {_put("{g}", 1, "{y}")} (nonzero (iscalar "eq" {{v}} 0)))', '(take {g} (nonzero (iscalar "eq" {v} 0)))',
     {"v": ([4], "int64"), "g": [4, 3], "y": [1, 3]}, ()),
    # labels padded as ids[:, :1] * 0 - 100: a constant -100
    ("elementwise", f'(iscalar "sub" {_ZEROS([4, 1], "0").replace("float32", "int64")} 100)',
     _ZEROS([4, 1], "-100").replace("float32", "int64"), {}, ()),
    # index_select's backward of a column-sharded table: the parts' tables side by side
    ("indexing", f"(scatter {cat(1, '{a}', '{b}')} {{i}} 5)", cat(1, "(scatter {a} {i} 5)", "(scatter {b} {i} 5)"),
     {"a": [3, 2], "b": [3, 1], "i": ([3], "int64")}, ()),
    # Hugging Face's MoE: three experts' rows index_add-ed into one buffer are one sum, in order
    ("indexing", '(binary "add" (binary "add" (scatter {a} {i} 6) (scatter {b} {j} 6)) (scatter {c} {k} 6))',
     "(rsum (Cons (scatter {a} {i} 6) (Cons (scatter {b} {j} 6) (Cons (scatter {c} {k} 6) (Nil)))))",
     {"a": [2, 3], "b": [1, 3], "c": [4, 3], "i": ([2], "int64"), "j": ([1], "int64"), "k": ([4], "int64")}, ()),
]

# the reduction class over a sharded dim (lemmas/reduction.py): a norm's p-th power is the sum over
# ranks of the parts' sums of |x|^p; a logsumexp is the log-sum-exp over ranks of the parts'
_SQ = '(reduce "sum" (scalar "pow" (unary "abs" {x}) "{p}") (ICons 0 (ICons 1 (INil))) 0)'
POSITIVE += [
    ("reduction", f'(scalar "pow" {red("norm:2.0", cat(0, "{a}", "{b}"), [0, 1], 0)} "2.0")',
     "(rsum " + cons(_SQ.format(x="{a}", p="2.0"), _SQ.format(x="{b}", p="2.0")) + ")", {"a": [3, 4], "b": [1, 4]}, ()),
    ("reduction", f'(scalar "pow" {red("norm:3.0", cat(1, "{a}", "{b}"), [0, 1], 0)} "3.0")',
     "(rsum " + cons(_SQ.format(x="{a}", p="3.0"), _SQ.format(x="{b}", p="3.0")) + ")", {"a": [3, 2], "b": [3, 1]}, ()),
    ("reduction", red("logsumexp", cat(1, "{a}", "{b}"), [1], 0),
     "(rlse " + cons(red("logsumexp", "{a}", [1], 0), red("logsumexp", "{b}", [1], 0)) + ")", {"a": [3, 2], "b": [3, 5]}, ()),
    # the ranks' logsumexps gathered (unsqueezed, concatenated) and reduced again meet it
    ("reduction", red("logsumexp", cat(0, f'(view {{a}} {dlist([1, 3])})', f'(view {{b}} {dlist([1, 3])})'), [0], 0),
     "(rlse " + cons("{a}", "{b}") + ")", {"a": [3], "b": [3]}, ()),
    ("reduction", red("norm:inf", cat(0, "{a}", "{b}"), [0], 1),
     "(rmax " + cons(red("amax", '(unary "abs" {a})', [0], 1), red("amax", '(unary "abs" {b})', [0], 1)) + ")",
     {"a": [3, 2], "b": [1, 2]}, ()),
]

NEGATIVE = [
    # a norm over a sharded dim is not the sum of the parts' norms, nor is the square of a 3-norm
    # the sum of the parts' sums of squares; a logsumexp is not the sum of the parts'
    ("reduction", red("norm:2.0", cat(0, "{a}", "{b}"), [0, 1], 0),
     "(rsum " + cons(red("norm:2.0", "{a}", [0, 1], 0), red("norm:2.0", "{b}", [0, 1], 0)) + ")", {"a": [3, 4], "b": [1, 4]}, ()),
    ("reduction", f'(scalar "pow" {red("norm:3.0", cat(0, "{a}", "{b}"), [0, 1], 0)} "2.0")',
     "(rsum " + cons(_SQ.format(x="{a}", p="2.0"), _SQ.format(x="{b}", p="2.0")) + ")", {"a": [3, 4], "b": [1, 4]}, ()),
    ("reduction", red("logsumexp", cat(1, "{a}", "{b}"), [1], 0),
     "(rsum " + cons(red("logsumexp", "{a}", [1], 0), red("logsumexp", "{b}", [1], 0)) + ")", {"a": [3, 2], "b": [3, 5]}, ()),
    # ... nor, over a dim the parts do not split, a combination over parts at all
    ("reduction", red("logsumexp", cat(0, "{a}", "{b}"), [1], 0),
     "(rlse " + cons(red("logsumexp", "{a}", [1], 0), red("logsumexp", "{b}", [1], 0)) + ")", {"a": [3, 2], "b": [1, 2]}, ()),
    # a second write at the same id's rows replaces the first: no sum
    ("indexing", _put(_put(_ZEROS([4, 3]), 1, "{x}"), 1, "{y}"),
     f'(rsum (Cons {_put(_ZEROS([4, 3]), 1, "{x}")} (Cons {_put(_ZEROS([4, 3]), 1, "{y}")} (Nil))))',
     {"v": ([4], "int64"), "x": [1, 3], "y": [1, 3]}, ()),
    # ... nor at 2-D ids' nonzero (its rows index by both coordinates: they repeat and overlap)
    ("indexing", _put(_put(_ZEROS([4, 3]), 0, "{x}"), 1, "{y}"),
     f'(rsum (Cons {_put(_ZEROS([4, 3]), 0, "{x}")} (Cons {_put(_ZEROS([4, 3]), 1, "{y}")} (Nil))))',
     {"v": ([2, 2], "int64"), "x": [1, 3], "y": [1, 3]}, ()),
    # a bias that grows rank 0's part by broadcasting is not taken out of the sum
    ("collective", "(rsum " + cons('(binary "add" {x} {b})', "{y}") + ")", '(binary "add" (rsum ' + cons("{x}", "{y}") + ") {b})",
     {"x": [1, 4], "y": [2, 4], "b": [2, 4]}, ()),
    # tables of two widths added broadcast: no sum
    ("indexing", '(binary "add" (scatter {a} {i} 6) (scatter {b} {j} 6))',
     "(rsum (Cons (scatter {a} {i} 6) (Cons (scatter {b} {j} 6) (Nil))))",
     {"a": [2, 3], "b": [1, 1], "i": ([2], "int64"), "j": ([1], "int64")}, ()),
    # a read at the rows just written sees the write
    ("indexing", f'(take {_put("{g}", 0, "{y}")} (nonzero (iscalar "eq" {{v}} 0)))', '(take {g} (nonzero (iscalar "eq" {v} 0)))',
     {"v": ([4], "int64"), "g": [4, 3], "y": [1, 3]}, ()),
    # ... not in a row-sharded one (each part would be looked up at ids of the whole)
    ("indexing", f"(take {cat(0, '{a}', '{b}')} {{i}})", cat(0, "(take {a} {i})", "(take {b} {i})"),
     {"a": [2, 3], "b": [2, 3], "i": ([2], "int64")}, ()),
    # ... not of an int sum (int, where the scaled rows are float)
    ("reduction", f'(scalar "div" {red("sum", "{a}", [0], 0)} "2.0")', red("sum", '(scalar "div" {a} "2.0")', [0], 0),
     {"a": ([4, 3], "int64")}, ()),
    # a transposed block keeps its rows where the transpose does not move them
    ("movement", f"(transpose (slice (rsum {cons('{x}', '{y}')}) 0 (DLit 1) (DLit 3)) 0 1)",
     f"(slice (rsum {cons('(transpose {x} 0 1)', '(transpose {y} 0 1)')}) 0 (DLit 1) (DLit 3))",
     {"x": [4, 4], "y": [4, 4]}, ()),
    # a loss gradient's ignore index is dropped only when targets are assumed classes, and only a negative one
    ("indexing", "(tplace {v} {t} -100 5)", "(place {v} {t} 5)", {"v": [4], "t": ([4], "int64")}, ()),
    ("indexing", "(tplace {v} {t} 1 5)", "(place {v} {t} 5)", {"v": [4], "t": ([4], "int64")}, ("valid_indices",)),
    # ... nor the count of a float16 loss's targets (it rounds: 2049 counts 2048)
    ("indexing", '(binary "div" {g} (tcount {L} {t} -100 "4.0"))', '(scalar "div" {g} "4.0")',
     {"g": ([4], "float16"), "L": ([4, 5], "float16"), "t": ([4], "int64")}, ("valid_indices", "no_ignored_targets")),
    # the mask of other columns than the placement's width
    ("indexing", _MPLACE.format(lo=3, hi=6, w=2), "(mplace {v} {t} 3 2)", {"v": [4], "t": ([4], "int64")}, ()),
    # the sum of an integer placement is int64, not the values
    ("indexing", red("sum", "(place {v} {t} 5)", [1], 0), "{v}", {"v": ([4], "int32"), "t": ([4], "int64")}, ()),
    # a row factor of another shape than the sums is not divided by them
    ("reduction", '(binary "mul" ' + _SOFTMAX.format(k=1, s=dlist([4, 1])) + f" (view {{c}} {dlist([4, 1])}))",
     _SOFTMAX_MUL, {"x": [4, 5], "c": [2, 2]}, ()),
    # padded blocks with a gap between them, or broadcasting along another dim, are no concat
    ("movement", '(binary "add" (zpad {b} 1 4 0) (zpad {a} 1 0 3))', "(zpad " + cat(1, "{a}", "{b}") + " 1 0 0)",
     {"a": [4, 3], "b": [4, 2]}, ()),
    ("movement", '(binary "add" (zpad {b} 1 3 0) (zpad {a} 1 0 2))', "(zpad " + cat(1, "{a}", "{b}") + " 1 0 0)",
     {"a": [1, 3], "b": [4, 2]}, ()),
    # ... one row missing, or the slices out of order, are not m
    ("movement", '(binary "add" (binary "add" (zpad (slice {m} 0 (DLit 0) (DLit 1)) 0 0 3) '
     '(zpad (slice {m} 0 (DLit 3) (DLit 4)) 0 3 0)) (zpad (slice {m} 0 (DLit 1) (DLit 2)) 0 1 2))', "{m}",
     {"m": [4, 3]}, ()),
    ("movement", cat(0, "(slice {a} 0 (DLit 2) (DLit 4))", "(slice {a} 0 (DLit 0) (DLit 2))"),
     "(slice {a} 0 (DLit 0) (DLit 4))", {"a": [5, 2]}, ()),
    # a divisor with a dim (it broadcasts along the expand) does not
    ("movement", f'(binary "div" (expand {{g}} {dlist([8])}) {{c}})', f'(expand (binary "div" {{g}} {{c}}) {dlist([8])})',
     {"g": [], "c": [1]}, ()),
    # a pad along the concat axis does not pad every part
    ("movement", f"(zpad {cat(0, '{a}', '{b}')} 0 1 0)", cat(0, "(zpad {a} 0 1 0)", "(zpad {b} 0 1 0)"),
     {"a": [1, 2], "b": [2, 2]}, ()),
    # a slice of a zero-padded tensor reaching one row into the padding is not a slice of it
    ("movement", "(slice (zpad {a} 0 4 0) 0 (DLit 3) (DLit 8))", "(slice {a} 0 (DLit -1) (DLit 4))", {"a": [4, 2]}, ()),
    # elementwise: where over concats whose parts do not line up, or a mask that varies along the
    # concat axis, is not the concat of the parts' wheres; a where of a sum over ranks is not a sum
    ("elementwise", f'(where {cat(0, "{v0}", "{v1}")} {cat(0, "{l0}", "{l1}")} {{z}})',
     cat(0, "(where {v0} {l0} {z})", "(where {v1} {l1} {z})"), {"v0": [2], "v1": [3], "l0": [3], "l1": [2], "z": []}, ()),
    ("elementwise", f'(where {{m}} {cat(0, "{l0}", "{l1}")} {{z}})',
     cat(0, "(where {m} {l0} {z})", "(where {m} {l1} {z})"), {"m": [5], "l0": [2], "l1": [3], "z": []}, ()),
    ("elementwise", f'(where {{m}} (rsum {cons("{a}", "{b}")}) {{f}})',
     "(rsum " + cons("(where {m} {a} {f})", "(where {m} {b} {f})") + ")", {"m": [2, 3], "a": [2, 3], "b": [2, 3], "f": []}, ()),
    # arith: 0.1 * 0.1 is not a float exactly, so x / 0.1 / 0.1 is not folded
    ("arith", '(scalar "div" (scalar "div" {a} "0.1") "0.1")', '(scalar "div" {a} "0.010000000000000002")',
     {"a": [3]}, ()),
    # reduction: a sum over a size-1 dim of ints changes the dtype (int32 -> int64), over a wider dim
    # it adds: neither is the operand; an expand that broadcasts is not x
    ("reduction", red("sum", "{x}", [1], 1), "{x}", {"x": ([2, 1, 3], "int32")}, ()),
    ("reduction", red("sum", "{x}", [1], 1), "{x}", {"x": [2, 2, 3]}, ()),
    ("movement", "(expand {x} (DCons (DLit 2) (DCons (DLit 4) (DCons (DLit 3) (DNil)))))", "{x}", {"x": [2, 1, 3]}, ()),
    # movement: a slice straddling two parts is not a slice of the first
    ("movement", f"(slice {cat(0, '{a}', '{b}')} 0 (DLit 3) (DLit 5))", "(slice {a} 0 (DLit 3) (DLit 5))",
     {"a": [4, 2], "b": [3, 2]}, ()),
    # a view merging the concat axis with the dim before it does not keep the concat
    ("movement", f"(view {cat(1, '{a}', '{b}')} {dlist([6, 2])})",
     cat(0, f"(view {{a}} {dlist([2, 2])})", f"(view {{b}} {dlist([4, 2])})"),
     {"a": [2, 1, 2], "b": [2, 2, 2]}, ()),
    # an expand broadcasting a size-1 concat axis does not expand the parts alike
    ("movement", f"(expand {cat(0, '{a}', '{b}')} {dlist([3, 4])})",
     cat(0, f"(expand {{a}} {dlist([0, 4])})", f"(expand {{b}} {dlist([3, 4])})"), {"a": [0, 1], "b": [1, 1]}, ()),
    # ... not when the inner parts do not line up along e
    ("movement", cat(1, cat(0, "{a}", "{b}"), cat(0, "{c}", "{e}")),
     cat(0, cat(1, "{a}", "{c}"), cat(1, "{b}", "{e}")), {"a": [2, 1], "b": [3, 1], "c": [3, 2], "e": [2, 2]}, ()),
    # linalg: row parallel with parts that do not line up is not a sum of the parts' products
    ("linalg", f"(mm {cat(1, '{x0}', '{x1}')} {cat(0, '{w0}', '{w1}')})",
     f"(rsum {cons('(mm {x0} {w0})', '(mm {x1} {w1})')})",
     {"x0": [2, 3], "x1": [2, 2], "w0": [2, 4], "w1": [3, 4]}, ()),
    # ... nor a batched one
    ("linalg", f"(bmm {cat(2, '{x0}', '{x1}')} {cat(1, '{w0}', '{w1}')})",
     f"(rsum {cons('(bmm {x0} {w0})', '(bmm {x1} {w1})')})",
     {"x0": [2, 4, 3], "x1": [2, 4, 2], "w0": [2, 2, 5], "w1": [2, 3, 5]}, ()),
    # elementwise: a binary op of concats along different axes is not a concat of the parts' op
    ("elementwise", f'(binary "add" {cat(0, "{a}", "{b}")} {cat(1, "{c}", "{e}")})',
     cat(0, '(binary "add" {a} {c})', '(binary "add" {b} {e})'),
     {"a": [2, 4], "b": [2, 4], "c": [4, 2], "e": [4, 2]}, ()),
    # two sums over different numbers of ranks added are not a sum over ranks of adds
    ("elementwise", f'(binary "add" (rsum {cons("{a}", "{b}")}) (rsum {cons("{c}")}))',
     "(rsum " + cons('(binary "add" {a} {c})', '(binary "add" {b} {c})') + ")",
     {"a": [2, 3], "b": [2, 3], "c": [2, 3]}, ()),
    # reduction: softmax over the concat dim is not a concat of softmaxes
    ("reduction", f"(softmax {cat(0, '{a}', '{b}')} 0)", cat(0, "(softmax {a} 0)", "(softmax {b} 0)"),
     {"a": [2, 3], "b": [1, 3]}, ()),
    # top-k along the concat dim is not a concat of the parts' top-k
    ("reduction", f'(rowwise "topk:1:1:1:0" {cat(1, "{a}", "{b}")})',
     cat(1, '(rowwise "topk:1:1:1:0" {a})', '(rowwise "topk:1:1:1:0" {b})'), {"a": [2, 3], "b": [2, 1]}, ()),
    # a mean over the concat dim is not the rsum of the parts' means
    ("reduction", red("mean", cat(0, "{a}", "{b}"), [0], 0),
     f"(rsum {cons(red('mean', '{a}', [0], 0), red('mean', '{b}', [0], 0))})",
     {"a": [2, 3], "b": [1, 3]}, ()),
    # a view that merges dims 1 and 2 is not a merge of dims 0 and 1
    ("reduction", red("sum", f"(view {{x}} {dlist([2, 12])})", [0], 1),
     f"(view {red('sum', '{x}', [0, 1], 1)} {dlist([1, 12])})", {"x": [2, 3, 4]}, ()),
    # ... not without the assumption (inf * (1 - 0.5) is not inf * 1 - inf * 0.5)
    ("elementwise", f'(binary "mul" (rsum {cons("{a}", "{b}")}) {{y}})',
     "(rsum " + cons('(binary "mul" {a} {y})', '(binary "mul" {b} {y})') + ")", {"a": [2, 3], "b": [2, 3], "y": [3]}, ()),
    # ... and not the sum of one negated part and the other
    ("elementwise", f'(unary "neg" (rsum {cons("{a}", "{b}")}))', "(rsum " + cons('(unary "neg" {a})', "{b}") + ")",
     {"a": [2, 3], "b": [2, 3]}, ()),
    # collective: a sum over two ranks holding the same value is not that value
    ("collective", f"(rsum {cons('{a}', '{a}')})", "{a}", {"a": [2, 3]}, ()),
    # ... and not the sum of the other chunk
    ("collective", "(slice (rsum " + cons(cat(0, "(slice {u0} 1 (DLit 0) (DLit 2))", "(slice {u0} 1 (DLit 2) (DLit 4))"),
                                          cat(0, "(slice {u1} 1 (DLit 0) (DLit 2))", "(slice {u1} 1 (DLit 2) (DLit 4))"))
     + ") 0 (DLit 2) (DLit 4))",
     "(rsum " + cons("(slice {u0} 1 (DLit 0) (DLit 2))", "(slice {u1} 1 (DLit 0) (DLit 2))") + ")",
     {"u0": [2, 4, 3], "u1": [2, 4, 3]}, ()),
    # indexing: a plain lookup is not the masked one unless ids are assumed valid
    ("indexing", f"(take {cat(0, '{w0}', '{w1}')} {{ids}})", f"(rsum {cons('(mtake {w0} {ids} 0)', '(mtake {w1} {ids} 3)')})",
     {"w0": [3, 4], "w1": [2, 4], "ids": [5]}, ()),
    # a masked lookup in a table split by columns is not a sum of lookups
    ("indexing", f"(mtake {cat(1, '{w0}', '{w1}')} {{ids}} 0)", f"(rsum {cons('(mtake {w0} {ids} 0)', '(mtake {w1} {ids} 3)')})",
     {"w0": [3, 4], "w1": [3, 2], "ids": [5]}, ()),
    # the scatter is not the masked one unless ids are assumed valid
    ("indexing", "(scatter {g} {ids} 5)", "(mscatter {g} {ids} 0 5)", {"g": [2, 3, 4], "ids": [2, 3]}, ()),
    # a mask of another range is not the rank's block
    ("indexing", _MSCATTER.format(lo=3, hi=6, n=2), "(mscatter {g} {ids} 3 2)", {"g": [2, 3, 4], "ids": [2, 3]}, ()),
    # positions: a gap between two runs is not one run
    ("positions", cat(0, "(arange 0 1 (DLit 3))", "(arange 4 1 (DLit 3))"), "(arange 0 1 (DLit 6))", {}, ()),
    # elementwise: int operands keep the scaling outside a product (a * b may wrap before the division) ...
    ("elementwise", '(scalar "div" (binary "mul" {a} {b}) "2.0")', '(binary "mul" (scalar "div" {a} "2.0") {b})',
     {"a": ([3], "int64"), "b": ([3], "int64")}, ()),
    # ... and mixed precision too (a float16 a / c may overflow where the float32 product does not)
    ("elementwise", '(scalar "div" (binary "mul" {a} {b}) "0.001")', '(binary "mul" (scalar "div" {a} "0.001") {b})',
     {"a": ([3], "float16"), "b": ([3], "float32")}, ()),
    # ... and out of a sum (not linear in its first operand)
    ("elementwise", '(scalar "div" (binary "add" {a} {b}) "2.0")', '(binary "add" (scalar "div" {a} "2.0") {b})',
     {"a": [3], "b": [3]}, ()),
    # a sum over the list divided by a tensor is not split unless the divisor is assumed non-zero
    ("elementwise", f'(binary "div" (rsum {cons("{a}", "{b}")}) {{n}})',
     "(rsum " + cons('(binary "div" {a} {n})', '(binary "div" {b} {n})') + ")", {"a": [], "b": [], "n": []}, ()),
    # a view of a sum without keepdim is its keepdim form only with the 1 at the reduced dim
    ("reduction", f'(view (unary "log" {red("sum", cat(1, "{a}", "{b}"), [1], 0)}) {dlist([1, 4])})',
     f'(view (unary "log" (rsum {cons(red("sum", "{a}", [1], 1), red("sum", "{b}", [1], 1))})) {dlist([1, 4])})',
     {"a": [4, 2], "b": [4, 3]}, ()),
    # foreign targets filled with a class (0), not the ignore index: every rank picks its class 0
    ("indexing", '(tpick {L} ' + _LOCAL.format(fill=0) + ' -100)', "(mpick {L} {t} 4)",
     {"L": [3, 4], "t": ([3], "int64")}, ()),
    ("indexing", '(tplace {v} ' + _LOCAL.format(fill=0) + ' -100 4)', "(mplace {v} {t} 4 4)",
     {"v": [3], "t": ([3], "int64")}, ()),
    # a cast to another dtype is kept: to_bool of a float tests for nonzero, to_float16 rounds
    ("elementwise", '(unary "to_bool" {x})', "{x}", {"x": [3]}, ()),
    ("elementwise", '(unary "to_float16" {x})', "{x}", {"x": [3]}, ()),
    # ... but not a float64 sum over the float32 count (a float32 cast of the int64 count rounds)
    ("elementwise", '(binary "div" {x} (unary "to_float32" {y}))', '(binary "div" {x} {y})',
     {"x": ([], "float64"), "y": ([], "int64")}, ()),
    # an int accumulator at 0.0 is not dropped (int + 0.0 is a float tensor)
    ("elementwise", '(scalar "add" {a} "0.0")', "{a}", {"a": ([3], "int64")}, ()),
    # linalg: no product of int matrices scaled on one side
    ("linalg", '(scalar "div" (mm {a} {b}) "2.0")', '(mm (scalar "div" {a} "2.0") {b})',
     {"a": ([2, 3], "int64"), "b": ([3, 4], "int64")}, ()),
    # movement: an expand is not dropped where the other operand broadcasts too (the result would shrink)
    ("movement", f'(binary "add" (expand {{g}} {dlist([4, 6])}) {{x}})', '(binary "add" {g} {x})',
     {"g": [1, 6], "x": [6]}, ()),
    # elementwise: an operand that varies along the concat axis is not split with it
    ("elementwise", f'(binary "gt" {{k}} {cat(0, "{a}", "{b}")})', cat(0, '(binary "gt" {k} {a})', '(binary "gt" {k} {b})'),
     {"k": [6, 6], "a": [2, 1], "b": [4, 1]}, ()),
    # a loss's ignore index is dropped only when targets are assumed classes, and only a negative one
    ("indexing", "(tpick {L} {t} -100)", "(pick {L} {t})", {"L": [4, 5], "t": [4]}, ()),
    ("indexing", "(tpick {L} {t} 1)", "(pick {L} {t})", {"L": [4, 5], "t": [4]}, ("valid_indices",)),
    # ... nor, a negative one, on valid ids alone: labels padded with the ignore index (-100) are ids
    # no table is indexed with, and a mean over them divides by the unpadded count (no_ignored_targets)
    ("indexing", "(tpick {L} {t} -100)", "(pick {L} {t})", {"L": [4, 5], "t": [4]}, ("valid_indices",)),
    ("indexing", "(tplace {v} {t} -100 5)", "(place {v} {t} 5)", {"v": [4], "t": ([4], "int64")}, ("valid_indices",)),
    ("indexing", '(binary "div" {g} (tcount {L} {t} -100 "4.0"))', '(scalar "div" {g} "4.0")',
     {"g": [4], "L": [4, 5], "t": ([4], "int64")}, ("valid_indices",)),
    # ... nor, assumed, on targets the program computes: labels it pads with -100 itself (the
    # assumption is the user's about the inputs; the fill breaks given)
    ("indexing", '(tpick {L} (binary "masked_fill:-100" {t} {m}) -100)', '(pick {L} (binary "masked_fill:-100" {t} {m}))',
     {"L": [4, 5], "t": ([4], "int64"), "m": ([4], "bool")}, ("valid_indices", "no_ignored_targets")),
    ("indexing", '(tplace {v} (binary "masked_fill:-100" {t} {m}) -100 5)', '(place {v} (binary "masked_fill:-100" {t} {m}) 5)',
     {"v": [4], "t": ([4], "int64"), "m": ([4], "bool")}, ("valid_indices", "no_ignored_targets")),
    ("indexing", '(binary "div" {g} (tcount {L} (binary "masked_fill:-100" {t} {m}) -100 "4.0"))', '(scalar "div" {g} "4.0")',
     {"g": [4], "L": [4, 5], "t": ([4], "int64"), "m": ([4], "bool")}, ("valid_indices", "no_ignored_targets")),
    # a masked pick at offset 0 (rank 0's vocabulary shard) is not a plain pick, even assuming valid ids
    ("indexing", "(mpick {L} {t} 0)", "(pick {L} {t})", {"L": [4, 5], "t": [4]}, ("valid_indices",)),
    # the log-sum-exp broadcast along a leading dim of the picked tensor does not come out
    ("indexing", f'(pick (binary "sub" {{a}} (view {{y}} {dlist([4, 1])})) {{t}})', '(binary "sub" (pick {a} {t}) {y})',
     {"a": [1, 5], "y": [4], "t": [4]}, ()),
    # linalg: batch parts that do not line up (1 + 3 heads against 2 + 2) are not paired
    ("linalg", f"(bmm {cat(0, '{a}', '{b}')} {cat(0, '{c}', '{e}')})", cat(0, "(matmul {a} {c})", "(matmul {b} {e})"),
     {"a": [1, 3, 2], "b": [3, 3, 2], "c": [2, 2, 3], "e": [2, 2, 3]}, ()),
    # ... nor is a product of 2-D views viewed back with its dims the other way round
    ("linalg", f"(view (mm (view {{a}} {dlist([2, 2])}) (view {{c}} {dlist([2, 2])})) {dlist([1, 2, 2])})",
     "(transpose (matmul {a} {c}) 1 2)", {"a": [1, 2, 2], "c": [1, 2, 2]}, ()),
    ("linalg", f"(view (mm (view {{a}} {dlist([3, 2])}) (view {{c}} {dlist([2, 4])})) {dlist([1, 4, 3])})",
     "(view (matmul {a} {c}) " + dlist([1, 4, 3]) + ")", {"a": [1, 3, 2], "c": [1, 2, 4]}, ()),
    # movement: a 3-cycle applied twice is not undone
    ("movement", f"(permute (permute {{x}} {ilist([2, 0, 1])}) {ilist([2, 0, 1])})", "{x}", {"x": [4, 2, 3]}, ()),
    # ... nor a slice moved to a dim the transpose does not put it on
    ("movement", "(transpose (slice (rsum " + cons("{x}", "{y}") + ") 0 (DLit 0) (DLit 1)) 0 2)",
     "(slice (transpose (rsum " + cons("{x}", "{y}") + ") 0 2) 0 (DLit 0) (DLit 1))", {"x": [2, 2, 2], "y": [2, 2, 2]}, ()),
    # a constant of another dtype or value than the ranks' blocks of it is not split into them
    ("elementwise", f'(binary "add" {cat(0, "{a}", "{b}")} {_ZEROS([4, 3], "0.1")})',
     cat(0, '(binary "add" {a} (cst "0.1" ' + dlist([2, 3]) + ' "float16"))',
         '(binary "add" {b} (cst "0.1" ' + dlist([2, 3]) + ' "float16"))'), {"a": [2, 3], "b": [2, 3]}, ()),
    ("elementwise", f'(binary "add" {cat(0, "{a}", "{b}")} {_ZEROS([4, 3], "0.1")})',
     cat(0, f'(binary "add" {{a}} {_ZEROS([1, 3], "0.1")})', f'(binary "add" {{b}} {_ZEROS([3, 3], "0.1")})'),
     {"a": [2, 3], "b": [2, 3]}, ()),
    # ... nor padding moved by a 3-cycle to the wrong dim
    ("movement", f"(permute (zpad {{g}} 0 2 0) {ilist([1, 2, 0])})", f"(zpad (permute {{g}} {ilist([1, 2, 0])}) 0 2 0)",
     {"g": [2, 2, 2]}, ()),
    # blocks of ones, or of -0.0, beside x are no zero padding
    ("movement", cat(0, "{a}", _ZEROS([2, 3], "1.0")), "(zpad {a} 0 0 2)", {"a": [2, 3]}, ()),
    ("movement", cat(0, _ZEROS([2, 3], "-0.0"), "{a}"), "(zpad {a} 0 2 0)", {"a": [2, 3]}, ()),
    # positions: masks of the ranks' positions with a gap between them are not the whole mask
    ("positions", cat(0, '(iscalar "gt" (slice (arange 0 1 (DLit 6)) 0 (DLit 0) (DLit 3)) 2)',
                      '(iscalar "gt" (slice (arange 0 1 (DLit 7)) 0 (DLit 4) (DLit 7)) 2)'),
     '(iscalar "gt" (arange 0 1 (DLit 6)) 2)', {}, ()),
    # the mean of two ranks' mean losses over 1 and 3 rows is not the mean loss over the 4 rows
    ("reduction", f'(scalar "div" (rsum {cons(_XENT_MEAN.format(L="{a}", t="{s}", n="1.0"), _XENT_MEAN.format(L="{b}", t="{u}", n="3.0"))}) "2.0")',
     f"(rsum {cons(_XENT_PART.format(L='{a}', t='{s}'), _XENT_PART.format(L='{b}', t='{u}'))})",
     {"a": [1, 5], "b": [3, 5], "s": ([1], "int64"), "u": ([3], "int64")}, ("valid_indices",)),
    # ... nor, with equal counts, when the ranks' ignore index (0) may be a target
    ("reduction", f'(scalar "div" (rsum {cons(_XENT_MEAN.format(L="{a}", t="{s}", n="2.0").replace("-100", "0"), _XENT_MEAN.format(L="{b}", t="{u}", n="2.0").replace("-100", "0"))}) "2.0")',
     f"(rsum {cons(_XENT_PART.format(L='{a}', t='{s}'), _XENT_PART.format(L='{b}', t='{u}'))})",
     {"a": [2, 5], "b": [2, 5], "s": ([2], "int64"), "u": ([2], "int64")}, ("valid_indices",)),
    # 1 - float(not x) is float(x) only for a bool x, and a cast commutes with a max over ranks only of bools
    ("elementwise", '(scalar "rsub" (unary "to_float32" (unary "logical_not" {a})) "1.0")', '(unary "to_float32" {a})',
     {"a": [3]}, ()),
    ("reduction", f'(unary "to_float16" (rmax {cons("{a}", "{b}")}))',
     "(rmax " + cons('(unary "to_float16" {a})', '(unary "to_float16" {b})') + ")", {"a": [3], "b": [3]}, ()),
    # the min of a float mask over an empty dim (+inf) is not all's cast (1), nor is a min of floats
    ("reduction", _AMIN.format(x="{a}"), f'(unary "to_float32" {_ALL.format(x="{a}")})', {"a": ([4, 0], "bool")}, ()),
    ("reduction", _AMIN.format(x="{a}"), f'(unary "to_float32" {_ALL.format(x="{a}")})', {"a": ([4, 2], "float32")}, ()),
    # not(max over ranks) is the min of the nots only over bools (not max(-1, 0) is 1, min(not -1, not 0) 0)
    ("reduction", f'(unary "to_float32" (unary "logical_not" (rmax {cons("{a}", "{b}")})))',
     '(unary "neg" (rmax ' + cons(_NEG_NOT.format(x="{a}"), _NEG_NOT.format(x="{b}")) + '))',
     {"a": [4], "b": [4]}, ()),
    # a count past 256 is not exact in bfloat16: its cast is not the bfloat16 sum of the mask
    ("reduction", '(unary "to_bfloat16" (reduce "sum" (unary "to_int64" {m}) (ICons 0 (INil)) 0))',
     '(reduce "sum" (unary "to_bfloat16" {m}) (ICons 0 (INil)) 0)', {"m": ([257], "bool")}, ()),
    # ... not without the assumption, nor with the shift along another dim than the picked one
    ("reduction", _PICK_LSM.format(k=1), '(binary "sub" (pick {x} {t}) (unary "log" (reduce "sum" (unary "exp" {x}) (ICons 1 (INil)) 0)))',
     {"x": [4, 5], "t": ([4], "int64")}, ()),
    ("reduction", _PICK_LSM.format(k=0), '(binary "sub" (pick {x} {t}) (unary "log" (reduce "sum" (unary "exp" {x}) (ICons 0 (INil)) 0)))',
     {"x": [4, 4], "t": ([4], "int64")}, ("no_exp_overflow",)),
    # ... nor the scaled softmax without the assumption
    ("reduction", _SOFTMAX_MUL, _SOFTMAX_MUL_RAW, {"x": [4, 5], "c": [4]}, ()),
    # zeros padded are not the zeros of another shape; -0.0 padded with +0.0 is not a -0.0 constant
    ("movement", f"(zpad {_ZEROS([2, 3])} 0 1 2)", _ZEROS([4, 3]), {}, ()),
    ("movement", f'(zpad {_ZEROS([2, 3], "-0.0")} 0 1 0)', _ZEROS([3, 3], "-0.0"), {}, ()),
    # a part of ones, or zeros of -0.0, does not drop out of a sum over ranks
    ("collective", f'(rsum {cons("{a}", _ZEROS([2, 3], "1.0"))})', "{a}", {"a": [2, 3]}, ()),
    ("collective", f'(rsum {cons("{a}", _ZEROS([2, 3], "-0.0"))})', "{a}", {"a": [2, 3]}, ()),
    # nor out of a sum over more ranks (a pair only)
    ("collective", f"(rsum {cons('{a}', _ZEROS([2, 3]), '{b}')})", f"(rsum {cons('{a}', '{b}')})",
     {"a": [2, 3], "b": [2, 3]}, ()),
    # zeros that broadcast x to a larger shape, or promote its dtype, are no identity
    ("elementwise", f'(binary "add" {{a}} {_ZEROS([2, 3])})', "{a}", {"a": [3]}, ()),
    ("elementwise", f'(binary "add" {{a}} {_ZEROS([2, 3])})', "{a}", {"a": [1, 3]}, ()),
    ("elementwise", f'(binary "add" {{a}} {_ZEROS([2, 3])})', "{a}", {"a": ([2, 3], "float16")}, ()),
    ("elementwise", f'(binary "add" {{a}} {_ZEROS([2, 3], "0.5")})', "{a}", {"a": [2, 3]}, ()),
]


def _id(case):
    return f"{case[0]}:{case[1][:60]}"


@pytest.mark.parametrize("family,start,goal,shapes,assume", POSITIVE, ids=[_id(c) for c in POSITIVE])
def test_reaches_goal(family, start, goal, shapes, assume):
    reached, _ = proves(start, goal, shapes, assume)
    assert reached, f"{family}: {start} does not reach {goal}"


@pytest.mark.parametrize("family,start,goal,shapes,assume", NEGATIVE, ids=[_id(c) for c in NEGATIVE])
def test_does_not_reach_goal(family, start, goal, shapes, assume):
    reached, saturated = proves(start, goal, shapes, assume)
    assert saturated, f"{family}: {start} did not saturate in {STEPS} steps"
    assert not reached, f"{family}: {start} reaches {goal}, which it must not"


def test_every_lemma_family_has_goals():
    families = {lem.family for lem in LIB.lemmas}
    assert families <= {c[0] for c in POSITIVE} and families <= {c[0] for c in NEGATIVE}


def test_concat_interchange_where_a_rank_concatenates_the_pair():
    """concat along d of two concats along e is the concat along e of the pairs' concats along d,
    derived only where a pair's concat is in the e-graph (a rank computed it: RoPE's rotate-half
    cat under context parallelism); without it the interchange is not made."""
    shapes = {"a": [2, 1], "b": [3, 1], "c": [2, 2], "e": [3, 2]}
    start = cat(1, cat(0, "{a}", "{b}"), cat(0, "{c}", "{e}"))
    goal = cat(0, cat(1, "{a}", "{c}"), cat(1, "{b}", "{e}"))
    reached, _ = proves(start, goal, shapes, present=(cat(1, "{a}", "{c}"),))
    assert reached
    reached, saturated = proves(start, goal, shapes)
    assert saturated and not reached


def test_concat_interchange_with_a_constant_split_at_the_rows():
    """Labels shifted and padded with a constant column (-100) along dim 1, of row-sharded ids:
    the constant splits at the rows' parts, and the concat is the ranks' padded rows -- only where
    a rank padded its rows (its pair's concat is in the e-graph)."""
    shapes = {"a": ([2, 3], "int64"), "b": ([1, 3], "int64")}
    pad = lambda n: f'(cst "-100" {dlist([n, 1])} "int64")'
    start = cat(1, cat(0, "{a}", "{b}"), pad(3))
    goal = cat(0, cat(1, "{a}", pad(2)), cat(1, "{b}", pad(1)))
    reached, _ = proves(start, goal, shapes, present=(cat(1, "{a}", pad(2)),))
    assert reached
    reached, saturated = proves(start, goal, shapes)
    assert saturated and not reached


def test_masked_scatter_splits_where_a_rank_block_ends():
    """The rows of a masked scatter split at the blocks the ranks computed (the vocab-parallel
    embedding's table gradient), three blocks nesting in the head; without them no split."""
    shapes = {"g": [2, 3, 4], "ids": [2, 3]}
    blocks = ("(mscatter {g} {ids} 0 2)", "(mscatter {g} {ids} 2 3)", "(mscatter {g} {ids} 5 2)")
    reached, _ = proves("(mscatter {g} {ids} 0 7)", cat(0, *blocks), shapes, present=blocks)
    assert reached
    reached, saturated = proves("(mscatter {g} {ids} 0 7)", cat(0, *blocks), shapes)
    assert saturated and not reached


def test_masked_placement_splits_where_a_rank_block_ends():
    """The columns of a loss gradient's masked placement split at the blocks the ranks computed
    (the vocab-parallel cross-entropy's gradient), three blocks nesting in the head; without them
    no split."""
    shapes = {"v": [2, 3], "t": ([2, 3], "int64")}
    blocks = ("(mplace {v} {t} 0 2)", "(mplace {v} {t} 2 3)", "(mplace {v} {t} 5 2)")
    reached, _ = proves("(mplace {v} {t} 0 7)", cat(2, *blocks), shapes, present=blocks)
    assert reached
    reached, saturated = proves("(mplace {v} {t} 0 7)", cat(2, *blocks), shapes)
    assert saturated and not reached


def test_a_tail_the_egraph_holds_as_a_concat_is_grouped():
    """Parts after the first that a rank computed as a concat of their own are grouped; without
    that concat in the e-graph they are left flat."""
    shapes = {"a": [1, 2], "b": [2, 2], "c": [3, 2]}
    start, goal = cat(0, "{a}", "{b}", "{c}"), cat(0, "{a}", cat(0, "{b}", "{c}"))
    reached, _ = proves(start, goal, shapes, present=(cat(0, "{b}", "{c}"),))
    assert reached
    reached, saturated = proves(start, goal, shapes)
    assert saturated and not reached


def test_padded_table_gradient_splits_into_rank_blocks():
    """A table gradient with padding_idx 0 (a zero row, then rows [1, 7)) is the concat of the
    ranks' blocks when rank 0 has the padding row beside its rows [1, 3) and rank 1 has rows
    [3, 7): the split, the last part flattened and the head grouped as rank 0's block.  Without
    rank 0's block in the e-graph, no grouping."""
    shapes = {"g": [2, 3, 4], "ids": [2, 3]}
    row = '(cst "0.0" (DCons (DLit 1) (DCons (DLit 4) (DNil))) "float32")'
    r0, r1 = cat(0, row, "(mscatter {g} {ids} 1 2)"), "(mscatter {g} {ids} 3 4)"
    start = cat(0, row, "(mscatter {g} {ids} 1 6)")
    reached, _ = proves(start, cat(0, r0, r1), shapes, present=(r0, r1))
    assert reached
    reached, saturated = proves(start, cat(0, r0, r1), shapes, present=(r1,))
    assert saturated and not reached


def test_concat_is_a_sum_of_padded_parts_where_a_rank_padded_one():
    """A concat is the sum over ranks of its parts zero-padded to the whole (slice_backward of a
    weight each rank slices its rows of), derived only where the first part's padded form is in
    the e-graph; without it the concat is left alone."""
    shapes = {"a": [2, 3], "b": [3, 3], "c": [1, 3]}
    start = cat(0, "{a}", "{b}", "{c}")
    goal = f"(rsum {cons('(zpad {a} 0 0 4)', '(zpad {b} 0 2 1)', '(zpad {c} 0 5 0)')})"
    reached, _ = proves(start, goal, shapes, present=("(zpad {a} 0 0 4)",))
    assert reached
    reached, saturated = proves(start, goal, shapes)
    assert saturated and not reached
def test_pad_of_a_sum_over_ranks_where_a_rank_padded_its_part():
    """A pad of a sum over ranks is the sum of the ranks' pads (the gradient of a strided slice of
    the ranks' summed gradients), derived only where the first part's pad is in the e-graph."""
    shapes = {"a": [3, 6], "b": [3, 6]}
    start = f"(zpad (rsum {cons('{a}', '{b}')}) 1 0 1)"
    goal = f"(rsum {cons('(zpad {a} 1 0 1)', '(zpad {b} 1 0 1)')})"
    reached, _ = proves(start, goal, shapes, present=("(zpad {a} 1 0 1)",))
    assert reached
    reached, saturated = proves(start, goal, shapes)
    assert saturated and not reached


def test_add_commutes_where_both_orders_are_present():
    """A receiver sums two gradients in its receive order, autograd in its own (add-comm); not
    made where only one order is present."""
    shapes = {"a": [2, 3], "b": [3]}
    reached, _ = proves('(binary "add" {a} {b})', '(binary "add" {b} {a})', shapes,
                        present=('(binary "add" {b} {a})',))
    assert reached
    reached, _ = proves('(binary "add" {a} {b})', '(binary "add" {b} {a})', shapes)
    assert not reached


@pytest.mark.parametrize("rank", [0, 1])
def test_a_term_one_rank_adds_to_its_part_is_added_to_the_sum(rank):
    """A bias (a duplicate parameter's squared norm) added by one rank only, zeros_like (or nothing)
    on the other, before the all-reduce: the sequential sum over ranks plus the bias is the sum of
    the ranks' parts (add-rsum-part, add-zeros-*); not where y grows the part by broadcasting."""
    shapes = {"x": [2, 4], "y": [2, 4], "b": [1, 4], "w": [1, 4]}
    parts = ['(binary "add" {x} {b})', '(binary "add" {y} ' + _ZEROS([1, 4]) + ")"]
    seq = '(binary "add" (rsum ' + cons("{x}", "{y}") + ") {b})"
    ranks = "(rsum " + cons(*(parts if rank == 0 else parts[::-1])) + ")"
    seq = seq if rank == 0 else '(binary "add" (rsum ' + cons("{y}", "{x}") + ") {b})"
    reached, _ = proves(ranks, seq, shapes, present=(seq,))
    assert reached
    grown = '(binary "add" (rsum ' + cons("{w}", "{w}") + ") {x})"     # w [1, 4] + x [2, 4] grows w
    reached, saturated = proves("(rsum " + cons('(binary "add" {w} {x})', "{w}") + ")", grown, shapes, present=(grown,))
    assert saturated and not reached


@pytest.mark.parametrize("bounds", [[0, 5, 6, 9], [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32]])
def test_slices_tiling_a_tensor_are_its_flat_concat(bounds):
    """Sequence parallelism: the ranks' slices of one tensor (uneven, or 16 ranks) tile it: it is
    their one flat concat (slice-tile); slices with a gap, or one short of the end, do not."""
    shapes = {"x": [bounds[-1], 3]}
    parts = [f"(slice {{x}} 0 (DLit {a}) (DLit {b}))" for a, b in zip(bounds, bounds[1:])]
    reached, _ = proves("{x}", cat(0, *parts), shapes, present=parts)
    assert reached
    for missing in (parts[1:2], parts[-1:]):
        some = [p for p in parts if p not in missing]
        reached, _ = proves("{x}", cat(0, *some), shapes, present=some)
        assert not reached


def test_rank_positions_tile_the_sequence():
    """Context parallelism: rank r's query positions arange(s) + r * s, next to the sequential
    arange(S), are slices of it that tile it (arange-inside, slice-tile, slice-full); only
    between aranges in the e-graph."""
    whole = "(arange 0 1 (DLit 6))"
    parts = ("(arange 0 1 (DLit 3))", '(iscalar "add" (arange 0 1 (DLit 3)) 3)')
    reached, _ = proves(whole, cat(0, *parts), {}, present=parts)
    assert reached
    reached, _ = proves(whole, cat(0, "(arange 0 1 (DLit 3))", "(arange 4 1 (DLit 3))"), {},
                        present=("(arange 0 1 (DLit 3))", "(arange 4 1 (DLit 3))"))
    assert not reached


def test_reduce_scatter_blocks_tile_the_sum():
    """DTensor's Shard(1) reduce-scatter: the ranks' sums of their dim-1 chunks, beside the sum
    over ranks of the whole tensors, tile that sum along dim 1 (slice-rsum-fold, slice-tile)."""
    shapes = {"u0": [2, 4, 3], "u1": [2, 4, 3]}
    blocks = ["(rsum " + cons(f"(slice {{u0}} 1 (DLit {a}) (DLit {b}))", f"(slice {{u1}} 1 (DLit {a}) (DLit {b}))") + ")"
              for a, b in ((0, 2), (2, 4))]
    reached, _ = proves("(rsum " + cons("{u0}", "{u1}") + ")", cat(1, *blocks), shapes, present=blocks)
    assert reached
    reached, _ = proves("(rsum " + cons("{u0}", "{u1}") + ")", cat(1, *blocks[::-1]), shapes, present=blocks)
    assert not reached


def test_expand_split_beside_a_smaller_expand():
    """Multi-query attention: the one KV head (a size-1 dim) expanded over 4 query heads is the
    concat of 2 copies of it expanded over 2 (each rank's heads), derived only beside that
    expand (a rank computed it)."""
    shapes = {"k": [3, 1, 5]}
    whole, half = f"(expand {{k}} {dlist([3, 4, 5])})", f"(expand {{k}} {dlist([3, 2, 5])})"
    reached, _ = proves(whole, cat(1, half, half), shapes, present=(half,))
    assert reached
    reached, saturated = proves(whole, cat(1, half, half), shapes)
    assert saturated and not reached
    # ... into as many copies as the sizes say, not more
    reached, saturated = proves(whole, cat(1, half, half, half), shapes, present=(half,))
    assert saturated and not reached


def test_expand_split_along_a_new_dim_beside_a_smaller_expand():
    """A mean loss's gradient: one scalar expanded over 7 targets is the concat of its expands
    over a rank's 4 and the other's 3 (uneven batches), derived only beside the expand over 4."""
    shapes = {"g": []}
    whole, four, three = (f"(expand {{g}} {dlist([k])})" for k in (7, 4, 3))
    reached, _ = proves(whole, cat(0, four, three), shapes, present=(four,))
    assert reached
    reached, saturated = proves(whole, cat(0, four, three), shapes)
    assert saturated and not reached
    # ... and the pieces are the sizes the expands say
    reached, saturated = proves(whole, cat(0, four, four), shapes, present=(four,))
    assert saturated and not reached


def test_transposes_of_a_view_dropping_a_size_one_dim_saturate():
    """A 3-D weight of one expert ([1, 5, 4]) viewed 2-D, transposed and transposed back (the
    backward of an expert-parallel MoE): the view drops the size-1 dim, and the transpose of it is
    the view of one transpose of the weight.  Read as a merge of the size-1 dim with either
    neighbour too, the transposes back would nest transposes of the weight without end."""
    for x, moved in (([1, 5, 4], "(transpose {x} 1 2)"), ([5, 4, 1], "(transpose {x} 0 1)"),
                     ([5, 1, 4], "(transpose (transpose {x} 1 2) 0 1)")):
        t = f"(transpose (view {{x}} {dlist([5, 4])}) 0 1)"
        reached, saturated = proves(t, f"(view {moved} {dlist([4, 5])})", {"x": x},
                                    present=(f"(transpose {t} 0 1)",))
        assert reached and saturated, x


def test_a_comparison_of_a_concat_splits_where_a_rank_compares_its_part():
    """An integer comparison of a concat (targets sharded over ranks against an ignore index) is the
    concat of the parts' comparisons, where rank 0's is in the e-graph; without it no split."""
    shapes = {"s": ([3], "int64"), "u": ([1], "int64")}
    start, goal = f'(iscalar "ne" {cat(0, "{s}", "{u}")} 0)', cat(0, '(iscalar "ne" {s} 0)', '(iscalar "ne" {u} 0)')
    reached, _ = proves(start, goal, shapes, present=('(iscalar "ne" {s} 0)',))
    assert reached
    reached, saturated = proves(start, goal, shapes)
    assert saturated and not reached


def test_a_loss_mean_with_an_ignore_index_is_the_ranks_sums_over_their_counts():
    """Data-parallel cross-entropy with an ignore index (0) that may occur: the mean over the batch
    is the sum over ranks of their loss sums over the sum over ranks of their counts (t != 0).sum()
    -- the ranks' counts being in the e-graph (they compute them)."""
    shapes = {"a": [3, 5], "b": [1, 5], "s": ([3], "int64"), "u": ([1], "int64")}
    counts = (_COUNT0.format(t="{s}"), _COUNT0.format(t="{u}"))
    start = _XENT_MEAN.format(L=cat(0, "{a}", "{b}"), t=cat(0, "{s}", "{u}"), n="4.0").replace("-100", "0")
    goal = (f'(binary "div" (rsum {cons(_LOSS0.format(L="{a}", t="{s}"), _LOSS0.format(L="{b}", t="{u}"))}) '
            f'(rsum {cons(*counts)}))')
    reached, _ = proves(start, goal, shapes, present=counts)
    assert reached


def test_a_mask_of_positions_split_at_the_ranks_saturates():
    """A comparison of positions splits at the ranks' blocks (iscalar-concat) and saturates: the
    ranks' shifted positions (add, arange-add) are not split in turn (their splits made positions
    at ever larger offsets); a mask of a wrong threshold is not reached."""
    ar = lambda a, n: f"(arange {a} 1 (DLit {n}))"
    present = (f'(iscalar "gt" {ar(0, 3)} 2)', f'(iscalar "gt" (iscalar "add" {ar(0, 3)} 3) 2)')
    start = f'(iscalar "gt" {ar(0, 6)} 2)'
    reached, saturated = proves(start, cat(0, *present), {}, present=present)
    assert reached and saturated
    wrong = (present[0], f'(iscalar "gt" (iscalar "add" {ar(0, 3)} 3) 3)')
    reached, saturated = proves(start, cat(0, *wrong), {}, present=wrong)
    assert saturated and not reached


def test_loss_gradient_splits_along_row_sharded_targets():
    """A sum loss's target gradient (its scalar gradient expanded over the 8 rows, placed at the
    targets) of row-sharded targets is the concat of the ranks' placements, each expanding over its
    own 4 rows -- only beside a rank's expand (expand-split-absent), and only where the parts' rows
    line up (targets of 3 + 5 rows are not split as 4 + 4)."""
    def place(g_rows, t):
        return f'(tplace (unary "neg" (expand {{g}} {dlist([g_rows])})) {t} 0 5)'
    shapes = {"g": [], "s": ([4], "int64"), "u": ([4], "int64")}
    start = place(8, cat(0, "{s}", "{u}"))
    goal = cat(0, place(4, "{s}"), place(4, "{u}"))
    reached, _ = proves(start, goal, shapes, present=(f"(expand {{g}} {dlist([4])})",))
    assert reached
    reached, saturated = proves(start, goal, shapes)
    assert saturated and not reached
    shapes = {"g": [], "s": ([3], "int64"), "u": ([5], "int64")}
    reached, saturated = proves(start, cat(0, place(3, "{s}"), place(5, "{u}")), shapes,
                                present=(f"(expand {{g}} {dlist([4])})",))
    assert saturated and not reached


def test_zero_blocks_around_rows_are_padding_and_saturate():
    """A rank's rows between zero blocks (cat of new_zeros, x, new_zeros) are x zero-padded; rows
    followed by zeros alone (F.pad on the right) are so beside x's padded form (concat-zpad-rsum,
    zpad-zeros, rsum-zero-second), and saturate: that concat is then a sum over ranks of its own
    class and zeros, whose add spread over its parts folds back (add-zeros-*), and whose
    accumulation makes no one-rank sum (add-rsum-accumulate-pair) for add-rsum-rsum to zip with
    the pair: without those the e-graph grew without end."""
    shapes = {"a": [4, 2]}
    reached, saturated = proves(cat(1, _ZEROS([4, 1]), "{a}", _ZEROS([4, 0])), "(zpad {a} 1 1 0)", shapes)
    assert reached and saturated
    start = cat(1, "{a}", _ZEROS([4, 1]))
    reached, saturated = proves(start, "(zpad {a} 1 0 1)", shapes, present=("(zpad {a} 1 0 1)",))
    assert saturated and reached


def test_topk_gradient_of_a_shared_tangent_is_the_ranks_sum():
    """topk's backward (one placement per column of its indices) of a tangent every rank holds a
    share of (the ranks' top-k of gathered logits, each computing its own placements at the same
    indices) is the sum over ranks of their placements (slice-rsum-part, view-rsum, place-rsum);
    only beside a rank's placement of its own share."""
    shapes = {"t0": [4, 2], "t1": [4, 2], "i": ([4, 2], "int64")}

    def place(t, j):
        col = f"(slice {t} 1 (DLit {j}) (DLit {j + 1}))"
        idx = f"(slice {{i}} 1 (DLit {j}) (DLit {j + 1}))"
        return f"(place (view {col} {dlist([4])}) (view {idx} {dlist([4])}) 5)"
    start = place("(rsum " + cons("{t0}", "{t1}") + ")", 1)
    ranks = (place("{t0}", 1), place("{t1}", 1))
    reached, _ = proves(start, "(rsum " + cons(*ranks) + ")", shapes, present=ranks)
    assert reached
    reached, saturated = proves(start, "(rsum " + cons(*ranks) + ")", shapes)
    assert saturated and not reached
    # ... the ranks' placements of another column are not it
    other = (place("{t0}", 0), place("{t1}", 0))
    reached, saturated = proves(start, "(rsum " + cons(*other) + ")", shapes, present=other)
    assert saturated and not reached


def test_a_tensor_added_to_a_sum_over_ranks_is_shared_where_a_rank_divides_it():
    """DTensor's row-parallel bias: each rank adds y / 2 to its partial sum before the all-reduce,
    so sum_r a_r + y is the sum over the 2 ranks of a_r + y / 2 (add-rsum-shared); only where
    y / 2 is in the e-graph, a divisor equal to the number of ranks, and a floating y."""
    shapes = {"a": [2, 3], "b": [2, 3], "y": [3]}
    start = f'(binary "add" (rsum {cons("{a}", "{b}")}) {{y}})'

    def goal(c):
        return "(rsum " + cons(f'(binary "add" {{a}} (scalar "div" {{y}} "{c}"))',
                               f'(binary "add" {{b}} (scalar "div" {{y}} "{c}"))') + ")"
    reached, _ = proves(start, goal("2.0"), shapes, present=('(scalar "div" {y} "2.0")',))
    assert reached
    # W * b: a bias added undivided on every rank is not the sequential sum plus b
    reached, saturated = proves(start, '(rsum ' + cons('(binary "add" {a} {y})', '(binary "add" {b} {y})') + ")", shapes,
                                present=('(binary "add" {a} {y})',))
    assert saturated and not reached
    # a divisor other than the number of ranks, and no divided y at all
    reached, saturated = proves(start, goal("4.0"), shapes, present=('(scalar "div" {y} "4.0")',))
    assert saturated and not reached
    reached, saturated = proves(start, goal("2.0"), shapes)
    assert saturated and not reached
    # integers: y / 2 is a float tensor, and the sum of the ranks' halves is another dtype
    ints = {k: (v, "int64") for k, v in shapes.items()}
    reached, saturated = proves(start, goal("2.0"), ints, present=('(scalar "div" {y} "2.0")',))
    assert saturated and not reached


def _add(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = f'(binary "add" {out} {x})'
    return out


def test_reverse_accumulation_of_rank_parts_is_the_sum_over_ranks():
    """Hugging Face's MoE backward: the sequential program accumulates the experts' routing-weight
    gradients in reverse, ((p3 + p2) + p1) + p0; rank 1 holds R1 = p3 + p2, rank 0 R0 = p1 + p0,
    peers (one node on neighbouring ranks).  The sum is the sum over ranks R0 + R1; not without the
    peer facts, and not where the last part is another (p1 twice)."""
    shapes = {k: [8, 2] for k in ("p0", "p1", "p2", "p3", "R0", "R1")}
    facts = ('(union {R0} (binary "add" {p1} {p0}))', '(union {R1} (binary "add" {p3} {p2}))')
    peers = ("(peer {R0} {R1})", "(peer {p1} {p3})", "(peer {p0} {p2})")
    start, goal = _add("{p3}", "{p2}", "{p1}", "{p0}"), f"(rsum {cons('{R0}', '{R1}')})"
    reached, _ = proves(start, goal, shapes, facts=facts + peers)
    assert reached
    reached, saturated = proves(start, goal, shapes, facts=facts)
    assert saturated and not reached
    reached, saturated = proves(_add("{p3}", "{p2}", "{p1}", "{p1}"), goal, shapes, facts=facts + peers)
    assert saturated and not reached


def test_reverse_accumulation_over_four_ranks_is_the_sum_over_ranks():
    """One expert on each of four ranks: ((p3 + p2) + p1) + p0 is the sum over ranks in rank order
    where each p_r is the peer of p_(r+1); a missing link (p1, p2 not peers) stops it, and bools
    (added as an or) are never summed over ranks."""
    shapes = {f"p{i}": [8, 2] for i in range(4)}
    peers = ("(peer {p0} {p1})", "(peer {p1} {p2})", "(peer {p2} {p3})")
    start, goal = _add("{p3}", "{p2}", "{p1}", "{p0}"), f"(rsum {cons('{p0}', '{p1}', '{p2}', '{p3}')})"
    reached, _ = proves(start, goal, shapes, facts=peers)
    assert reached
    reached, saturated = proves(start, goal, shapes, facts=(peers[0], peers[2]))
    assert saturated and not reached
    bools = {k: ([8, 2], "bool") for k in shapes}
    reached, saturated = proves(start, goal, bools, facts=peers)
    assert saturated and not reached


def test_rank_parts_of_two_experts_each_over_four_ranks():
    """Two experts on each of four ranks: the sequential (((((((p7 + p6) + p5) + p4) + p3) + p2) +
    p1) + p0) regroups into the ranks' pair sums (R_r = p_(2r+1) + p_(2r), peers) summed in rank
    order."""
    shapes = {**{f"p{i}": [3] for i in range(8)}, **{f"R{i}": [3] for i in range(4)}}
    facts = tuple(f'(union {{R{r}}} (binary "add" {{p{2 * r + 1}}} {{p{2 * r}}}))' for r in range(4))
    peers = tuple(f"(peer {{R{r}}} {{R{r + 1}}})" for r in range(3)) + \
        tuple(f"(peer {{p{i}}} {{p{i + 2}}})" for i in range(6))
    start = _add(*(f"{{p{i}}}" for i in reversed(range(8))))
    goal = f"(rsum {cons(*(f'{{R{r}}}' for r in range(4)))})"
    reached, _ = proves(start, goal, shapes, facts=facts + peers)
    assert reached


def test_a_partial_sum_plus_a_bias_is_not_regrouped_over_another_ranks_output():
    """A missing all-reduce (examples/mlp.py): the sequential (y1 + y0) + bias, where rank 0 computes
    out0 = y0 + bias and rank 1 out1 = y1 + bias (peers).  y1 is not out0's peer, so the add is not
    regrouped as y1 + out0 (one add cheaper than the sum over ranks plus the bias, it became the
    failure's best term), and it is not a sum over ranks of the outputs; where x is the peer of
    a + b, it is (add-assoc-peer), and so where x is a sum over ranks that starts at it
    (add-assoc-peer-rsum)."""
    shapes = {k: [4, 3] for k in ("y0", "y1", "out0", "out1", "x", "w", "v")}
    shapes["bias"] = [3]
    facts = ('(union {out0} (binary "add" {y0} {bias}))', '(union {out1} (binary "add" {y1} {bias}))',
             "(peer {y0} {y1})", "(peer {out0} {out1})")
    start = _add("{y1}", "{y0}", "{bias}")
    for goal in ('(binary "add" {y1} {out0})', f"(rsum {cons('{out0}', '{out1}')})"):
        reached, saturated = proves(start, goal, shapes, facts=facts)
        assert saturated and not reached, goal
    both = {**shapes, "bias": [4, 3]}
    reached, _ = proves(_add("{x}", "{y0}", "{bias}"), '(binary "add" {x} {out0})', both,
                        facts=facts + ("(peer {out0} {x})",))
    assert reached
    rsum = f"(rsum {cons('{w}', '{v}')})"
    reached, _ = proves(_add(rsum, "{y0}", "{bias}"), f"(rsum {cons('{out0}', '{w}', '{v}')})", both,
                        facts=facts + ("(peer {out0} {w})", "(peer {w} {v})"))
    assert reached


def test_sum_of_three_scalars_regroups_with_a_part_one_rank_holds():
    """A sum over three 0-D parts -- two sums over ranks and a replicated c (the squared norms of a
    stack of per-tensor norms) -- is the ranks' sum (in the e-graph: the all-reduce) of rank 0's
    three parts (it counts c) and rank 1's two (rsum-fold-first, add-rsum-rsum, add-rsum-part); not
    where every rank counts c."""
    shapes = {n: [] for n in ("a0", "a1", "b0", "b1", "c")}
    start = "(rsum " + cons("(rsum " + cons("{a0}", "{a1}") + ")", "(rsum " + cons("{b0}", "{b1}") + ")", "{c}") + ")"
    ranks = ("(rsum " + cons("{a0}", "{b0}", "{c}") + ")", "(rsum " + cons("{a1}", "{b1}") + ")")
    allreduce = "(rsum " + cons(*ranks) + ")"
    reached, saturated = proves(start, allreduce, shapes, present=(allreduce,))
    assert reached and saturated
    twice = ("(rsum " + cons("{a0}", "{b0}", "{c}") + ")", "(rsum " + cons("{a1}", "{b1}", "{c}") + ")")
    allreduce = "(rsum " + cons(*twice) + ")"
    reached, saturated = proves(start, allreduce, shapes, present=(allreduce,))
    assert saturated and not reached
