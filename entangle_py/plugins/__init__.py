"""Custom ops of the frameworks users run, one file per namespace (``ir.ops.PLUGIN_NAMESPACES``).

A plugin gives a custom op its meaning as a *reference implementation in plain torch*.  Before a
check, ``frontend/decompose.py`` traces the reference on the node's argument shapes and splices
the ATen graph in place of the node, so lowering, lemmas and the numeric oracle only ever see
ATen ops (and a failure still points at the custom op's source line).  An op with data-dependent
control flow (Megatron's sinkhorn) is ``pure``: it stays one node, related by congruence only (the
same op on related inputs), and the oracle runs its reference.  Each reference is tested against
an independent implementation in tests/test_plugins.py.
"""
from entangle_py.plugins._registry import REGISTRY, PluginOp, custom_op  # noqa: F401
import entangle_py.plugins.megatron  # noqa: F401,E402  (registration)
import entangle_py.plugins.vllm  # noqa: F401,E402

PURE = frozenset(t for t, op in REGISTRY.items() if op.pure)
