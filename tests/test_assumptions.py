"""No assumption is on unless the user writes it (``[assume] name = true`` or ``--assume name``),
and every one written is printed with the verdict, with where the check may have rested on it."""
from __future__ import annotations

import json

import pytest
from conftest import run_entangle, shipped_example

from entangle_py.check import spec as S
from entangle_py.check.checker import Checker
from entangle_py.config import ASSUMPTIONS
from entangle_py.lemmas import load_library
from entangle_py.ir import graph as G


def test_no_assumption_is_on_unless_written():
    """A new default assumption -- in the spec's defaults, its parser, or the checker's engine --
    fails here."""
    assert S.Spec().assume == ()
    assert S.parse_spec({}).assume == ()
    assert S.parse_spec({"assume": {}}).assume == ()
    assert S.parse_spec({"assume": {a: False for a in ASSUMPTIONS}}).assume == ()
    for a in ASSUMPTIONS:
        assert S.parse_spec({"assume": {a: True}}).assume == (a,)
    seq, dist, _ = shipped_example("vocab_embedding_tp2")
    ck = Checker(G.load(seq), G.load(dist), S.Spec())
    res = ck.run()
    assert ck.engine.assume == ()
    assert res.assumptions == [] and res.assumption_uses == {}
    # an engine without assumptions holds no lemma that rests on one
    lib = load_library()
    assuming = [lem for lem in lib.lemmas if lem.assumes]
    assert assuming and not any(lem.egglog(lem.ruleset) in lib.egglog(()) for lem in assuming)


def test_every_assumption_says_what_it_covers():
    for name, meaning in ASSUMPTIONS.items():
        assert len(meaning.split()) >= 12, name


def test_an_unknown_assumption_is_refused():
    with pytest.raises(S.SpecError, match="not an assumption the checker knows"):
        S.parse_spec({"assume": {"always_right": True}})
    with pytest.raises(S.SpecError, match="not an assumption the checker knows"):
        S.parse_spec({"assume": {"always_right": False}})
    seq, dist, spec = shipped_example("vocab_embedding_tp2")
    r = run_entangle("check", seq, dist, "--spec", spec, "--assume", "always_right")
    assert r.returncode == 2 and "--assume 'always_right' is not an assumption" in r.stderr


def test_assume_on_the_command_line_is_the_spec_entry(tmp_path):
    """``--assume valid_indices`` checks and prints as ``[assume] valid_indices = true`` does, with
    where the check rested on it (the lookup whose lemma needs it)."""
    seq, dist, spec = shipped_example("vocab_embedding_tp2")
    without = tmp_path / "spec.toml"
    text = open(spec).read()
    assert "valid_indices = true" in text
    without.write_text(text.replace("valid_indices = true", ""))
    reports = {}
    for name, args in (("written", ["--spec", spec]), ("flag", ["--spec", str(without), "--assume", "valid_indices"]),
                       ("none", ["--spec", str(without)])):
        out = tmp_path / f"{name}.json"
        r = run_entangle("check", seq, dist, *args, "--json", out, "--no-numeric")
        reports[name] = (r, json.loads(out.read_text()))
    (r1, j1), (r2, j2), (r3, j3) = reports["written"], reports["flag"], reports["none"]
    assert r1.returncode == r2.returncode == 0 and r3.returncode == 1
    assert j1["assumptions"] == j2["assumptions"] and [a["name"] for a in j1["assumptions"]] == ["valid_indices"]
    assert j3["assumptions"] == []
    used = j2["assumptions"][0]["used"]
    assert used and all("lemma" in u for u in used) and any("embedding" in u or "vocab" in u for u in used), used
    assert "assuming valid_indices" in r2.stdout and "  used relating" in r2.stdout


def test_a_written_assumption_no_step_used_is_printed_as_such():
    seq, dist, spec = shipped_example("mlp_tp2")
    r = run_entangle("check", seq, dist, "--spec", spec, "--assume", "nonzero_divisors", "--no-numeric")
    assert r.returncode == 0
    assert "assuming nonzero_divisors" in r.stdout and "not used by this check" in r.stdout
