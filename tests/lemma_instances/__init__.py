"""Concrete instances for the lemma library's property tests (tests/test_lemmas.py, test_backward_ops.py):
generators of torch bindings, one module per lemma family (split by job where a family is large), and
the registry (``registry/``) naming, for each lemma and rule of entangle_py/lemmas/, its generators.
Test tooling only: the installed package never imports this."""
