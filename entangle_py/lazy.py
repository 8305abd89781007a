"""Modules imported on first use.  ``entangle check`` on bundles or FX dumps reads no tensor, so it
does not import torch (1-2 s): torch is needed to evaluate terms (lemma tests, the oracle), to
trace a plugin's reference and to capture, and each of those touches ``torch.<name>`` first."""
from __future__ import annotations

import importlib
import types


class LazyModule(types.ModuleType):
    """Stands for the module ``name``; the first attribute read imports it."""

    def __getattr__(self, attr):
        return getattr(importlib.import_module(self.__name__), attr)


torch = LazyModule("torch")
