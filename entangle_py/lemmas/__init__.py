"""The lemma library, grouped by operator family (one module per family): data for the engine,
built on its ``Lemma`` and ``Rule`` (``engine/lemma.py``).  It sits above the engine, which never
imports it: the checker loads the library here and hands the engine a ``Library``."""
from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Iterable

from entangle_py.config import ASSUMPTIONS
from entangle_py.engine.lemma import Lemma, Library, Rule
from entangle_py.errors import InputError

LEMMA_FAMILIES = ("movement", "elementwise", "linalg", "reduction", "collective", "shapes", "indexing", "arith",
                  "positions")


def _from_module(mod, family: str, lib: Library):
    for lem in getattr(mod, "LEMMAS", []):
        lib.lemmas.append(Lemma(**{**lem.__dict__, "family": family}))
    for rule in getattr(mod, "RULES", []):
        lib.rules.append(Rule(**{**rule.__dict__, "family": family}))


def load_library(extra_files: Iterable[str] = ()) -> Library:
    """The built-in lemma families, plus lemma files given by the user (``--lemmas F.py``)."""
    lib = Library()
    for family in LEMMA_FAMILIES:
        _from_module(importlib.import_module(f"entangle_py.lemmas.{family}"), family, lib)
    from entangle_py.lemmas.collective import mean_twins
    lib.lemmas += mean_twins(lib.lemmas)
    for path in extra_files:
        p = Path(path)
        if not p.is_file():
            raise InputError(f"lemma file {path} does not exist")
        spec = importlib.util.spec_from_file_location(f"entangle_user_lemmas_{p.stem}", p)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)   # the user's own code, given on the command line
        _from_module(mod, p.stem, lib)
    for lem in lib.lemmas:
        unknown = set(lem.assumes) - set(ASSUMPTIONS)
        if unknown:
            raise InputError(f"lemma {lem.name} assumes {sorted(unknown)}, which are not known assumptions "
                             f"({', '.join(sorted(ASSUMPTIONS))})")
    names = [lem.name for lem in lib.lemmas]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise InputError(f"duplicate lemma names: {sorted(dup)}")
    return lib
