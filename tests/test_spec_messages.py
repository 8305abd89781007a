"""A misspelt placement is answered in placements, with a guess (issue 27 item 7)."""
import pytest

from entangle_py.check import spec as S


@pytest.mark.parametrize("text, guess", [("shrad(0)", "shard(0)"), ("shard(O)", "shard(0)"),
                                         ("replicated", "replicate"), ("parital", "partial"),
                                         ("shard(1), replicat", "shard(1), replicate")])
def test_a_misspelt_placement_gets_a_guess(text, guess):
    with pytest.raises(S.SpecError) as err:
        S.parse_spec({"inputs": {"x": text}})
    msg = str(err.value)
    assert f"{text!r} is not a placement (did you mean {guess!r}?)" in msg
    assert "shard(D), replicate, partial, partial(max) or partial(avg)" in msg


@pytest.mark.parametrize("text", ["bogus", "partial(mean)", "shard(x)"])
def test_no_guess_where_none_is_close(text):
    with pytest.raises(S.SpecError) as err:
        S.parse_spec({"inputs": {"x": text}})
    assert f"{text!r} is not a placement:" in str(err.value)


def test_placements_and_terms_still_parse():
    sp = S.parse_spec({"inputs": {"a": "shard(0)", "b": "replicate", "c": "partial(max)",
                                  "d": "concat(r0.d, r1.d, dim=0)", "e": "partial(avg)", "f": "mean(r0.f, r1.f)"}})
    assert str(sp.inputs["a"]) == "shard(0)" and sp.inputs["d"].term is not None
    # the mean over ranks: a placement (DTensor's Partial("avg")) and a term
    assert str(sp.inputs["e"]) == "partial(avg)" and sp.inputs["f"].term.op == "mean"
