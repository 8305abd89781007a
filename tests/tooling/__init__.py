"""Test tooling, kept out of the installed package: mutants of G_d (``mutate.py``), their labels on
random draws (``mutant_labels.py``), a check in a memory-capped child process
(``isolated_check.py``), and the lowering's conformance with torch on OpInfo samples
(``conformance.py``).  Tests import it as ``tooling`` (pytest puts ``tests/`` on sys.path);
benchmarks add ``tests/`` to sys.path."""
