"""The e-graph engine: egglog, symbolic sizes decided by Z3, the lemma library."""
