"""Modules imported on first use.  ``entangle check`` on bundles or FX dumps reads no tensor, so it
does not import torch (1-2 s): torch is needed to evaluate terms (lemma tests, the oracle), to
trace a plugin's reference and to capture, and each of those touches ``torch.<name>`` first.  Nor
does a program of static sizes need sympy (0.3 s): only a symbolic size is a sympy expression."""
from __future__ import annotations

import importlib
import sys
import types


class LazyModule(types.ModuleType):
    """Stands for the module ``name``; the first attribute read imports it."""

    def __getattr__(self, attr):
        return getattr(importlib.import_module(self.__name__), attr)


torch = LazyModule("torch")
sympy = LazyModule("sympy")


def is_sympy(x) -> bool:
    """Whether ``x`` is a sympy object, without importing sympy (none is before it is imported)."""
    module = sys.modules.get("sympy")
    return module is not None and isinstance(x, module.Basic)
