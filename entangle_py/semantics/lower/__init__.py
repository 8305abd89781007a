"""Lowering: the meaning of each graph op as a term of the engine's language.

Both programs are lowered by the same table, so a G_s op and the G_d op that computes the same
thing become the same term (congruence).  An op either

- is an identity for the relation (``wait_tensor``, ``clone``, ``copy(dst, src)``, ...),
- becomes a term (``aten.mm`` -> ``(mm a b)``; ``aten.addmm`` -> ``(binary "add" (mm a b) bias)``),
- is a collective (handled by ``infer``: it needs the peers' tensors),
- is a pure op without lemmas: an ``opaque`` term keyed by the op and its constant arguments,
- or has no semantics here: ``NoSemantics`` (the checker refuses the graph, it never guesses).

One module per op class, each a mixin of ``Lowerer`` whose methods ``@lowers`` registers:
``pointwise``, ``reduction``, ``normalization``, ``loss``, ``contraction``, ``movement``,
``indexing``, ``constants`` and ``communication``; ``core`` holds the registry, the results and
the text of terms.
"""
from __future__ import annotations

from entangle_py import plugins
from entangle_py.ir import ops
from entangle_py.semantics import opcall
from entangle_py.ir.op_classes import OPS
from entangle_py.semantics.lower.communication import CommunicationLowering, PointToPoint, point_to_point  # noqa: F401
from entangle_py.semantics.lower.constants import ConstantLowering
from entangle_py.semantics.lower.contraction import ContractionLowering
from entangle_py.semantics.lower.core import (  # noqa: F401  (the lowering's public names)
    CONST_PORT_PREFIX, DRAW, FLOAT_DTYPES, INT_DTYPES, LOWERINGS, OPAQUE_PURE, UNREAD_ARGS, Collective, CountedSize,
    Decomposed, Draw, Free, Identity, LowererBase, NoSemantics, NotTensor, Refused, Term, TupleTerms, bind_result,
    counted, dim_term, draw_key, draw_meta, draws_in, fill_text, int_list, lowers, naming_aliases, permute_text, ref,
    rows_node, rows_symbol, scalar_lit, shape_list, supported, term_list, transpose_text)
from entangle_py.semantics.lower.indexing import IndexingLowering
from entangle_py.semantics.lower.loss import LossLowering
from entangle_py.semantics.lower.movement import MovementLowering
from entangle_py.semantics.lower.normalization import NormalizationLowering
from entangle_py.semantics.lower.pointwise import SCALAR_FORM, PointwiseLowering
from entangle_py.semantics.lower.reduction import ReductionLowering


class Lowerer(PointwiseLowering, ReductionLowering, NormalizationLowering, LossLowering, ContractionLowering,
              MovementLowering, IndexingLowering, ConstantLowering, CommunicationLowering, LowererBase):
    """Lower the nodes of one rank graph to values: terms over ``(ref "<node>")`` leaves."""


# the table-driven ops: one handler for each table
lowers(*sorted(ops.IDENTITY_OPS - {ops.LIFT_FRESH_COPY}))(Lowerer._identity)
lowers(*sorted(ops.ALLOCATIONS))(Lowerer._allocation)
lowers(*SCALAR_FORM)(Lowerer._binary_op)
# every other op torch calls pointwise: a call of the op (zero lines per op)
lowers(*sorted(t for t in OPS if opcall.pointwise(t) and t not in LOWERINGS))(Lowerer._pointwise)
lowers(*sorted(OPAQUE_PURE - set(LOWERINGS)))(Lowerer._opaque)
# custom ops a plugin leaves whole (data-dependent control flow): congruence only
lowers(*sorted(plugins.PURE))(Lowerer._opaque)
