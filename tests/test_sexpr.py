"""The s-expression reader terms cross the engine boundary in (entangle_py/semantics/sexpr.py)."""
import pytest

from entangle_py.semantics.sexpr import Var, parse_sexpr, to_sexpr


def test_atoms_strings_and_lists():
    t = parse_sexpr('(a "b\\"c" 1 -2 3.5 1e-05 -0.0 "x\\\\" - +5 2.)')
    assert t == (Var("a"), 'b"c', 1, -2, 3.5, Var("1e-05"), -0.0, "x\\", Var("-"), Var("+5"), 2.0)
    assert parse_sexpr('  (x  (y)\n "(" ")")  ') == (Var("x"), (Var("y"),), "(", ")")
    assert parse_sexpr('"(ref \\"a\\")"') == '(ref "a")'


@pytest.mark.parametrize("text", ['"abc', "(a (b)", "(a))", "", "(a) (b)", '(a "b)'])
def test_malformed_text_is_refused(text):
    with pytest.raises(ValueError):
        parse_sexpr(text)


@pytest.mark.parametrize("text", ['(union (Gd "r0.x") (concat (Cons (Gd "r0.a") (Nil)) 0))',
                                  '(scalar "div" (Gd "r1.\\"q") "2.0")', "(DLit -3)"])
def test_printing_a_parsed_term_gives_its_text_back(text):
    assert to_sexpr(parse_sexpr(text)) == text
