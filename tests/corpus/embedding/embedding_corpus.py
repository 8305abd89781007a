"""The masked vocab-parallel lookups: correct / wrong twins at 2 and 4 ranks (uneven blocks at
both), labels confirmed on gloo (``tests/test_embedding_corpus.py``)."""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "programs"))
from corpus import Entry  # noqa: E402  (the program corpus's entry)

BUGS = {"off_by_one": ">= at the inclusive end", "unzeroed": "not zeroed", "wrong_offset": "even split"}

CORPUS = [Entry(f"masked_{kind}", str(HERE / f"masked_{kind}.py"), str(HERE / "masked.toml"),
                "buggy" if kind in BUGS else "correct", "forward", ws,
                ("_masked.py", BUGS[kind]) if kind in BUGS else None)
          for ws in (2, 4) for kind in ("correct", *BUGS)]
