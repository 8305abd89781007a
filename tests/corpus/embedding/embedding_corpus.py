"""The masked vocab-parallel lookups: correct / wrong twins at 2 and 4 ranks (uneven blocks at
both), labels confirmed on gloo (``tests/test_embedding_corpus.py``)."""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "programs"))
from corpus import Entry, builders  # noqa: E402  (the program corpus's entry)

TARGETS = builders(HERE)

BUGS = {"off_by_one": ">= at the inclusive end", "unzeroed": "not zeroed (index_put form)", "wrong_offset": "even split"}

_BUG_TEXT = {("clamp_mul", "unzeroed"): "kept (times one)"}
# form -> its spec: DTensor's index_put form, torchtitan's clamp-and-multiply form
FORMS = {"masked": "masked.toml", "clamp_mul": "clamp_mul.toml"}

CORPUS = [Entry(f"{form}_{kind}", TARGETS[f"{form}_{kind}"], str(HERE / spec),
                "buggy" if kind in BUGS else "correct", "forward", ws,
                ("_masked.py", _BUG_TEXT.get((form, kind), BUGS.get(kind))) if kind in BUGS else None)
          for form, spec in FORMS.items() for ws in (2, 4) for kind in ("correct", *BUGS)]
