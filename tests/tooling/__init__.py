"""Test tooling, kept out of the installed package: mutants of G_d (``mutate.py``) and the
lowering's conformance with torch on OpInfo samples (``conformance.py``).  Tests import it as
``tooling`` (pytest puts ``tests/`` on sys.path); benchmarks add ``tests/`` to sys.path."""
