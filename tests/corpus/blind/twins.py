"""One buggy twin from its correct program, for every blind corpus's ``derive_buggy.py``: the line
of ``<name>_correct.py`` that holds ``old`` (exactly, stripped; or containing it, ``contains``)
replaced by ``new`` at its indent, written to ``<name>_buggy.py``.  Keeping the twin derived keeps
it one line away from the correct program."""
from __future__ import annotations

from pathlib import Path


def write_twin(here: Path, name: str, old: str, new: str, contains: bool = False, mark: str = "") -> Path:
    src = (here / f"{name}_correct.py").read_text().splitlines(keepends=True)
    hits = [i for i, line in enumerate(src) if (old in line if contains else line.strip() == old)]
    if len(hits) != 1:
        raise SystemExit(f"{name}: {old!r} is on {len(hits)} lines of the correct program, not one")
    i = hits[0]
    indent = src[i][: len(src[i]) - len(src[i].lstrip())]
    src[i] = f"{indent}{new}{mark}\n"
    out = here / f"{name}_buggy.py"
    out.write_text("".join(src))
    return out

