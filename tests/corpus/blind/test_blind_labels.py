"""Every blind-corpus label is what real gloo ranks compute (opt-in: ``pytest -m corpus``; about
20 minutes on 2 cores).  The checker's verdicts are not asserted here."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from manifest import ENTRIES  # noqa: E402
from blind_gloo import assert_label_confirmed  # noqa: E402

CASES = [(e, m) for e in ENTRIES for m in e["modes"]]


@pytest.mark.gloo
@pytest.mark.parametrize("entry,mode", CASES, ids=[f"{e['name']}-{m}" for e, m in CASES])
def test_label_confirmed_on_gloo(entry, mode):
    assert_label_confirmed(entry, mode)
